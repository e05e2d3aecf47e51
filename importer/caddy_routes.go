package importer

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"gale/importer/caddyfile"
)

// spec is a terminal handler with its conditions and the middleware that
// applies to it, in Caddy's order of evaluation.
type spec struct {
	d      *caddyfile.Directive
	m      cond
	order  int
	strip  string // handle_path's prefix
	mw     []mware
	root   string
	encode []string
	try    *caddyfile.Directive
}

// mware is a directive that edits requests or responses on the way to a
// handler (header, basicauth, rewrite, request_header), with its matcher.
type mware struct {
	d *caddyfile.Directive
	m cond
}

// scopeCtx is what a handle block passes to the directives inside it.
type scopeCtx struct {
	base   cond // what the enclosing handle block's matcher selects
	prefix string
	strip  string
	mw     []mware
	root   string
	encode []string
	try    *caddyfile.Directive
}

// directiveOrder is Caddy's standard order of the handler directives
// (caddyconfig/httpcaddyfile/directives.go, v2.6): the order a Caddyfile
// is evaluated in, whatever the order it is written in.
var directiveOrder = map[string]int{
	"redir": 1, "handle": 2, "handle_path": 2, "route": 2, "respond": 3, "reverse_proxy": 4, "php_fastcgi": 5, "file_server": 6,
}

// scope reads a block of directives into specs.
func (c *cadConv) scope(ds []*caddyfile.Directive, sc scopeCtx) []*spec {
	matchers := map[string]cond{}
	bad := map[string]bool{}
	for _, d := range ds {
		if strings.HasPrefix(d.Name, "@") {
			m, ok := c.named(d, sc)
			if ok {
				matchers[d.Name] = m
			} else {
				bad[d.Name] = true
			}
		}
	}
	var specs []*spec
	var handles []*spec
	for _, d := range ds {
		if strings.HasPrefix(d.Name, "@") {
			continue
		}
		m, args, ok := c.matcher(d, sc, matchers, bad)
		if !ok {
			continue
		}
		switch d.Name {
		case "root":
			if len(args) == 1 && m.plain() && m.prefix == sc.prefix {
				sc.root = c.abs(args[0])
			} else if len(args) == 1 && m.plain() {
				sc.mw = append(sc.mw, mware{d, m})
			} else {
				c.note(d, "only root [PATH-MATCHER] DIR is carried over")
			}
		case "encode":
			sc.encode = encodings(args, d.Block)
		case "try_files":
			sc.try = d
		case "header", "basicauth", "basic_auth", "request_header", "rewrite", "uri":
			sc.mw = append(sc.mw, mware{d, m})
		case "redir", "respond", "reverse_proxy", "php_fastcgi", "file_server":
			specs = append(specs, &spec{d: d, m: m, order: directiveOrder[d.Name]})
		case "handle", "handle_path", "route":
			inner := sc
			inner.mw = append([]mware(nil), sc.mw...)
			inner.prefix, inner.base = m.prefix, m
			if m.exact != "" || m.regex != "" {
				c.note(d, "only a path prefix (/path/*) can select a handle block in gale")
				continue
			}
			if d.Name == "handle_path" {
				inner.strip = m.prefix
			}
			if d.Name == "route" {
				c.note(d, "route keeps its directives in written order in Caddy; they are carried in Caddy's standard order")
			}
			for _, s := range c.scope(d.Block, inner) {
				s.order = directiveOrder["handle"]
				handles = append(handles, s)
			}
		case "tls", "import":
		case "log", "skip_log":
			c.note(d, "see access_log in gale's config (one log for the server)")
		default:
			c.note(d, "not carried over")
		}
	}
	for _, s := range specs {
		if s.strip == "" {
			s.strip = sc.strip
		}
		s.mw = append(s.mw, sc.mw...)
		s.root, s.encode, s.try = s2(s.root, sc.root), sc.encode, sc.try
	}
	specs = append(specs, handles...)
	sort.SliceStable(specs, func(i, j int) bool {
		if specs[i].order != specs[j].order {
			return specs[i].order < specs[j].order
		}
		return specificity(specs[i].m) > specificity(specs[j].m)
	})
	return specs
}

// specificity ranks path matchers as Caddy sorts directives of one name:
// the longer path first.
func specificity(m cond) int {
	return len(m.exact)*2 + len(m.prefix)*2 + len(m.regex)
}

func encodings(args []string, block []*caddyfile.Directive) []string {
	var out []string
	for _, a := range args {
		if a == "gzip" || a == "zstd" {
			out = append(out, a)
		}
	}
	for _, b := range block {
		if b.Name == "gzip" || b.Name == "zstd" {
			out = append(out, b.Name)
		}
	}
	return out
}

// matcher splits d's matcher token (first argument) from its arguments.
func (c *cadConv) matcher(d *caddyfile.Directive, sc scopeCtx, named map[string]cond, bad map[string]bool) (cond, []string, bool) {
	args := d.Args
	m := sc.base
	m.prefix = sc.prefix
	if len(args) == 0 {
		return m, args, true
	}
	a := args[0]
	switch {
	case strings.HasPrefix(a, "@"):
		if bad[a] {
			c.note(d, "uses matcher %s, which gale cannot express; the directive is left out", a)
			return m, nil, false
		}
		nm, ok := named[a]
		if !ok {
			c.note(d, "matcher %s is not defined", a)
			return m, nil, false
		}
		return nm, args[1:], true
	case a == "*":
		return m, args[1:], true
	case strings.HasPrefix(a, "/"):
		pm, ok := c.pathMatcher(d, a, sc)
		return pm, args[1:], ok
	}
	return m, args, true
}

// pathMatcher translates one Caddy path pattern: /exact, /prefix/*,
// /prefix* (noted), *.ext and other globs (as regexes).
func (c *cadConv) pathMatcher(d *caddyfile.Directive, p string, sc scopeCtx) (cond, bool) {
	m := sc.base
	m.prefix = sc.prefix
	switch star := strings.Count(p, "*"); {
	case star == 0:
		m.exact = p
		m.prefix = p[:strings.LastIndexByte(p, '/')+1]
	case star == 1 && strings.HasSuffix(p, "/*"):
		m.prefix = p[:len(p)-1]
	case star == 1 && strings.HasSuffix(p, "*") && strings.HasPrefix(p, "/"):
		m.prefix = p[:len(p)-1]
		c.note(d, "gale's prefix %s matches %s and %s/...; Caddy's %s also matched paths such as %sx", m.prefix, m.prefix, m.prefix, p, m.prefix)
	default:
		m.regex = globRegex(p)
	}
	return m, true
}

// globRegex turns a path glob into an RE2 regex for the whole path.
func globRegex(g string) string {
	parts := strings.Split(g, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return strings.Join(parts, ".*")
}

// named reads a named matcher: "@name matcher args" or "@name { ... }".
func (c *cadConv) named(d *caddyfile.Directive, sc scopeCtx) (cond, bool) {
	lines := d.Block
	if len(d.Args) > 0 {
		lines = append([]*caddyfile.Directive{{Name: d.Args[0], Args: d.Args[1:], File: d.File, Line: d.Line}}, lines...)
	}
	m := sc.base
	m.prefix = sc.prefix
	for _, l := range lines {
		switch l.Name {
		case "path":
			if len(l.Args) != 1 {
				c.note(d, "gale takes one path pattern per matcher")
				return m, false
			}
			pm, _ := c.pathMatcher(d, l.Args[0], sc)
			m.exact, m.prefix, m.regex = pm.exact, pm.prefix, pm.regex
		case "path_regexp":
			re := l.Args[len(l.Args)-1]
			if len(l.Args) == 2 {
				c.note(d, "the regex's name %s is dropped; gale names groups {1}, {name}", l.Args[0])
			}
			g, why := galeRegex(re, false)
			if why != "" {
				c.note(d, "%s", why)
				return m, false
			}
			m.regex = g
		case "method":
			m.methods = append(m.methods, l.Args...)
		case "header":
			if len(l.Args) != 2 {
				return m, false
			}
			if m.headers == nil {
				m.headers = newObj()
			}
			m.headers.set(l.Args[0], l.Args[1])
		case "query":
			for _, q := range l.Args {
				k, v, _ := strings.Cut(q, "=")
				if m.query == nil {
					m.query = newObj()
				}
				m.query.set(k, v)
			}
		case "remote_ip", "client_ip":
			for _, a := range l.Args {
				if a != "forwarded" {
					m.remote = append(m.remote, a)
				}
			}
		default:
			c.note(d, "matcher %s has no equivalent in gale", l.Name)
			return m, false
		}
	}
	return m, true
}

// emit writes the specs of one site for host: one route each, in Caddy's
// order; a spec that an earlier one always takes first, or that gale
// could not order against it, is left out with a note.
func (c *cadConv) emit(specs []*spec, host string) {
	specs = split(specs)
	taken := map[string]*spec{}
	php := map[string]bool{}
	for _, s := range specs {
		k := s.m.key()
		if prev, ok := taken[k]; ok && (prev.m.plain() || s.d.Name == "file_server" && prev.d.Name == "php_fastcgi") {
			if s.d.Name == "file_server" && prev.d.Name == "php_fastcgi" {
				continue // the php route serves the files
			}
			c.note(s.d, "never used: %s at line %d takes these requests first", prev.d.Name, prev.d.Line)
			continue
		}
		if covered := c.shadowed(s, taken); covered != nil {
			c.note(s.d, "never used: %s at line %d takes these requests first in Caddy's order", covered.d.Name, covered.d.Line)
			continue
		}
		if _, ok := taken[k]; !ok {
			taken[k] = s
		}
		if s.d.Name == "php_fastcgi" {
			php[s.m.prefix] = true
		}
		r := newObj()
		r.origin = Note{File: s.d.File, Line: s.d.Line, Directive: s.d.Name}
		r.comment = fmt.Sprintf("%s %s %s", s.d.Pos(), s.d.Name, strings.Join(s.d.Args, " "))
		r.comment = strings.TrimSpace(r.comment)
		if host != "" {
			r.set("host", host)
		}
		r.set("path", s.m.prefix)
		c.matchObj(r, s.m)
		c.middleware(r, s)
		c.handle(r, s)
		c.routes = append(c.routes, r)
	}
}

// shadowed finds an earlier plain spec whose prefix contains s's path: in
// Caddy it takes all of s's requests first, while gale would prefer s's
// longer prefix or its matchers.
func (c *cadConv) shadowed(s *spec, taken map[string]*spec) *spec {
	for _, t := range taken {
		if t.m.plain() && t.order < s.order && strings.HasPrefix(s.m.prefix, t.m.prefix) {
			return t
		}
	}
	return nil
}

func (c *cadConv) matchObj(r *obj, m cond) {
	mo := newObj()
	if m.exact != "" {
		mo.set("path", m.exact)
	}
	if m.regex != "" {
		mo.set("path_regex", m.regex)
	}
	if m.methods != nil {
		mo.set("methods", m.methods)
	}
	if m.headers != nil {
		mo.set("headers", m.headers)
	}
	if m.query != nil {
		mo.set("query", m.query)
	}
	if m.remote != nil {
		mo.set("remote", m.remote)
	}
	if len(mo.keys) > 0 {
		r.set("match", mo)
	}
}

// covers reports whether middleware matcher mw applies to every request
// of route condition m.
func covers(mw, m cond) bool {
	if !mw.pathOnly() {
		return false
	}
	if mw.exact != "" {
		return m.exact == mw.exact
	}
	return strings.HasPrefix(m.prefix, mw.prefix) || (m.exact != "" && strings.HasPrefix(m.exact, mw.prefix))
}

func placeholderRe() *regexp.Regexp { return regexp.MustCompile(`\{[A-Za-z0-9_.\-]+\}`) }
