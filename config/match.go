package config

import (
	"fmt"
	"net/netip"
	"net/textproto"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Match holds a route's request matchers beside host and path: a request
// takes the route only when every matcher that is set holds. The zero
// Match matches every request.
type Match struct {
	Methods   []string       // upper case, no two alike; GET implies HEAD; nil = any method
	Path      string         // an exact normal path under the route's path; "" = none
	PathRegex *Regex         // the whole normal path matches it; nil = none
	Headers   []FieldMatch   // request header fields, names canonical, sorted by name
	Query     []FieldMatch   // query parameters (percent-decoded, "+" a space), sorted by name
	Remote    []netip.Prefix // the client address (see handlers.ClientAddr) lies in one of them; masked
}

// FieldMatch is one header or query matcher: the first field (or query
// parameter) named Name is present and has one of Values (compared
// exactly, case-sensitively), or any value when Values is nil (written
// "*").
type FieldMatch struct {
	Name   string
	Values []string
}

// Regex is a compiled match.path_regex.
type Regex struct {
	Raw     string         // as written
	Re      *regexp.Regexp // Raw anchored at both ends: ^(?:Raw)$
	Literal string         // a literal prefix of every path Re matches ("" when it has none)
}

// String returns the regular expression as written.
func (r *Regex) String() string { return r.Raw }

// maxRegex bounds a path_regex's length. RE2 runs in linear time whatever
// the expression; the bound only keeps compiled programs small.
const maxRegex = 1024

// Kinds is the number of matcher kinds that are set, the second key of the
// route precedence (see RoutesConflict).
func (m *Match) Kinds() int {
	n := 0
	for _, set := range []bool{m.Methods != nil, m.Path != "", m.PathRegex != nil, m.Headers != nil, m.Query != nil, m.Remote != nil} {
		if set {
			n++
		}
	}
	return n
}

// Groups returns the number of capture groups of the path_regex and their
// names (regexp.SubexpNames), for templates.
func (m *Match) Groups() (int, []string) {
	if m.PathRegex == nil {
		return 0, nil
	}
	return m.PathRegex.Re.NumSubexp(), m.PathRegex.Re.SubexpNames()
}

// RoutesConflict reports whether a and b could both match one request
// while the route precedence cannot order them: they have the same host
// and path, the same exact path, both or neither have a path_regex, and
// the same number of matcher kinds, and no matcher tells them apart for
// certain. A loaded Config never holds two such routes.
func RoutesConflict(a, b *Route) bool {
	if a.Host != b.Host || a.Path != b.Path {
		return false
	}
	ma, mb := &a.Match, &b.Match
	if ma.Path != mb.Path || (ma.PathRegex == nil) != (mb.PathRegex == nil) || ma.Kinds() != mb.Kinds() {
		return false
	}
	return !disjoint(ma, mb)
}

// disjoint reports whether no request can satisfy both a and b: some
// matcher kind set on both admits no common request.
func disjoint(a, b *Match) bool {
	if a.Methods != nil && b.Methods != nil && !slices.ContainsFunc(impliedMethods(a.Methods), func(m string) bool {
		return slices.Contains(impliedMethods(b.Methods), m)
	}) {
		return true
	}
	if a.PathRegex != nil && b.PathRegex != nil {
		pa, pb := a.PathRegex.Literal, b.PathRegex.Literal
		if !strings.HasPrefix(pa, pb) && !strings.HasPrefix(pb, pa) {
			return true
		}
	}
	if fieldsDisjoint(a.Headers, b.Headers) || fieldsDisjoint(a.Query, b.Query) {
		return true
	}
	if a.Remote != nil && b.Remote != nil && !slices.ContainsFunc(a.Remote, func(p netip.Prefix) bool {
		return slices.ContainsFunc(b.Remote, p.Overlaps)
	}) {
		return true
	}
	return false
}

// impliedMethods adds HEAD to a list holding GET.
func impliedMethods(ms []string) []string {
	if slices.Contains(ms, "GET") && !slices.Contains(ms, "HEAD") {
		return append(slices.Clip(ms), "HEAD")
	}
	return ms
}

// fieldsDisjoint reports whether a field both lists name must have values
// of which none is common. A matcher reads the first field (or query
// parameter) of its name only, so a request repeating it cannot satisfy
// both.
func fieldsDisjoint(a, b []FieldMatch) bool {
	for _, fa := range a {
		for _, fb := range b {
			if fa.Name != fb.Name || fa.Values == nil || fb.Values == nil {
				continue
			}
			if !slices.ContainsFunc(fa.Values, func(v string) bool { return slices.Contains(fb.Values, v) }) {
				return true
			}
		}
	}
	return false
}

// match decodes a route's match section. groups of the route's other
// keys come from the returned Match's path_regex.
func (d *decoder) match(n *yaml.Node, path, prefix string) Match {
	var m Match
	s := d.section(n, path, matchKeys.names()...)
	if s == nil {
		return m
	}
	if v := s.get("methods"); v != nil {
		m.Methods = d.methods(v, join(path, "methods"))
	}
	if v, p, ep, ok := d.strKey(s, path, "path"); ok {
		switch msg := checkRoutePath(ep); {
		case msg != "":
			d.errorf(deref(v), p, "%s", msg)
		case prefix != "" && !underPrefix(ep, prefix):
			d.errorf(deref(v), p, "exact path %s is not under the route's path %s, so it would never match; write a path that starts with it", quote(ep), quote(prefix))
		default:
			m.Path = ep
		}
	}
	if v, p, raw, ok := d.strKey(s, path, "path_regex"); ok {
		if m.Path != "" {
			d.errorf(deref(v), p, "path and path_regex both match the path; use one")
		} else if re, msg := CompileRegex(raw); msg != "" {
			d.errorf(deref(v), p, "%s", msg)
		} else {
			m.PathRegex = re
		}
	}
	if v := s.get("headers"); v != nil {
		m.Headers = d.fieldMatches(v, join(path, "headers"), true)
	}
	if v := s.get("query"); v != nil {
		m.Query = d.fieldMatches(v, join(path, "query"), false)
	}
	if v := s.get("remote"); v != nil {
		m.Remote = d.prefixes(v, join(path, "remote"))
		if m.Remote != nil && len(m.Remote) == 0 {
			d.errorf(deref(v), join(path, "remote"), `expected at least one CIDR, e.g. ["10.0.0.0/8"]`)
		}
	}
	return m
}

// underPrefix reports whether the normal path p is matched by the route
// path prefix: "/a/" matches its subtree, "/a" matches "/a" and "/a/...".
func underPrefix(p, prefix string) bool {
	if !strings.HasPrefix(p, prefix) {
		return false
	}
	return strings.HasSuffix(prefix, "/") || len(p) == len(prefix) || p[len(prefix)] == '/'
}

// CompileRegex compiles a path_regex: RE2 syntax, anchored at both ends,
// matched against the normal path. The message is "" on success.
func CompileRegex(raw string) (*Regex, string) {
	if raw == "" {
		return nil, `expected a regular expression such as "/users/(?P<id>[0-9]+)", got ""`
	}
	if len(raw) > maxRegex {
		return nil, fmt.Sprintf("is %d bytes long; at most %d", len(raw), maxRegex)
	}
	re, err := regexp.Compile("^(?:" + raw + ")$")
	if err != nil {
		var se *syntax.Error
		msg := err.Error()
		if e, ok := err.(*syntax.Error); ok {
			se = e
			msg = string(se.Code) + ": " + quote(se.Expr)
		}
		return nil, "not a valid RE2 regular expression (" + msg + "); see https://github.com/google/re2/wiki/Syntax"
	}
	for i, name := range re.SubexpNames() {
		if i > 0 && (name == "path" || name == "query" || name == "rest") {
			return nil, fmt.Sprintf("names a group %s, which is a placeholder of its own; rename the group", quote(name))
		}
	}
	lit, _ := re.LiteralPrefix()
	return &Regex{Raw: raw, Re: re, Literal: lit}, ""
}

// methods decodes a list of request methods (tokens, upper-cased).
func (d *decoder) methods(n *yaml.Node, path string) []string {
	items, ok := d.list(n, path, "methods")
	if !ok {
		return nil
	}
	out := []string{}
	d.eachString(items, path, func(item *yaml.Node, ip, m string) {
		if m == "" || strings.IndexFunc(m, func(r rune) bool { return r > 0x7f || !isTchar(byte(r)) }) >= 0 {
			d.errorf(item, ip, "expected a method such as GET or POST, got %s", quote(m))
			return
		}
		m = strings.ToUpper(m)
		if slices.Contains(out, m) {
			d.errorf(item, ip, "method %s is listed twice", m)
			return
		}
		out = append(out, m)
	})
	if len(out) == 0 && len(items) == 0 {
		d.errorf(deref(n), path, "expected at least one method, e.g. [GET, POST]")
		return nil
	}
	return out
}

// fieldMatches decodes name -> value, list of values, or "*".
func (d *decoder) fieldMatches(n *yaml.Node, path string, header bool) []FieldMatch {
	var out []FieldMatch
	first := map[string]*yaml.Node{}
	d.eachKey(n, path, func(e entry, p, name string) {
		if header {
			if msg := checkHeaderName(name); msg != "" {
				d.errorf(e.key, p, "%s", msg)
				return
			}
			name = textproto.CanonicalMIMEHeaderKey(name)
		} else if name == "" || checkTemplateBytes(name, false) != "" || strings.ContainsAny(name, "&=") {
			d.errorf(e.key, p, `expected a query parameter name such as "page" (no "&", "=" or spaces), got %s`, quote(name))
			return
		}
		if k, dup := first[name]; dup {
			d.errorf(e.key, p, "%s is listed twice; first at line %d, column %d", quote(name), k.Line, k.Column)
			return
		}
		first[name] = e.key
		fm := FieldMatch{Name: name}
		vals := []*yaml.Node{e.val}
		if deref(e.val).Kind == yaml.SequenceNode {
			vals, _ = d.list(e.val, p, "values")
			if len(vals) == 0 {
				d.errorf(deref(e.val), p, `expected at least one value, or "*" for any value`)
				return
			}
		}
		any := false
		for i, vn := range vals {
			vp := p
			if vn != e.val {
				vp = index(p, i)
			}
			val, ok := d.str(vn, vp)
			if !ok {
				continue
			}
			if val == "*" {
				any = true
				continue
			}
			if msg := checkHeaderValue(val); msg != "" {
				d.errorf(deref(vn), vp, "%s", msg)
				continue
			}
			fm.Values = append(fm.Values, val)
		}
		if any {
			if fm.Values != nil {
				d.errorf(deref(e.val), p, `"*" matches any value; list no other values beside it`)
				return
			}
		} else if fm.Values == nil {
			return
		}
		out = append(out, fm)
	})
	slices.SortFunc(out, func(a, b FieldMatch) int { return strings.Compare(a.Name, b.Name) })
	return out
}
