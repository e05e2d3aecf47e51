package handlers

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"gale/config"
)

// Explain serves nothing: it walks c's request through the same steps as
// Serve (normalising, host group, each route tried with the matcher that
// turned it down, access rules, rate limit, rewrite, header rules and the
// handler) and returns what each decided, one line each, for
// `gale route`. It reads files only to say which try_files candidate
// exists. c needs Req, Remote and Scratch; Explain may modify c.Req (its
// query, by a rewrite) as Serve would. It is not meant for the event loop.
func (rt *Router) Explain(c *Ctx) []string {
	tr := &trace{}
	tr.addf("request: %s %s", c.Req.Method, c.Req.Target)
	host := "none"
	if c.Req.Host != nil {
		host = string(c.Req.Host)
	}
	tr.addf("host: %s", host)
	tr.addf("client address: %s", addrString(ClientAddr(c)))
	c.Route, c.Rest, c.capPath, c.caps = nil, nil, nil, nil
	if !c.normalizePath() {
		tr.addf("path: %q cannot be normalised: 400", c.Req.Path)
		return tr.lines
	}
	tr.addf("normal path: %s", c.Path)
	if c.WirePath != nil {
		tr.addf("path as forwarded: %s", c.WirePath)
	}
	r, rest := rt.lookup(c.Req.Host, c.Path, c, tr)
	if r == nil {
		tr.addf("no route matches: 404")
		return tr.lines
	}
	c.Route, c.Rest = r, rest
	tr.addf("route: %s", routeName(r))
	if c.slashes && !r.encodedSlashes(c) {
		tr.addf("encoded slash refused (encoded_slashes: reject): 400")
		return tr.lines
	}
	tr.addf("rest after the prefix: %s", rest)
	if caps := c.caps; caps != nil {
		for g := 0; 2*g < len(caps); g++ {
			name := r.match.re.SubexpNames()[g]
			if name != "" {
				name = " (" + name + ")"
			}
			tr.addf("capture {%d}%s: %q", g, name, c.capture(g))
		}
	}
	if !tr.access(r, c) {
		return tr.lines
	}
	tr.limit(r)
	tr.basicAuth(r)
	tr.forwardAuth(r)
	if r.rewrite != nil {
		before, beforeQ := string(c.Path), string(c.Req.Query)
		if !r.applyRewrite(c) {
			tr.addf("rewrite %q: the new path cannot be normalised: 400", r.rewrite.Raw)
			return tr.lines
		}
		tr.addf("rewrite %q: %s?%s -> %s?%s (rest %s)", r.rewrite.Raw, before, beforeQ, c.Path, c.Req.Query, c.Rest)
	}
	tr.headerRules("request header rules", &r.Conf.Headers.Request)
	tr.handler(r, c)
	tr.headerRules("response header rules", &r.Conf.Headers.Response)
	return tr.lines
}

// trace collects Explain's lines. Its methods do nothing on a nil trace,
// which is what Serve passes.
type trace struct {
	lines []string
}

func (t *trace) addf(format string, args ...any) {
	t.lines = append(t.lines, fmt.Sprintf(format, args...))
}

// group reports the host group the router selected.
func (t *trace) group(rt *Router, g *group, host []byte) {
	if t == nil {
		return
	}
	name := "routes without a host"
	for h, eg := range rt.exact {
		if eg == g {
			name = "host " + h
		}
	}
	for s, wg := range rt.wild {
		if wg == g {
			name = "host *." + s
		}
	}
	if g == nil {
		t.addf("host group: none (no route for this host, and none without a host)")
		return
	}
	n := fmt.Sprintf("%d routes", len(g.routes))
	if len(g.routes) == 1 {
		n = "1 route"
	}
	t.addf("host group: %s (%s, tried in precedence order)", name, n)
}

// tried reports one route the router tried and the first matcher that
// turned it down (mkNone: it matched).
func (t *trace) tried(r *Route, k matchKind) {
	if t == nil {
		return
	}
	verdict := "matches"
	if k != mkNone {
		verdict = "no: " + k.String() + " does not match"
	}
	t.addf("  try %s%s: %s", routeName(r), describeMatch(r), verdict)
}

// routeName names a route as messages of the config do.
func routeName(r *Route) string {
	name := ""
	if r.Conf.Name != "" {
		name = " name " + r.Conf.Name
	}
	return fmt.Sprintf("routes[%d] (line %d)%s path %s", r.order, r.Conf.Pos.Line, name, r.Conf.Path)
}

// describeMatch lists a route's matchers beside its path.
func describeMatch(r *Route) string {
	m := &r.Conf.Match
	var parts []string
	if m.Path != "" {
		parts = append(parts, "path "+m.Path)
	}
	if m.PathRegex != nil {
		parts = append(parts, "path_regex "+m.PathRegex.Raw)
	}
	if m.Methods != nil {
		parts = append(parts, "methods "+strings.Join(m.Methods, ","))
	}
	for _, f := range m.Headers {
		parts = append(parts, "header "+describeField(f))
	}
	for _, f := range m.Query {
		parts = append(parts, "query "+describeField(f))
	}
	if m.Remote != nil {
		parts = append(parts, "remote "+joinPrefixes(m.Remote))
	}
	if len(parts) == 0 {
		return ""
	}
	return " [" + strings.Join(parts, "; ") + "]"
}

func describeField(f config.FieldMatch) string {
	if f.Values == nil {
		return f.Name + "=*"
	}
	return f.Name + "=" + strings.Join(f.Values, "|")
}

// access reports the route's access decision; false when it denies.
func (t *trace) access(r *Route, c *Ctx) bool {
	if r.access == nil {
		t.addf("access: every client (no access rules)")
		return true
	}
	ok, i := r.access.allows(ClientAddr(c), c.Cert)
	client := addrString(ClientAddr(c))
	if c.Cert != nil {
		client += " with certificate " + c.Cert.Subject + " (" + c.Cert.ResultOrNone() + ")"
	}
	switch {
	case i < 0:
		t.addf("access: no rule matches %s: denied, 403", client)
	case ok:
		t.addf("access: rule %d (allow %s%s) allows %s", i+1, joinPrefixes(r.access[i].Prefixes), certRule(r.access[i].ClientCert), client)
	default:
		t.addf("access: rule %d (deny %s%s) denies %s: 403", i+1, joinPrefixes(r.access[i].Prefixes), certRule(r.access[i].ClientCert), client)
	}
	return ok
}

// basicAuth reports the route's basic_auth (credentials are not checked
// here: their verification is a server's).
func (t *trace) basicAuth(r *Route) {
	if t == nil || r.auth == nil {
		return
	}
	t.addf("basic_auth: realm %q, %d users; without valid credentials: 401 with WWW-Authenticate", r.Conf.BasicAuth.Realm, len(r.auth.users))
}

// forwardAuth reports the route's forward_auth (the service is not
// asked here: a server asks it).
func (t *trace) forwardAuth(r *Route) {
	if t == nil || r.fauth == nil {
		return
	}
	fa := r.Conf.ForwardAuth
	to := make([]string, len(fa.To))
	for i, u := range fa.To {
		to[i] = u.Raw
	}
	t.addf("forward_auth: GET %s from %s (timeout %v) decides; 2xx passes with %v copied onto the request (the client's own removed), any other answer is the response, no answer 502/504",
		fa.URI, strings.Join(to, ", "), fa.Timeout, fa.CopyHeaders)
}

// limit reports the route's rate limit (whose state a server keeps).
func (t *trace) limit(r *Route) {
	if r.limit == nil {
		t.addf("rate limit: none")
		return
	}
	rl := r.limit.conf
	key := fmt.Sprintf("the client address (IPv6 by /%d)", rl.IPv6Prefix)
	if rl.Header != "" {
		key = "the " + rl.Header + " header, else " + key
	}
	t.addf("rate limit: %s, burst %d, keyed by %s; over it: 429 with Retry-After", rl.Rate, rl.Burst, key)
	if rl.Scope == "cluster" {
		t.addf("rate limit scope: cluster, counted over every instance sharing cluster.redis; while it is unreachable: %s", rl.OnFailure)
	}
}

// headerRules reports a set of header rules.
func (t *trace) headerRules(what string, ops *config.HeaderOps) {
	if len(ops.Remove)+len(ops.Set)+len(ops.Add) == 0 {
		t.addf("%s: none", what)
		return
	}
	var parts []string
	for _, n := range ops.Remove {
		parts = append(parts, "remove "+n)
	}
	for _, kv := range ops.Set {
		parts = append(parts, "set "+kv.Name+": "+kv.Value)
	}
	for _, kv := range ops.Add {
		parts = append(parts, "add "+kv.Name+": "+kv.Value)
	}
	t.addf("%s: %s", what, strings.Join(parts, "; "))
}

// handler reports what serves the request.
func (t *trace) handler(r *Route, c *Ctx) {
	rc := r.Conf
	switch {
	case rc.FastCGI != nil:
		kind := "fastcgi"
		if rc.FastCGI.PHP {
			kind = "php"
		}
		var to []string
		for _, u := range rc.FastCGI.To {
			to = append(to, u.Raw)
		}
		t.addf("handler: %s to %s, root %s", kind, strings.Join(to, ", "), rc.FastCGI.Root)
	case rc.Static != nil:
		browse := ""
		if rc.Static.Browse {
			browse = ", browse (lists directories without an index file)"
		}
		t.addf("handler: static, root %s%s", rc.Static.Root, browse)
		if h, ok := r.Handler.(*staticHandler); ok && h.try != nil {
			t.tryFiles(h, c)
		}
	case rc.Respond != nil:
		t.addf("handler: respond %d", rc.Respond.Status)
	case rc.Health != "":
		t.addf("handler: health %s", rc.Health)
	case rc.Redirect != nil:
		if h, ok := r.Handler.(*redirectHandler); ok {
			c.Resp.Reset()
			h.Serve(c)
			t.addf("handler: redirect %d to %s", c.Resp.Status, c.Resp.Get(hdrLocation))
		}
	case rc.Proxy != nil:
		var to []string
		for _, u := range rc.Proxy.To {
			to = append(to, u.Raw)
		}
		path := string(c.Path)
		if rc.Proxy.StripPrefix || rc.Proxy.Rewrite != "" {
			base := strings.TrimSuffix(rc.Proxy.Rewrite, "/")
			path = base + string(c.Rest)
		}
		if c.Req.Query != nil {
			path += "?" + string(c.Req.Query)
		}
		t.addf("handler: proxy to %s, %s as %s", strings.Join(to, ", "), c.Req.Method, path)
		if len(rc.Proxy.To) > 1 || rc.Proxy.Discovers() {
			t.addf("load balancing: %s", rc.Proxy.Balancing())
		}
		if rc.Proxy.Discovers() {
			t.addf("upstreams: each address the DNS records give, %s", rc.Proxy.ResolveSummary())
		}
		if tl := rc.Proxy.TLS; tl != nil {
			t.addf("upstream tls: %s", tl.Describe())
		}
	}
}

// tryFiles reports each try_files candidate and whether it exists under
// the root.
func (t *trace) tryFiles(h *staticHandler, c *Ctx) {
	for i := range h.try {
		p, ok := h.tryPath(c, i)
		if !ok {
			t.addf("  try_files %q: cannot be normalised: 400", h.try[i].Raw)
			return
		}
		if i == len(h.try)-1 && h.tryStatus == 0 {
			t.addf("  try_files %q: %s, the fallback: served", h.try[i].Raw, p)
			return
		}
		dir := endsWithSlash(p)
		fi, err := os.Stat(filepath.Join(h.rootPath, filepath.FromSlash(string(p))))
		found := err == nil && fi.IsDir() == dir
		verdict := "does not exist"
		switch {
		case found:
			verdict = "exists: served"
		case err == nil && dir:
			verdict = "is not a directory"
		case err == nil:
			verdict = "is a directory"
		}
		t.addf("  try_files %q: %s %s", h.try[i].Raw, p, verdict)
		if found {
			return
		}
	}
	if h.tryStatus != 0 {
		t.addf("  try_files: no candidate exists: %d", h.tryStatus)
	}
}

func joinPrefixes(ps []netip.Prefix) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	if len(s) == 2 && s[0] == "0.0.0.0/0" && s[1] == "::/0" {
		return "all"
	}
	return strings.Join(s, ", ")
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return "unknown"
	}
	return a.String()
}

// certRule describes a rule's client_cert condition ("" for none).
func certRule(m *config.CertMatch) string {
	if m == nil {
		return ""
	}
	s := ", client_cert verified"
	if len(m.Names) > 0 {
		s += " names " + strings.Join(m.Names, " ")
	}
	if len(m.Fingerprints) > 0 {
		s += " fingerprints " + strings.Join(m.Fingerprints, " ")
	}
	return s
}
