package config

import (
	"path/filepath"
	"strconv"
	"strings"
)

// Summary describes the listeners and routes in a few lines for startup
// output, one listener or route per line, routes in file order:
//
//	listen  127.0.0.1:8080
//	listen  :8443  tls (2 certificates)
//	listen  :443  tls automatic [example.com www.example.com] (+on demand) in /var/lib/gale
//	listen  :80  redirect to https
//	listen  :8444  tls (1 certificate)  client_auth require ca ./clients.pem crl ./clients.crl
//	listen  :9090  protocols [h2c]
//	route   */             static ./site (browse)
//	route   */hello        respond 200
//	route   */old/         redirect 308 /
//	route   */healthz      health live
//	route   example.com/   static /srv/example (+headers)
//	route   */api/ (api)   proxy 127.0.0.1:9000 unix:/run/app.sock (round-robin)
//	route   */app/         proxy dns+srv://_http._tcp.app.internal (header-hash X-User) resolved every 1s..1m0s (TTL) via /etc/resolv.conf
//
// "*" stands for any host; a route's name follows its path in
// parentheses. Static roots under the config's directory are shown
// relative to it. bound, when given, are the addresses the listeners bound
// (in order, a port of 0 resolved), shown in place of the configured ones.
// The returned slice is freshly allocated and owned by the caller. Summary
// is safe for concurrent use.
func (c *Config) Summary(bound ...string) []string {
	out := make([]string, 0, len(c.Listen)+len(c.Routes))
	for i, l := range c.Listen {
		addr := l.Address
		if i < len(bound) && bound[i] != "" {
			addr = bound[i]
		}
		line := "listen  " + addr
		switch {
		case l.TLS != nil && l.TLS.Automatic != nil:
			line += "  tls " + automaticSummary(l.TLS)
		case l.TLS != nil && len(l.TLS.Certificates) == 1:
			line += "  tls (1 certificate)"
		case l.TLS != nil:
			line += "  tls (" + strconv.Itoa(len(l.TLS.Certificates)) + " certificates)"
		case l.RedirectToHTTPS != nil:
			line += "  redirect to https"
		}
		if l.TLS != nil {
			line += c.clientAuthSummary(l.TLS)
		}
		if l.Protocols != DefaultProtocols(l.TLS != nil) {
			line += "  protocols " + l.Protocols.String()
		}
		if l.HTTP3 {
			line += "  http3 (udp)"
		}
		out = append(out, line)
	}
	if r := c.Cluster.Redis; r != nil {
		line := "cluster redis " + r.Address + " db " + strconv.Itoa(r.DB) + " prefix " + strconv.Quote(r.Prefix)
		if r.TLS {
			line += " tls"
		}
		if c.Cluster.Instance != "" {
			line += "  instance " + c.Cluster.Instance
		}
		if c.Cluster.Instances > 0 {
			line += "  instances " + strconv.Itoa(c.Cluster.Instances)
		}
		out = append(out, line)
	}
	where := make([]string, len(c.Routes))
	width := 0
	for i, r := range c.Routes {
		host := r.Host
		if host == "" {
			host = "*"
		}
		where[i] = host + r.Path
		if r.Name != "" {
			where[i] += " (" + r.Name + ")"
		}
		width = max(width, len(where[i]))
	}
	for i, r := range c.Routes {
		var b strings.Builder
		b.WriteString("route   ")
		b.WriteString(where[i])
		b.WriteString(strings.Repeat(" ", width-len(where[i])+2))
		switch {
		case r.FastCGI != nil:
			b.WriteString(map[bool]string{false: "fastcgi ", true: "php "}[r.FastCGI.PHP])
			b.WriteString(c.displayPath(r.FastCGI.Root))
			for _, u := range r.FastCGI.To {
				b.WriteByte(' ')
				b.WriteString(u.Raw)
			}
		case r.Static != nil:
			b.WriteString("static ")
			b.WriteString(c.displayPath(r.Static.Root))
			if r.Static.Browse {
				b.WriteString(" (browse)")
			}
		case r.Health != "":
			b.WriteString("health ")
			b.WriteString(r.Health)
		case r.Respond != nil:
			b.WriteString("respond ")
			b.WriteString(strconv.Itoa(r.Respond.Status))
		case r.Redirect != nil:
			b.WriteString("redirect ")
			b.WriteString(strconv.Itoa(r.Redirect.Status))
			b.WriteByte(' ')
			b.WriteString(r.Redirect.To)
			if r.Redirect.KeepPath {
				b.WriteString(" (keep path)")
			}
		case r.Proxy != nil:
			b.WriteString("proxy")
			for _, u := range r.Proxy.To {
				b.WriteByte(' ')
				b.WriteString(u.Raw)
			}
			if len(r.Proxy.To) > 1 || r.Proxy.Discovers() {
				b.WriteString(" (" + r.Proxy.Balancing() + ")")
			}
			if r.Proxy.Discovers() {
				b.WriteString(" " + r.Proxy.ResolveSummary())
			}
			if t := r.Proxy.TLS; t != nil {
				b.WriteString(" " + t.Describe())
			}
		}
		if h := r.Headers; len(h.Request.Set)+len(h.Request.Add)+len(h.Request.Remove)+
			len(h.Response.Set)+len(h.Response.Add)+len(h.Response.Remove) > 0 {
			b.WriteString(" (+headers)")
		}
		out = append(out, b.String())
	}
	return out
}

// displayPath shows p relative to the config's directory when it lies
// inside it ("./site"), else as is.
func (c *Config) displayPath(p string) string {
	if c.Dir == "" {
		return p
	}
	rel, err := filepath.Rel(c.Dir, p)
	switch {
	case err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)):
		return p
	case rel == ".":
		return "."
	}
	return "." + string(filepath.Separator) + rel
}

// automaticSummary describes a TLS section with automatic certificates:
// the names managed, on-demand, certificate files beside, the storage.
func automaticSummary(t *TLS) string {
	a := t.Automatic
	s := "automatic [" + strings.Join(a.Domains, " ") + "]"
	if a.OnDemand != nil {
		s += " (+on demand)"
	}
	if n := len(t.Certificates); n > 0 {
		s += " (+" + strconv.Itoa(n) + " certificate files)"
	}
	if a.InRedis {
		return s + " in cluster.redis"
	}
	return s + " in " + a.Storage
}

// clientAuthSummary describes the client certificates a TLS listener asks
// for: its own client_auth, then those of its certificates that have
// their own (named by their position); "" when none asks.
func (c *Config) clientAuthSummary(t *TLS) string {
	var b strings.Builder
	if t.ClientAuth != nil {
		b.WriteString("  client_auth " + c.ClientAuthString(t.ClientAuth))
	}
	for i, cert := range t.Certificates {
		if cert.ClientAuth != nil {
			b.WriteString("  certificates[" + strconv.Itoa(i) + "].client_auth " + c.ClientAuthString(cert.ClientAuth))
		}
	}
	return b.String()
}

// ClientAuthString describes a client_auth in one line: its mode, then
// its CA and CRL files (relative to the config's directory when under
// it). Safe for concurrent use.
func (c *Config) ClientAuthString(a *ClientAuth) string {
	s := a.Mode.String()
	if a.CA != "" {
		s += " ca " + c.displayPath(a.CA)
	}
	if a.CRL != "" {
		s += " crl " + c.displayPath(a.CRL)
	}
	return s
}

// ListenerClientAuth describes, one line per TLS listener that asks for
// client certificates, what it asks ("listen :8443  client_auth require
// ca ./clients.pem"); bound as for Summary. Safe for concurrent use.
func (c *Config) ListenerClientAuth(bound ...string) []string {
	var out []string
	for i, l := range c.Listen {
		if l.TLS == nil {
			continue
		}
		s := c.clientAuthSummary(l.TLS)
		if s == "" {
			continue
		}
		addr := l.Address
		if i < len(bound) && bound[i] != "" {
			addr = bound[i]
		}
		out = append(out, "listen "+addr+s)
	}
	return out
}
