package handlers

import (
	"net/netip"
	"regexp"
	"slices"

	"gale/codec"
	"gale/config"
)

// ClientAddr is the client address every access decision of a request
// reads: the remote matcher, access rules and rate-limit keys. It is the
// socket peer (IPv4-mapped IPv6 addresses as IPv4); the one place where a
// forwarded address would take its place.
func ClientAddr(c *Ctx) netip.Addr {
	return c.Remote.Addr().Unmap()
}

// matchKind names a route matcher, in the order Serve evaluates them (the
// cheap ones first); Explain reports the first that failed.
type matchKind uint8

const (
	mkNone    matchKind = iota // every matcher held
	mkPrefix                   // the route's path prefix
	mkExact                    // match.path
	mkMethod                   // match.methods
	mkRemote                   // match.remote
	mkHeader                   // match.headers
	mkQuery                    // match.query
	mkRegex                    // match.path_regex
	mkRequest                  // a matcher that needs a request, when there is none (Router.Match)
)

var matchKindNames = [...]string{"", "path prefix", "match.path", "match.methods", "match.remote", "match.headers", "match.query", "match.path_regex", "matcher"}

// String names the matcher as the config file does.
func (k matchKind) String() string { return matchKindNames[k] }

// matcher is a route's compiled config.Match. It is immutable after Build.
type matcher struct {
	kinds   int            // matcher kinds set (config.Match.Kinds)
	methods [][]byte       // accepted methods, HEAD added for GET; nil = any
	exact   []byte         // the exact path; nil = none
	re      *regexp.Regexp // anchored path_regex; nil = none
	caps    bool           // the route's templates name capture groups: record them
	headers []fieldMatcher // nil = none
	query   []fieldMatcher // nil = none
	remote  []netip.Prefix // nil = none
}

// fieldMatcher is a compiled config.FieldMatch.
type fieldMatcher struct {
	name   []byte
	nameS  string
	values [][]byte // nil = any value
}

func compileMatcher(m *config.Match, caps bool) matcher {
	out := matcher{kinds: m.Kinds(), remote: m.Remote, caps: caps}
	if m.Methods != nil {
		for _, name := range m.Methods {
			out.methods = append(out.methods, []byte(name))
		}
		if slices.Contains(m.Methods, "GET") && !slices.Contains(m.Methods, "HEAD") {
			out.methods = append(out.methods, []byte("HEAD"))
		}
	}
	if m.Path != "" {
		out.exact = []byte(m.Path)
	}
	if m.PathRegex != nil {
		out.re = m.PathRegex.Re
	}
	out.headers = compileFields(m.Headers)
	out.query = compileFields(m.Query)
	return out
}

func compileFields(fs []config.FieldMatch) []fieldMatcher {
	if fs == nil {
		return nil
	}
	out := make([]fieldMatcher, len(fs))
	for i, f := range fs {
		out[i] = fieldMatcher{name: []byte(f.Name), nameS: f.Name}
		for _, v := range f.Values {
			out[i].values = append(out[i].values, []byte(v))
		}
	}
	return out
}

// check evaluates the matchers other than the path prefix and the exact
// path (which the router compares first) against the exchange and returns
// the first that fails, or mkNone. c nil stands for a request known only
// by its path (Router.Match): matchers that read more of it fail. When a
// path_regex holds and the route's templates name its groups, it records
// them in c (capPath, caps); that costs one allocation.
func (m *matcher) check(c *Ctx, path []byte) matchKind {
	if m.kinds == 0 {
		return mkNone
	}
	if m.methods != nil || m.remote != nil || m.headers != nil || m.query != nil {
		if c == nil {
			return mkRequest
		}
		if m.methods != nil && !containsBytes(m.methods, c.Req.Method) {
			return mkMethod
		}
		if m.remote != nil && !prefixesContain(m.remote, ClientAddr(c)) {
			return mkRemote
		}
		for i := range m.headers {
			if !m.headers[i].holds(firstHeader(c.Req, m.headers[i].name)) {
				return mkHeader
			}
		}
		for i := range m.query {
			if !m.query[i].holdsQuery(c.Req.Query) {
				return mkQuery
			}
		}
	}
	if m.re != nil {
		if m.caps && c != nil {
			caps := m.re.FindSubmatchIndex(path)
			if caps == nil {
				return mkRegex
			}
			c.capPath, c.caps = path, caps
		} else if !m.re.Match(path) {
			return mkRegex
		}
	}
	return mkNone
}

func containsBytes(list [][]byte, b []byte) bool {
	for _, x := range list {
		if string(x) == string(b) {
			return true
		}
	}
	return false
}

// prefixesContain reports whether a (invalid: never) lies in one of ps.
func prefixesContain(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// firstHeader returns the value of r's first field named name (nil and
// false when there is none).
func firstHeader(r *codec.Request, name []byte) ([]byte, bool) {
	for i := range r.Headers {
		if codec.EqualFoldBytes(r.Headers[i].Name, name) {
			return r.Headers[i].Value, true
		}
	}
	return nil, false
}

// holds reports whether a field's value (present reports it was sent)
// satisfies f.
func (f *fieldMatcher) holds(v []byte, present bool) bool {
	if !present {
		return false
	}
	return f.values == nil || containsBytes(f.values, v)
}

// holdsQuery reports whether the first parameter of q named f.name
// (compared decoded) satisfies f, comparing values decoded.
func (f *fieldMatcher) holdsQuery(q []byte) bool {
	for len(q) > 0 {
		var param []byte
		param, q = cutByte(q, '&')
		name, value := cutByte(param, '=')
		if !decodedEqual(name, f.name) {
			continue
		}
		if f.values == nil {
			return true
		}
		for _, v := range f.values {
			if decodedEqual(value, v) {
				return true
			}
		}
		return false
	}
	return false
}

// cutByte splits b at the first sep (which is dropped).
func cutByte(b []byte, sep byte) (before, after []byte) {
	for i, c := range b {
		if c == sep {
			return b[:i], b[i+1:]
		}
	}
	return b, nil
}

// decodedEqual reports whether the query component raw, decoded as a form
// value ("%XX" escapes, "+" a space), is want. A malformed escape is
// compared as the bytes sent.
func decodedEqual(raw, want []byte) bool {
	j := 0
	for i := 0; i < len(raw); i++ {
		b := raw[i]
		switch b {
		case '+':
			b = ' '
		case '%':
			if i+2 < len(raw) {
				hi, ok1 := unhex(raw[i+1])
				lo, ok2 := unhex(raw[i+2])
				if ok1 && ok2 {
					b = hi<<4 | lo
					i += 2
				}
			}
		}
		if j >= len(want) || want[j] != b {
			return false
		}
		j++
	}
	return j == len(want)
}
