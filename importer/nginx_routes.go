package importer

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"gale/importer/nginx"
)

// loc is a location block read with its scope.
type loc struct {
	d     *nginx.Directive
	mod   string // "", "=", "^~", "~", "~*"
	path  string
	scope *scope
	regex string // the RE2 form for gale, when mod is ~ or ~*
}

// serverRoutes emits the routes of server sv for one host.
func (c *ngxConv) serverRoutes(sv *nginx.Directive, s *scope, locDs []*nginx.Directive, host string) {
	first := host == "" || c.firstHost(sv, host)
	quiet := !first // notes are given once, for the first host
	if quiet {
		saved := len(c.notes)
		defer func() { c.notes = c.notes[:saved] }()
	}
	if s.ret != nil {
		r := c.route(sv, host, "/", fmt.Sprintf("%s server: return", sv.Pos()))
		c.handler(r, s, "/", false)
		for _, d := range locDs {
			c.note(d, "location", "never used: the server's return (line %d) answers every request first", s.ret.Line)
		}
		return
	}
	var locs []*loc
	for _, d := range locDs {
		if l := c.readLoc(d, s); l != nil {
			locs = append(locs, l)
		}
	}
	c.fcgiPass = ""
	for _, l := range locs {
		if l.scope.fastcgi != nil && strings.Contains(l.path, "php") && c.fcgiPass == "" {
			c.fcgiPass = c.fcgiAddr(l.scope.fastcgi)
		}
	}
	hasRoot := false
	var prefixes []string
	for _, l := range locs {
		if l.mod == "" || l.mod == "^~" {
			if l.path == "/" {
				hasRoot = true
			}
		}
	}
	if !hasRoot {
		// Requests no location takes are served by the server's own
		// settings.
		locs = append(locs, &loc{d: sv, path: "/", scope: s.inherit(sv)})
	}
	var regexes []*loc
	for _, l := range locs {
		switch l.mod {
		case "~", "~*":
			regexes = append(regexes, l)
		case "=":
			// The route's prefix is the exact path's directory, so the
			// static handler sees the file's name after it.
			dir := l.path[:strings.LastIndexByte(l.path, '/')+1]
			r := c.route(l.d, host, dir, locComment(l))
			r.sub("match").set("path", l.path)
			c.handler(r, l.scope, dir, false)
		default:
			rewrites := c.rewriteRoute(l, host)
			r := c.route(l.d, host, l.path, locComment(l))
			c.handler(r, l.scope, l.path, false)
			switch {
			case rewrites && len(locs) > 0 && hasRegex(locs):
				c.note(l.d, "location", "regex locations are not applied under %s, whose rewrite is a regex route of its own", l.path)
			case l.mod != "^~":
				prefixes = append(prefixes, l.path)
			}
		}
	}
	c.regexRoutes(regexes, prefixes, host)
}

func (c *ngxConv) firstHost(sv *nginx.Directive, host string) bool {
	hs := c.hostsQuiet(sv)
	return len(hs) > 0 && hs[0] == host
}

func (c *ngxConv) hostsQuiet(sv *nginx.Directive) []string {
	n := len(c.notes)
	hs := c.hosts(sv, false)
	c.notes = c.notes[:n]
	return hs
}

func locComment(l *loc) string {
	if l.d.Name != "location" {
		return fmt.Sprintf("%s server (requests no location takes)", l.d.Pos())
	}
	m := l.mod
	if m != "" {
		m += " "
	}
	return fmt.Sprintf("%s location %s%s", l.d.Pos(), m, l.d.Args[len(l.d.Args)-1])
}

// readLoc reads a location's modifier, path and scope.
func (c *ngxConv) readLoc(d *nginx.Directive, s *scope) *loc {
	l := &loc{d: d}
	switch len(d.Args) {
	case 1:
		l.path = d.Args[0]
		if strings.HasPrefix(l.path, "@") {
			c.note(d, "location", "named location %s: gale has no internal redirects; it is left out", l.path)
			return nil
		}
		if strings.HasPrefix(l.path, "=") || strings.HasPrefix(l.path, "~") {
			c.note(d, "location", "write the modifier apart from the path (location = /x)")
			return nil
		}
	case 2:
		l.mod, l.path = d.Args[0], d.Args[1]
	default:
		c.note(d, "location", "expected a modifier and a path")
		return nil
	}
	l.scope = s.inherit(d)
	inner := c.apply(l.scope, d.Block, false)
	for _, n := range inner {
		c.note(n, "location", "nested location: gale routes are flat; write it as a location of its own")
	}
	switch l.mod {
	case "", "^~", "=":
		if !strings.HasPrefix(l.path, "/") {
			c.note(d, "location", "path %s does not start with /", l.path)
			return nil
		}
		if l.mod != "=" && l.path != "/" && !strings.HasSuffix(l.path, "/") {
			c.note(d, "location", "gale's prefix %s matches %s and %s/...; nginx's also matched paths such as %sx", l.path, l.path, l.path, l.path)
		}
	case "~", "~*":
		re, why := galeRegex(l.path, l.mod == "~*")
		if why != "" {
			c.note(d, "location", "%s", why)
			return nil
		}
		l.regex = re
	default:
		c.note(d, "location", "unknown modifier %s", l.mod)
		return nil
	}
	return l
}

// galeRegex turns an nginx (PCRE, unanchored) location regex into one
// gale matches against the whole path.
func galeRegex(re string, fold bool) (string, string) {
	core, pre, suf := re, ".*", ".*"
	if !strings.Contains(re, "|") {
		if strings.HasPrefix(core, "^") {
			core, pre = core[1:], ""
		}
		if strings.HasSuffix(core, "$") && !strings.HasSuffix(core, `\$`) {
			core, suf = core[:len(core)-1], ""
		}
	}
	out := pre + "(?:" + core + ")" + suf
	if pre == "" && suf == "" {
		out = core
	}
	if fold {
		out = "(?i)" + out
	}
	if _, err := regexp.Compile("^(?:" + out + ")$"); err != nil {
		return "", fmt.Sprintf("regular expression %s is not RE2 (gale's syntax has no look-around or back-references): %v", re, err)
	}
	return out, ""
}

// regexRoutes emits the regex locations. nginx tries them in order after
// choosing the longest prefix (unless that prefix is ^~ or exact), and the
// first that matches wins over the prefix. gale tries path_regex routes
// before the plain route of the same prefix, so each regex location is
// emitted once under every prefix it can take requests from. Two regex
// routes of one prefix are ordered by their number of matcher kinds: the
// earlier one gets remote: [0.0.0.0/0, ::/0] (every client), which ranks
// it first; a third that could overlap both cannot be ordered.
func (c *ngxConv) regexRoutes(regexes []*loc, prefixes []string, host string) {
	sort.Slice(prefixes, func(i, j int) bool { return len(prefixes[i]) < len(prefixes[j]) })
	var kept []*loc
	ranked := map[*loc]bool{}
	for _, l := range regexes {
		overlaps := 0
		for _, k := range kept {
			if literalsOverlap(k.regex, l.regex) {
				overlaps++
			}
		}
		switch {
		case overlaps == 0:
		case overlaps == 1 && len(kept) == 1 && !ranked[kept[0]]:
			ranked[kept[0]] = true
		default:
			c.note(l.d, "location", "gale can order at most two overlapping regex locations; %s is left out", l.path)
			continue
		}
		kept = append(kept, l)
	}
	for _, p := range prefixes {
		for _, l := range kept {
			r := c.route(l.d, host, p, locComment(l)+under(p))
			m := r.sub("match")
			m.set("path_regex", l.regex)
			if ranked[l] {
				m.set("remote", []string{"0.0.0.0/0", "::/0"})
			}
			c.handler(r, l.scope, p, true)
		}
	}
}

func under(p string) string {
	if p == "/" {
		return ""
	}
	return ", for paths under " + p
}

// literalsOverlap reports whether gale could see two regexes match one
// path, judging as it does by their literal prefixes.
func literalsOverlap(a, b string) bool {
	la := literal(a)
	lb := literal(b)
	return strings.HasPrefix(la, lb) || strings.HasPrefix(lb, la)
}

func literal(re string) string {
	r, err := regexp.Compile("^(?:" + re + ")$")
	if err != nil {
		return ""
	}
	l, _ := r.LiteralPrefix()
	return l
}

// route starts a route: its comment, host and path.
func (c *ngxConv) route(at *nginx.Directive, host, path, comment string) *obj {
	r := newObj()
	r.comment = comment
	r.origin = Note{File: at.File, Line: at.Line, Directive: at.Name}
	if host != "" {
		r.set("host", host)
	}
	r.set("path", path)
	c.routes = append(c.routes, r)
	return r
}

func hasRegex(locs []*loc) bool {
	for _, l := range locs {
		if l.mod == "~" || l.mod == "~*" {
			return true
		}
	}
	return false
}

// rewriteRoute emits a location's rewrite as a route of its own, with the
// rewrite's regex as its path_regex, before the location's plain route
// (which serves the paths the regex does not match, as nginx does).
func (c *ngxConv) rewriteRoute(l *loc, host string) bool {
	if len(l.scope.rewrites) == 0 {
		return false
	}
	rs := *l.scope
	rr := c.route(l.d, host, l.path, locComment(l)+": its rewrite")
	if !c.rewrites(rr, &rs) {
		c.routes = c.routes[:len(c.routes)-1]
		return false
	}
	rs.rewrites = nil
	c.handler(rr, &rs, l.path, false)
	return true
}
