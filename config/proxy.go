package config

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Proxy defaults, as documented on the fields in types.go.
const (
	defaultMaxIdlePerUpstream = 64
	defaultProxyRetries       = 1
	maxProxyRetries           = 10
	maxIdlePerUpstreamCap     = 1 << 16
	maxProxyConns             = 1 << 20
	defaultHealthExpect       = 200
	defaultHealthFails        = 3
	defaultHealthPasses       = 2
	defaultPassiveFails       = 3
)

// defaultProxy returns a Proxy with every default but To.
func defaultProxy() *Proxy {
	return &Proxy{
		LoadBalancing:      "round-robin",
		Protocol:           "http1",
		Upgrade:            []string{"websocket"},
		MaxIdlePerUpstream: defaultMaxIdlePerUpstream,
		Retries:            defaultProxyRetries,
		Timeouts:           defaultUpstreamTimeouts(30*time.Second, 90*time.Second),
		Resolve:            Resolve{MinTTL: time.Second, MaxTTL: time.Minute, Timeout: 2 * time.Second},
		HealthCheck: HealthCheck{
			Interval:     5 * time.Second,
			Timeout:      2 * time.Second,
			ExpectStatus: defaultHealthExpect,
			Fails:        defaultHealthFails,
			Passes:       defaultHealthPasses,
			Passive:      defaultPassiveHealth(),
		},
	}
}

// defaultUpstreamTimeouts returns the timeouts of a kind of upstream, whose
// responseHeader and idle defaults differ; the connect timeout is one for
// all.
func defaultUpstreamTimeouts(responseHeader, idle time.Duration) ProxyTimeouts {
	return ProxyTimeouts{Connect: 2 * time.Second, ResponseHeader: responseHeader, Idle: idle}
}

// defaultPassiveHealth is passive health checking as proxy and fastcgi
// routes have it by default.
func defaultPassiveHealth() PassiveHealth {
	return PassiveHealth{Fails: defaultPassiveFails, Window: 10 * time.Second, Cooldown: 30 * time.Second}
}

// retriesAndTrust decodes retries and trusted_proxies, which proxy and
// fastcgi routes share.
func (d *decoder) retriesAndTrust(s *section, path string, retries *int, trusted *[]netip.Prefix) {
	d.setCount(s, "retries", retries, 0, maxProxyRetries)
	if v := s.get("trusted_proxies"); v != nil {
		*trusted = d.prefixes(v, join(path, "trusted_proxies"))
	}
}

const upstreamExample = `expected an upstream such as "127.0.0.1:9000", "unix:/run/app.sock", "http://app.internal:8080" or "https://app.internal:8443"`

// proxy decodes a reverse proxy route.
func (d *decoder) proxy(n *yaml.Node, path string) *Proxy {
	p := defaultProxy()
	s := d.section(n, path, proxyKeys.names()...)
	if s == nil {
		return nil
	}
	if v := d.required(s, path, "to", `to: ["127.0.0.1:9000"]`); v != nil {
		p.To = d.upstreams(v, join(path, "to"))
	}
	d.setBool(s, "strip_prefix", &p.StripPrefix)
	if v := s.get("rewrite"); v != nil {
		rp := join(path, "rewrite")
		if rw, ok := d.str(v, rp); ok {
			switch {
			case checkRoutePath(rw) != "":
				d.errorf(deref(v), rp, `expected an absolute path prefix such as "/" or "/v2/", got %s`, quote(rw))
			case p.StripPrefix:
				d.errorf(deref(v), rp, `strip_prefix and rewrite both replace the route's path prefix; use one (strip_prefix: true is rewrite: "/")`)
			default:
				p.Rewrite = rw
			}
		}
	}
	d.setEnum(s, "load_balancing", &p.LoadBalancing, proxyKeys.options("load_balancing")...)
	d.hashKeys(s, p)
	if v := s.get("resolve"); v != nil {
		d.resolveSettings(v, join(path, "resolve"), &p.Resolve)
	}
	d.setEnum(s, "protocol", &p.Protocol, proxyKeys.options("protocol")...)
	d.setCount(s, "max_idle_per_upstream", &p.MaxIdlePerUpstream, 0, maxIdlePerUpstreamCap)
	d.setCount(s, "max_conns", &p.MaxConns, 0, maxProxyConns)
	d.upstreamTimeouts(s, &p.Timeouts, proxyTimeoutsKeys.names())
	if v := s.get("health_check"); v != nil {
		d.healthCheck(v, join(path, "health_check"), &p.HealthCheck)
	}
	d.retriesAndTrust(s, path, &p.Retries, &p.TrustedProxies)
	d.setBool(s, "preserve_host", &p.PreserveHost)
	if v := s.get("upgrade"); v != nil {
		p.Upgrade = d.upgradeTokens(v, join(path, "upgrade"))
	}
	d.proxyTLS(s, path, p)
	if p.Protocol != "http1" && p.MaxConns > 0 {
		d.errorf(deref(s.get("max_conns")), join(path, "max_conns"), "max_conns bounds HTTP/1.1 connections; %s upstreams multiplex requests over a few connections of their own; remove it or use protocol: http1", p.Protocol)
	}
	return p
}

// hashKeys decodes hash_header and hash_cookie of proxy section s: each
// required by its policy (header-hash, cookie-hash) and allowed only
// with it.
func (d *decoder) hashKeys(s *section, p *Proxy) {
	for _, k := range []struct {
		key, policy string
		dst         *string
		check       func(string) string
	}{
		{"hash_header", "header-hash", &p.HashHeader, checkHeaderName},
		{"hash_cookie", "cookie-hash", &p.HashCookie, checkCookieName},
	} {
		v := s.get(k.key)
		switch {
		case v == nil && p.LoadBalancing == k.policy:
			d.errorf(deref(s.get("load_balancing")), join(s.path, "load_balancing"), "%s needs %s: the name whose value chooses the upstream", k.policy, k.key)
		case v == nil:
		case p.LoadBalancing != k.policy:
			d.errorf(deref(v), join(s.path, k.key), "%s is used only with load_balancing: %s", k.key, k.policy)
		default:
			if name, ok := d.checkedStr(v, join(s.path, k.key), k.check); ok {
				*k.dst = name
			}
		}
	}
	if p.HashHeader != "" {
		p.HashHeader = http.CanonicalHeaderKey(p.HashHeader)
	}
}

// checkCookieName validates a cookie name (a token, RFC 6265 section 4.1.1).
func checkCookieName(name string) string {
	if msg := checkHeaderName(name); msg != "" {
		return strings.Replace(msg, "header name", "cookie name", 1)
	}
	return ""
}

// resolveSettings decodes proxy.resolve.
func (d *decoder) resolveSettings(n *yaml.Node, path string, r *Resolve) {
	s := d.section(n, path, resolveKeys.names()...)
	if s == nil {
		return
	}
	d.setDuration(s, "min_ttl", &r.MinTTL)
	d.setDuration(s, "max_ttl", &r.MaxTTL)
	d.setDuration(s, "timeout", &r.Timeout)
	if v := s.get("resolver"); v != nil {
		if a, ok := d.checkedStr(v, join(path, "resolver"), checkResolver); ok {
			r.Resolver = a
		}
	}
	if r.MaxTTL < r.MinTTL {
		d.errorf(deref(s.get("max_ttl")), join(path, "max_ttl"), "max_ttl (%s) is below min_ttl (%s)", r.MaxTTL, r.MinTTL)
	}
}

// checkResolver validates resolve.resolver: an IP address and a port.
func checkResolver(a string) string {
	ap, err := netip.ParseAddrPort(a)
	if err != nil || ap.Port() == 0 || ap.Addr().Zone() != "" {
		return `expected a DNS server as "ip:port", such as "127.0.0.1:53", got ` + quote(a)
	}
	return ""
}

// upgradeTokenPattern is the grammar of a protocol in an Upgrade field
// (RFC 9110 section 7.8): a token, optionally "/" and a version token.
const upgradeTokenPattern = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+(/[!#$%&'*+.^_`|~0-9A-Za-z-]+)?$"

var upgradeTokenRE = regexp.MustCompile(upgradeTokenPattern)

// upgradeTokens decodes proxy.upgrade: a list of distinct protocol names,
// kept in lower case (Upgrade tokens compare case-insensitively). h2c is
// refused: gale never serves HTTP/2 upgrades itself, and a tunnel to an
// upstream's HTTP/2 would carry requests that gale's routes never see.
func (d *decoder) upgradeTokens(n *yaml.Node, path string) []string {
	items, _ := d.list(n, path, "protocol names")
	out := []string{}
	d.eachString(items, path, func(item *yaml.Node, ip, raw string) {
		tok := strings.ToLower(raw)
		switch {
		case !upgradeTokenRE.MatchString(raw):
			d.errorf(item, ip, `expected a protocol name such as "websocket" or "name/version", got %s`, quote(raw))
		case tok == "h2c" || strings.HasPrefix(tok, "h2c/"):
			d.errorf(item, ip, "h2c cannot be forwarded: a client would speak HTTP/2 to the upstream past every route and access rule of gale; use protocol: h2c to reach an HTTP/2 upstream")
		case slices.Contains(out, tok):
			d.errorf(item, ip, "protocol %s is listed twice", quote(raw))
		default:
			out = append(out, tok)
		}
	})
	return out
}

// upstreams decodes one upstream or a list of them.
func (d *decoder) upstreams(n *yaml.Node, path string) []Upstream {
	n = deref(n)
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		var ok bool
		if items, ok = d.nonEmptyList(n, path, "upstreams", `expected at least one upstream, e.g. ["127.0.0.1:9000"]`); !ok {
			return nil
		}
	}
	var out []Upstream
	first := map[string]*yaml.Node{}
	for i, item := range items {
		ip := path
		if n.Kind == yaml.SequenceNode {
			ip = index(path, i)
		}
		raw, ok := d.str(item, ip)
		if !ok {
			continue
		}
		u, msg := parseUpstream(raw, d.dir)
		if msg != "" {
			d.errorf(item, ip, "%s", msg)
			continue
		}
		key := u.Network + " " + u.Address
		if u.Discover != "" {
			key = u.Discover + " " + u.Name + " " + u.Port
		}
		if k, dup := first[key]; dup {
			d.errorf(item, ip, "upstream %s is listed twice; first at line %d, column %d", quote(raw), k.Line, k.Column)
			continue
		}
		first[key] = item
		out = append(out, u)
	}
	return out
}

// parseUpstream parses one upstream: "host:port", "unix:PATH" (relative
// paths resolve against dir), "http://host[:port]" (port 80 by default,
// no path, query or user info) or "https://host[:port]" (the same over
// TLS, port 443 by default).
func parseUpstream(raw, dir string) (Upstream, string) {
	bad := func(why string) (Upstream, string) {
		msg := upstreamExample + ", got " + quote(raw)
		if why != "" {
			msg += ": " + why
		}
		return Upstream{}, msg
	}
	if raw == "" || strings.TrimSpace(raw) != raw {
		return bad("")
	}
	if rest, ok := strings.CutPrefix(raw, "dns+a://"); ok {
		return parseDiscoverA(raw, rest, bad)
	}
	if rest, ok := strings.CutPrefix(raw, "dns+srv://"); ok {
		return parseDiscoverSRV(raw, rest, bad)
	}
	if rest, ok := strings.CutPrefix(raw, "unix:"); ok {
		if rest == "" || strings.ContainsRune(rest, 0) {
			return bad("empty socket path")
		}
		if !filepath.IsAbs(rest) {
			rest = filepath.Join(dir, rest)
		}
		return Upstream{Network: "unix", Address: filepath.Clean(rest), Host: "localhost", Raw: raw}, ""
	}
	hostport, secure := raw, false
	if i := strings.Index(raw, "://"); i >= 0 {
		u, err := url.Parse(raw)
		switch {
		case err != nil:
			return bad("")
		case u.Scheme != "http" && u.Scheme != "https":
			return bad("the scheme must be http or https")
		case u.User != nil:
			return bad("user info is not allowed")
		case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
			return bad("no path or query; use rewrite to change the path")
		case u.Host == "":
			return bad("missing host")
		}
		hostport, secure = u.Host, u.Scheme == "https"
		if u.Port() == "" {
			port := "80"
			if secure {
				port = "443"
			}
			if strings.HasSuffix(hostport, ":") {
				return bad("empty port")
			}
			host := strings.ToLower(strings.Trim(u.Hostname(), "[]"))
			if msg := checkUpstreamHost(host); msg != "" {
				return bad(msg)
			}
			return Upstream{Network: "tcp", Address: net.JoinHostPort(host, port), Host: strings.ToLower(hostport), Raw: raw, TLS: secure}, ""
		}
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		if strings.Count(hostport, ":") > 1 && !strings.HasPrefix(hostport, "[") {
			return bad("write IPv6 addresses in brackets")
		}
		return bad("missing port")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || port[0] == '+' || n == 0 {
		return bad("the port must be a number from 1 to 65535")
	}
	if msg := checkUpstreamHost(host); msg != "" {
		return bad(msg)
	}
	host = strings.ToLower(host)
	return Upstream{Network: "tcp", Address: net.JoinHostPort(host, port), Host: strings.ToLower(hostport), Raw: raw, TLS: secure}, ""
}

// parseDiscoverA parses the rest of "dns+a://name:port": a host name
// (not an address: that is a plain upstream) and a port.
func parseDiscoverA(raw, rest string, bad func(string) (Upstream, string)) (Upstream, string) {
	host, port, err := net.SplitHostPort(rest)
	if err != nil || strings.ContainsAny(rest, "/?#@[]") {
		return bad("dns+a needs a name and a port, such as dns+a://app.internal:8080")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || port[0] == '+' || n == 0 {
		return bad("the port must be a number from 1 to 65535")
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if _, err := netip.ParseAddr(host); err == nil {
		return bad("an address needs no lookup; write it without dns+a://")
	}
	if msg := checkHostName(host); msg != "" {
		return bad(msg)
	}
	return Upstream{Network: "tcp", Host: net.JoinHostPort(host, port), Raw: raw, Discover: "a", Name: host + ".", Port: port}, ""
}

// parseDiscoverSRV parses the rest of "dns+srv://_service._proto.name".
func parseDiscoverSRV(raw, rest string, bad func(string) (Upstream, string)) (Upstream, string) {
	name := strings.ToLower(strings.TrimSuffix(rest, "."))
	labels := strings.Split(name, ".")
	if len(labels) < 3 || !strings.HasPrefix(labels[0], "_") || !strings.HasPrefix(labels[1], "_") || strings.ContainsAny(name, ":/?#@[]") {
		return bad("dns+srv needs a service name such as dns+srv://_http._tcp.app.internal (no port: the records give it)")
	}
	if msg := checkHostName(strings.Join(labels[2:], ".")); msg != "" {
		return bad(msg)
	}
	return Upstream{Network: "tcp", Host: strings.Join(labels[2:], "."), Raw: raw, Discover: "srv", Name: name + "."}, ""
}

// checkUpstreamHost checks the host part of an upstream: an IP address or
// a host name.
func checkUpstreamHost(host string) string {
	if host == "" {
		return "missing host"
	}
	if _, err := netip.ParseAddr(host); err == nil {
		if strings.Contains(host, "%") {
			return "IPv6 zones are not supported"
		}
		return ""
	}
	if strings.Contains(host, ":") {
		return "bad IPv6 address"
	}
	return checkHostName(strings.ToLower(host))
}

// prefixes decodes a list of CIDRs or single addresses into masked
// prefixes.
func (d *decoder) prefixes(n *yaml.Node, path string) []netip.Prefix {
	items, ok := d.list(n, path, "CIDRs")
	if !ok {
		return nil
	}
	out := []netip.Prefix{}
	d.eachString(items, path, func(item *yaml.Node, ip, s string) {
		p, msg := parsePrefix(s)
		if msg != "" {
			d.errorf(item, ip, "%s", msg)
			return
		}
		if slices.Contains(out, p) {
			d.errorf(item, ip, "%s is listed twice", quote(p.String()))
			return
		}
		out = append(out, p)
	})
	return out
}

// parsePrefix parses "10.0.0.0/8", "::1/128" or a single address, which
// stands for itself (/32 or /128). Host bits are cleared. IPv4-mapped IPv6
// addresses are taken as IPv4.
func parsePrefix(s string) (netip.Prefix, string) {
	bad := `expected a CIDR such as "10.0.0.0/8" or an address such as "127.0.0.1", got ` + quote(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Addr().Zone() != "" {
			return netip.Prefix{}, bad
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), ""
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, bad
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), ""
}

// healthCheck decodes active and passive health settings.
func (d *decoder) healthCheck(n *yaml.Node, path string, h *HealthCheck) {
	s := d.section(n, path, healthCheckKeys.names()...)
	if s == nil {
		return
	}
	if v := s.get("path"); v != nil {
		if p, ok := d.checkedStr(v, join(path, "path"), checkHealthPath); ok {
			h.Path = p
		}
	}
	d.setDuration(s, "interval", &h.Interval)
	d.setDuration(s, "timeout", &h.Timeout)
	d.setCount(s, "expect_status", &h.ExpectStatus, 100, 599)
	d.setCount(s, "fails", &h.Fails, 1, 1000)
	d.setCount(s, "passes", &h.Passes, 1, 1000)
	d.passiveHealth(s, &h.Passive)
}

// passiveHealth decodes the passive key of health_check section s, of
// proxy and fastcgi routes alike.
func (d *decoder) passiveHealth(s *section, p *PassiveHealth) {
	if v := s.get("passive"); v != nil {
		if ps := d.section(v, join(s.path, "passive"), passiveKeys.names()...); ps != nil {
			d.setCount(ps, "fails", &p.Fails, 0, 1000)
			d.setDuration(ps, "window", &p.Window)
			d.setDuration(ps, "cooldown", &p.Cooldown)
		}
	}
}

// upstreamTimeouts decodes the timeouts key of route section s, of proxy
// and fastcgi routes alike (known names the keys of each).
func (d *decoder) upstreamTimeouts(s *section, t *ProxyTimeouts, known []string) {
	if v := s.get("timeouts"); v != nil {
		if ts := d.section(v, join(s.path, "timeouts"), known...); ts != nil {
			d.setDuration(ts, "connect", &t.Connect)
			d.setDuration(ts, "response_header", &t.ResponseHeader)
			d.setDuration(ts, "idle", &t.Idle)
		}
	}
}

// checkHealthPath validates health_check.path: an origin-form target
// ("/healthz", "/status?full=1") of visible ASCII without "#".
func checkHealthPath(p string) string {
	bad := `expected a path such as "/healthz", got ` + quote(p)
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return bad
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7f || c == '#' {
			return bad + " (spaces, control characters and non-ASCII must be percent-encoded)"
		}
	}
	return ""
}

// ForProxy returns a config that forwards every request received on listen
// to the upstreams to (each as proxy.to accepts them), with every other
// setting at its default: one proxy route for any host and path "/".
// Relative socket paths resolve against the working directory. On failure
// the error is an ErrorList whose errors name the offending argument as Key
// ("listen" or "to"), without file or position, and the *Config is nil.
// ForProxy is safe for concurrent use.
func ForProxy(listen string, to []string) (*Config, error) {
	return forFlags(listen, func(wd string, errs *ErrorList) Route {
		p := defaultProxy()
		seen := map[string]bool{}
		for _, raw := range to {
			u, msg := parseUpstream(raw, wd)
			if msg != "" {
				*errs = append(*errs, &Error{Key: "to", Msg: msg})
				continue
			}
			if u.Discover != "" && seen[u.Raw] || u.Discover == "" && seen[u.Network+" "+u.Address] {
				*errs = append(*errs, &Error{Key: "to", Msg: "upstream " + quote(raw) + " is listed twice"})
				continue
			}
			seen[u.Network+" "+u.Address] = true
			seen[u.Raw] = true
			p.To = append(p.To, u)
			if u.TLS {
				p.TLS = DefaultUpstreamTLS()
			}
		}
		if len(to) == 0 {
			*errs = append(*errs, &Error{Key: "to", Msg: `expected at least one upstream, e.g. "127.0.0.1:9000"`})
		}
		return Route{Path: "/", Proxy: p}
	})
}

// Discovers reports whether some entry of To is resolved through DNS
// (dns+a://, dns+srv://).
func (p *Proxy) Discovers() bool {
	for _, u := range p.To {
		if u.Discover != "" {
			return true
		}
	}
	return false
}

// Balancing describes the load balancing policy for summaries:
// "round-robin", "header-hash X-User", "cookie-hash sid".
func (p *Proxy) Balancing() string {
	switch {
	case p.HashHeader != "":
		return p.LoadBalancing + " " + p.HashHeader
	case p.HashCookie != "":
		return p.LoadBalancing + " " + p.HashCookie
	}
	return p.LoadBalancing
}

// ResolveSummary describes how the DNS entries are resolved, for
// summaries: "resolved every 1s..1m0s via 127.0.0.1:53" ("via
// /etc/resolv.conf" without a resolver).
func (p *Proxy) ResolveSummary() string {
	via := p.Resolve.Resolver
	if via == "" {
		via = "/etc/resolv.conf"
	}
	return "resolved every " + p.Resolve.MinTTL.String() + ".." + p.Resolve.MaxTTL.String() + " (TTL) via " + via
}
