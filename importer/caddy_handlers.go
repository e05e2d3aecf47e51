package importer

import (
	"encoding/base64"
	"net"
	"strconv"
	"strings"

	"gale/importer/caddyfile"
)

// split adds, for a middleware whose path prefix lies under a plain
// spec's prefix (basicauth /admin/* over a file_server for /), a copy of
// the spec at that prefix, so that the middleware has a route of its own.
func split(specs []*spec) []*spec {
	out := append([]*spec(nil), specs...)
	have := map[string]bool{}
	for _, s := range specs {
		have[s.m.key()] = true
	}
	for _, s := range specs {
		if !s.m.plain() {
			continue
		}
		for _, mw := range s.mw {
			if !mw.m.pathOnly() || (mw.m.prefix == s.m.prefix && mw.m.exact == "") || !strings.HasPrefix(mw.m.prefix, s.m.prefix) {
				continue
			}
			cp := *s
			cp.m = cond{prefix: mw.m.prefix, exact: mw.m.exact}
			if have[cp.m.key()] {
				continue
			}
			have[cp.m.key()] = true
			out = append(out, &cp)
		}
	}
	return out
}

// middleware applies the middleware that covers the route.
func (c *cadConv) middleware(r *obj, s *spec) {
	for _, mw := range s.mw {
		if !covers(mw.m, s.m) {
			if !mw.m.pathOnly() {
				c.note(mw.d, "a middleware with a matcher other than a path is not carried over")
			}
			continue
		}
		d := mw.d
		args := unmatched(d)
		switch d.Name {
		case "root":
			if len(args) == 1 {
				s.root = c.abs(args[0])
			}
		case "header":
			c.headerRules(r.sub("headers").sub("response"), d, args)
		case "request_header":
			c.headerRules(r.sub("headers").sub("request"), d, args)
		case "basicauth", "basic_auth":
			c.basicAuth(r, d)
		case "rewrite":
			if len(args) == 1 {
				if t, ok := caddyTemplate(args[0]); ok && strings.HasPrefix(t, "/") {
					r.set("rewrite", t)
					c.note(d, "gale does not choose the route again after a rewrite; the request stays on the route it matched")
					continue
				}
			}
			c.note(d, "only rewrite [MATCHER] /path?query with {path} and {query} is carried over")
		case "uri":
			if len(args) == 2 && args[0] == "strip_prefix" {
				s.strip = args[1]
				continue
			}
			c.note(d, "only uri strip_prefix is carried over")
		}
	}
	for _, k := range []string{"request", "response"} {
		if h, ok := r.get("headers").(*obj); ok {
			if x, ok := h.get(k).(*obj); ok && len(x.keys) == 0 {
				h.del(k)
			}
			if len(h.keys) == 0 {
				r.del("headers")
			}
		}
	}
}

// headerRules carries header [MATCHER] [+|-|>]Name [value] and its block.
func (c *cadConv) headerRules(o *obj, d *caddyfile.Directive, args []string) {
	lines := [][]string{}
	if len(args) > 0 {
		lines = append(lines, args)
	}
	for _, b := range d.Block {
		lines = append(lines, append([]string{b.Name}, b.Args...))
	}
	for _, l := range lines {
		name := l[0]
		switch {
		case strings.HasPrefix(name, "-"):
			o.set("remove", append(strs(o.get("remove")), name[1:]))
		case len(l) < 2:
			c.note(d, "%s without a value is not carried over", name)
		case len(l) > 2:
			c.note(d, "%s: replacing within a value is not carried over", name)
		case strings.Contains(l[1], "{"):
			c.note(d, "%s: a value with placeholders is not carried over", name)
		case strings.HasPrefix(name, "+"):
			o.sub("add").set(name[1:], l[1])
		default:
			o.sub("set").set(strings.TrimPrefix(name, ">"), l[1])
		}
	}
}

// basicAuth carries basicauth { user hash }: bcrypt hashes, as Caddy
// writes them or base64-encoded (older Caddyfiles).
func (c *cadConv) basicAuth(r *obj, d *caddyfile.Directive) {
	users := newObj()
	for _, b := range d.Block {
		if len(b.Args) != 1 {
			continue
		}
		h := b.Args[0]
		if !strings.HasPrefix(h, "$2") {
			if dec, err := base64.StdEncoding.DecodeString(h); err == nil && strings.HasPrefix(string(dec), "$2") {
				h = string(dec)
			} else {
				c.note(b, "user %s: gale takes bcrypt hashes only", b.Name)
				continue
			}
		}
		users.set(b.Name, h)
	}
	r.set("basic_auth", newObj().set("realm", "restricted").set("users", users))
}

// handle fills the route's handler from its terminal directive.
func (c *cadConv) handle(r *obj, s *spec) {
	d := s.d
	args := unmatched(d)
	switch d.Name {
	case "respond":
		c.respond(r, d, args)
	case "redir":
		c.redir(r, s, args)
	case "reverse_proxy":
		c.reverseProxy(r, s, args)
	case "php_fastcgi":
		c.php(r, s, args)
	case "file_server":
		c.fileServer(r, s, args)
	}
}

func (c *cadConv) respond(r *obj, d *caddyfile.Directive, args []string) {
	resp := newObj()
	status, body := 200, ""
	switch {
	case len(args) == 1 && isStatus(args[0]):
		status, _ = strconv.Atoi(args[0])
	case len(args) >= 1:
		body = args[0]
		if len(args) > 1 && isStatus(args[1]) {
			status, _ = strconv.Atoi(args[1])
		}
	}
	for _, b := range d.Block {
		switch b.Name {
		case "body":
			if len(b.Args) == 1 {
				body = b.Args[0]
			}
		default:
			c.note(b, "not carried over")
		}
	}
	if strings.Contains(body, "{") {
		c.note(d, "placeholders in the body are sent as written")
	}
	resp.set("status", status)
	if body != "" {
		resp.set("body", body)
	}
	r.set("respond", resp)
}

func isStatus(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && len(s) == 3 && n >= 100 && n <= 599
}

// redir carries redir [MATCHER] TO [CODE].
func (c *cadConv) redir(r *obj, s *spec, args []string) {
	if len(args) == 0 {
		c.note(s.d, "expected a target")
		r.set("respond", newObj().set("status", 500))
		return
	}
	to := args[0]
	code := 302
	if len(args) > 1 {
		switch args[1] {
		case "permanent":
			code = 301
		case "temporary":
		case "html":
			c.note(s.d, "an HTML redirect page is carried as a 302")
		default:
			if n, err := strconv.Atoi(args[1]); err == nil && (n == 301 || n == 302 || n == 303 || n == 307 || n == 308) {
				code = n
			} else {
				c.note(s.d, "status %s: gale redirects with 301, 302, 303, 307 or 308", args[1])
			}
		}
	}
	red := newObj()
	switch {
	case strings.HasSuffix(to, "{uri}") && !strings.Contains(strings.TrimSuffix(to, "{uri}"), "{"):
		if s.m.exact != "" || s.m.regex != "" {
			red.set("to", strings.TrimSuffix(to, "{uri}")+"{path}")
		} else {
			red.set("to", strings.TrimSuffix(to, "{uri}")+s.m.prefix).set("keep_path", true)
		}
	default:
		t, ok := caddyTemplate(to)
		if !ok || strings.Contains(schemeHost(t), "{") {
			c.note(s.d, "%s: gale cannot carry these placeholders into a redirect", to)
			r.set("respond", newObj().set("status", 500))
			return
		}
		red.set("to", t)
	}
	red.set("status", code)
	r.set("redirect", red)
}

// caddyTemplate turns Caddy placeholders into gale's: {path}, {query},
// {uri} (path and query), {re.name.N} groups.
func caddyTemplate(s string) (string, bool) {
	ok := true
	out := placeholder.ReplaceAllStringFunc(s, func(m string) string {
		name := m[1 : len(m)-1]
		switch name {
		case "path", "http.request.uri.path":
			return "{path}"
		case "query", "http.request.uri.query":
			return "{query}"
		case "uri", "http.request.uri":
			return "{path}?{query}"
		}
		if strings.HasPrefix(name, "re.") {
			if i := strings.LastIndexByte(name, '.'); i > 2 {
				return "{" + name[i+1:] + "}"
			}
		}
		ok = false
		return m
	})
	return out, ok
}

var placeholder = placeholderRe()

// reverseProxy carries reverse_proxy with its common subdirectives.
func (c *cadConv) reverseProxy(r *obj, s *spec, args []string) {
	p := newObj().set("to", nil)
	var to []string
	addUp := func(d *caddyfile.Directive, a string) {
		u, proto, ok := upstreamAddr(a)
		if !ok {
			c.note(d, "upstream %s: gale's proxy dials host:port, unix:/path or h2c://host:port", a)
			return
		}
		if proto != "" {
			p.set("protocol", proto)
		}
		if !contains(to, u) {
			to = append(to, u)
		}
	}
	for _, a := range args {
		addUp(s.d, a)
	}
	preserve := true
	for _, b := range s.d.Block {
		switch b.Name {
		case "to":
			for _, a := range b.Args {
				addUp(b, a)
			}
		case "lb_policy":
			switch arg0(b) {
			case "round_robin":
			case "least_conn":
				p.set("load_balancing", "least-connections")
			case "random", "random_choose":
				p.set("load_balancing", "random-two")
			case "ip_hash", "client_ip_hash":
				p.set("load_balancing", "client-ip-hash")
			default:
				c.note(b, "policy %s: gale balances round-robin, least-connections, random-two or client-ip-hash", arg0(b))
			}
		case "health_uri":
			p.sub("health_check").set("path", arg0(b))
		case "health_interval", "health_timeout":
			p.sub("health_check").set(strings.TrimPrefix(b.Name, "health_"), arg0(b))
		case "health_status":
			if n, err := strconv.Atoi(arg0(b)); err == nil {
				p.sub("health_check").set("expect_status", n)
			} else {
				c.note(b, "gale expects one status code")
			}
		case "header_up":
			if len(b.Args) == 2 && strings.EqualFold(b.Args[0], "Host") {
				switch b.Args[1] {
				case "{upstream_hostport}", "{http.reverse_proxy.upstream.hostport}":
					preserve = false
				case "{host}", "{http.request.host}":
				default:
					c.note(b, "a fixed Host is not carried over")
				}
				continue
			}
			c.headerRules(r.sub("headers").sub("request"), b, b.Args)
		case "header_down":
			c.headerRules(r.sub("headers").sub("response"), b, b.Args)
		case "transport":
			for _, t := range b.Block {
				if t.Name == "versions" && len(t.Args) == 1 && t.Args[0] == "h2c" {
					p.set("protocol", "h2c")
				} else {
					c.note(t, "transport option not carried over")
				}
			}
		default:
			c.note(b, "not carried over")
		}
	}
	if !c.dialable(r, s.d, to, "no upstream gale can dial; the route answers 502") {
		return
	}
	p.set("to", to)
	if len(s.encode) > 0 {
		c.note(s.d, "encode: gale compresses static files, not proxied responses")
	}
	if preserve {
		p.set("preserve_host", true)
	}
	if s.strip != "" && s.strip != "/" {
		p.set("strip_prefix", true)
		if s.strip != s.m.prefix {
			c.note(s.d, "strip_prefix of %s under the route %s: gale strips the route's prefix", s.strip, s.m.prefix)
		}
	}
	if h, ok := r.get("headers").(*obj); ok {
		for _, k := range []string{"request", "response"} {
			if x, ok := h.get(k).(*obj); ok && len(x.keys) == 0 {
				h.del(k)
			}
		}
	}
	r.set("proxy", p)
}

// badGateway makes r answer 502, noting at d why.
func (c *cadConv) badGateway(r *obj, d *caddyfile.Directive, why string) {
	c.note(d, "%s", why)
	r.set("respond", newObj().set("status", 502))
}

// dialable says whether to names an address; without one r answers 502,
// noting at d why.
func (c *cadConv) dialable(r *obj, d *caddyfile.Directive, to []string, why string) bool {
	if len(to) == 0 {
		c.badGateway(r, d, why)
		return false
	}
	return true
}

// unmatched returns d's arguments after its matcher token ("/path",
// "@name" or "*"), if it has one.
func unmatched(d *caddyfile.Directive) []string {
	args := d.Args
	if len(args) > 0 && (strings.HasPrefix(args[0], "/") || strings.HasPrefix(args[0], "@") || args[0] == "*") {
		args = args[1:]
	}
	return args
}

func arg0(d *caddyfile.Directive) string {
	if len(d.Args) > 0 {
		return d.Args[0]
	}
	return ""
}

// upstreamAddr turns a Caddy upstream into gale's form.
func upstreamAddr(a string) (string, string, bool) {
	proto := ""
	switch {
	case strings.HasPrefix(a, "h2c://"):
		a, proto = a[6:], "h2c"
	case strings.HasPrefix(a, "http://"):
		a = a[7:]
	case strings.HasPrefix(a, "unix//"):
		return "unix:" + a[5:], "", true
	case strings.Contains(a, "://"), strings.Contains(a, "{"):
		return "", "", false
	}
	a = strings.TrimSuffix(a, "/")
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		host, port = a, "80"
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), proto, true
}

// php carries php_fastcgi as a php route (scripts run, other files are
// served as static files, as php_fastcgi with file_server does).
func (c *cadConv) php(r *obj, s *spec, args []string) {
	if s.root == "" {
		c.badGateway(r, s.d, "no root: gale's php routes need the document root")
		return
	}
	var to []string
	for _, a := range args {
		if u, _, ok := upstreamAddr(a); ok {
			to = append(to, u)
		}
	}
	p := newObj().set("to", to).set("root", s.root)
	c.note(s.d, "carried as a php route; unlike php_fastcgi it serves a directory's index.html (Caddy sends a directory without index.php to /index.php)")
	for _, b := range s.d.Block {
		switch b.Name {
		case "env":
			if len(b.Args) == 2 {
				p.sub("env").set(b.Args[0], b.Args[1])
			}
		case "root":
			p.set("root", c.abs(arg0(b)))
		default:
			c.note(b, "not carried over")
		}
	}
	if !c.dialable(r, s.d, to, "no FastCGI server gale can dial") {
		return
	}
	r.set("php", p)
}

// fileServer carries file_server with root, browse, index, precompressed
// and the site's encode and try_files.
func (c *cadConv) fileServer(r *obj, s *spec, args []string) {
	st := newObj()
	browse := len(args) > 0 && args[0] == "browse"
	root := s.root
	var pre []string
	var index []string
	for _, b := range s.d.Block {
		switch b.Name {
		case "root":
			root = c.abs(arg0(b))
		case "browse":
			browse = true
		case "index":
			index = b.Args
		case "precompressed":
			pre = b.Args
		case "hide":
			c.note(b, "gale hides dot files (static.hidden); other names are not carried over")
		default:
			c.note(b, "not carried over")
		}
	}
	if root == "" {
		c.note(s.d, "no root: Caddy serves the current directory; gale needs it named, so \".\" (the config's directory) is used")
		root = c.dir
	}
	st.set("root", root)
	if index != nil {
		st.set("index", index)
	}
	if browse {
		st.set("browse", true)
	}
	// Caddy's file server looks up root + the whole path, gale's static
	// root takes the rest after the route's prefix: under a prefix, the
	// candidates of try_files are whole paths again (handle_path strips
	// the prefix, as gale does).
	if s.try != nil {
		if list := c.caddyTry(s.try); len(list) >= 2 {
			st.set("try_files", list)
		}
	} else if s.m.prefix != "/" && s.strip == "" {
		st.set("try_files", []string{"{path}", "{path}/", "=404"})
	}
	enc := append(append([]string(nil), s.encode...), pre...)
	st.set("compress", newObj().set("encodings", dedupe(enc)))
	r.set("static", st)
}

func dedupe(in []string) []string {
	out := []string{}
	for _, s := range in {
		if (s == "gzip" || s == "br" || s == "zstd") && !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// caddyTry translates try_files candidates.
func (c *cadConv) caddyTry(d *caddyfile.Directive) []string {
	var out []string
	for _, a := range d.Args {
		if strings.HasPrefix(a, "=") {
			out = append(out, a)
			continue
		}
		t, ok := caddyTemplate(a)
		if q := strings.IndexByte(t, '?'); q >= 0 {
			t = t[:q]
		}
		if !ok {
			c.note(d, "candidate %s holds placeholders gale cannot carry; left out", a)
			continue
		}
		out = append(out, t)
	}
	if len(out) > 0 && !strings.HasPrefix(out[len(out)-1], "=") {
		// Caddy keeps the request's own path when no candidate exists,
		// and the file server answers 404 for it.
		out = append(out, "=404")
	}
	return out
}
