package importer

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"gale/importer/caddyfile"
)

// FromCaddyfile converts the Caddyfile at path.
func FromCaddyfile(path string) (*Result, error) {
	cf, err := caddyfile.ParseFile(path)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	c := &cadConv{dir: filepath.Dir(abs), output: newOutput()}
	c.global(cf.Global)
	for _, s := range cf.Sites {
		c.site(s)
	}
	c.settle()
	return c.result(path, Caddy)
}

type cadConv struct {
	output
	dir   string
	email string
}

func (c *cadConv) note(d *caddyfile.Directive, why string, args ...any) {
	c.addNote(Note{File: d.File, Line: d.Line, Directive: d.Name, Why: fmt.Sprintf(why, args...)})
}

// global reads the global options block.
func (c *cadConv) global(ds []*caddyfile.Directive) {
	for _, d := range ds {
		switch d.Name {
		case "email":
			if len(d.Args) > 0 {
				c.email = d.Args[0]
			}
		default:
			c.note(d, "global option not carried over")
		}
	}
}

// siteAddr is one address of a site block.
type siteAddr struct {
	host string // "" for any
	port string
	tls  bool
}

// parseAddr reads a site address as Caddy does: a scheme sets the port
// (http 80, https 443); a name without either is HTTPS on 443.
func parseAddr(a string) (siteAddr, bool) {
	scheme := ""
	if i := strings.Index(a, "://"); i >= 0 {
		scheme, a = a[:i], a[i+3:]
	}
	if i := strings.IndexByte(a, '/'); i >= 0 {
		return siteAddr{}, false // a path in the address
	}
	host, port := a, ""
	if h, p, err := net.SplitHostPort(a); err == nil {
		host, port = h, p
	}
	if host == "*" {
		host = ""
	}
	s := siteAddr{host: strings.ToLower(host), port: port}
	switch {
	case scheme == "http":
		s.port = s2(port, "80")
	case scheme == "https":
		s.port, s.tls = s2(port, "443"), true
	case scheme != "":
		return siteAddr{}, false
	case port == "" && host != "":
		s.port, s.tls = "443", true
	case port == "443":
		s.tls = true
	}
	return s, s.port != ""
}

// isPublicName reports whether host can get a certificate from an ACME
// CA: a DNS name with a dot, not localhost or an IP address.
func isPublicName(host string) bool {
	return host != "" && strings.Contains(host, ".") && net.ParseIP(host) == nil && !strings.HasSuffix(host, ".localhost") && !strings.HasPrefix(host, "*.")
}

// site converts one site block.
func (c *cadConv) site(s *caddyfile.Site) {
	at := &caddyfile.Directive{Name: "site", File: s.File, Line: s.Line}
	var hosts []string
	var certs []*obj
	tlsOff := false
	for _, d := range s.Directives {
		if d.Name != "tls" {
			continue
		}
		switch {
		case len(d.Args) == 2:
			certs = append(certs, newObj().set("cert", c.abs(d.Args[0])).set("key", c.abs(d.Args[1])))
		case len(d.Args) == 1 && strings.Contains(d.Args[0], "@"):
			c.email = d.Args[0]
		case len(d.Args) == 1 && d.Args[0] == "internal":
			c.note(d, "gale has no internal CA; the site is served over plain HTTP on its port")
			tlsOff = true
		default:
			c.note(d, "only tls CERT KEY and tls EMAIL are carried over")
		}
	}
	var addrs []string
	for _, a := range s.Addresses {
		sa, ok := parseAddr(a)
		if !ok {
			c.note(at, "address %s: gale listens on host:port and routes by host", a)
			continue
		}
		if !contains(hosts, sa.host) {
			hosts = append(hosts, sa.host)
		}
		l := c.listener(":" + sa.port)
		if !contains(addrs, ":"+sa.port) {
			addrs = append(addrs, ":"+sa.port)
		}
		if !sa.tls || tlsOff {
			continue
		}
		tl := l.sub("tls")
		switch {
		case len(certs) > 0:
			list, _ := tl.get("certificates").([]*obj)
			for _, cert := range certs {
				if !containsObj(list, cert) {
					list = append(list, cert)
				}
			}
			tl.set("certificates", list)
			if sa.host != "" && sa.port == "443" {
				c.note(at, "Caddy also redirects http://%s to https; gale redirects for automatic certificates, or on a listener with redirect_to_https", sa.host)
			}
		case isPublicName(sa.host):
			auto := tl.sub("automatic")
			doms, _ := auto.get("domains").([]string)
			if !contains(doms, sa.host) {
				auto.set("domains", append(doms, sa.host))
			}
			if c.email != "" {
				auto.set("email", c.email)
			}
			c.listener(":80")
			if !contains(addrs, ":80") {
				addrs = append(addrs, ":80") // Caddy redirects it to https
			}
		default:
			c.note(at, "address %s: no certificate can be obtained for it (gale has no internal CA); served over plain HTTP", a)
			if len(tl.keys) == 0 {
				l.del("tls")
			}
		}
	}
	if len(hosts) == 0 {
		return
	}
	if contains(hosts, "") {
		c.served = append(c.served, served{Note{File: s.File, Line: s.Line, Directive: "site " + strings.Join(s.Addresses, ", ")}, addrs})
	}
	specs := c.scope(s.Directives, scopeCtx{prefix: "/"})
	for i, h := range hosts {
		saved := len(c.notes)
		c.emit(specs, h)
		if i > 0 {
			c.notes = c.notes[:saved]
		}
	}
}

func (c *cadConv) abs(p string) string {
	if p == "" || filepath.IsAbs(p) || strings.Contains(p, "{") {
		return p
	}
	return filepath.Join(c.dir, p)
}

// cond is what a matcher selects: a path (exact, prefix or regex) and
// the other request matchers gale has.
type cond struct {
	exact, prefix, regex string
	methods              []string
	headers, query       *obj
	remote               []string
}

// plain reports whether the condition is a path prefix alone.
func (m cond) plain() bool {
	return m.exact == "" && m.regex == "" && m.methods == nil && m.headers == nil && m.query == nil && m.remote == nil
}

// pathOnly reports whether the condition is a path (exact or prefix)
// alone.
func (m cond) pathOnly() bool {
	return m.regex == "" && m.methods == nil && m.headers == nil && m.query == nil && m.remote == nil
}

// key identifies the conditions that gale could not order between two
// routes: the same path and the same kinds of matchers.
func (m cond) key() string {
	kinds := 0
	for _, set := range []bool{m.methods != nil, m.headers != nil, m.query != nil, m.remote != nil} {
		if set {
			kinds++
		}
	}
	return fmt.Sprintf("%s|%s|%v|%d", m.exact, m.prefix, m.regex != "", kinds)
}

// containsObj reports whether list holds a certificate with o's files.
func containsObj(list []*obj, o *obj) bool {
	for _, x := range list {
		if x.get("cert") == o.get("cert") && x.get("key") == o.get("key") {
			return true
		}
	}
	return false
}
