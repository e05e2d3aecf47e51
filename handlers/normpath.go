package handlers

import (
	"strings"

	"gale/codec"
)

// The normal form of a request path. Routing, header rules, the static
// handler, redirects and the reverse proxy all read one spelling of the
// path, computed once per request by Router.Serve (Ctx.Path), so that no
// spelling of a path reaches a route, a file or an upstream that another
// spelling of the same path was kept from. The rules, in the order they
// apply to each segment (RFC 3986 section 6.2.2):
//
//   - a percent-escape of an unreserved character (ALPHA DIGIT "-" "." "_"
//     "~", RFC 3986 section 2.3) is decoded: "/%70rivate" is "/private";
//   - every other escape stays encoded, with its hex digits in upper case
//     (section 6.2.2.1): "%2a" is "%2A";
//   - bytes the path grammar does not allow raw ('"', '<', '>', '^', '`',
//     '{', '|', '}' and bytes >= 0x80, which the codec accepts from lenient
//     clients) are percent-encoded, so the normal form is a valid RFC 3986
//     path;
//   - repeated slashes are merged ("//private" is "/private"), before dot
//     segments are resolved;
//   - "." and ".." segments are resolved (section 5.2.4): "/a/./b" is
//     "/a/b", "/a/b/.." is "/a/"; a ".." that would climb above "/" is a
//     bad request (400), never clamped to "/".
//
// Spellings that a server behind gale (or a file system) could read
// differently from gale are bad requests (400) rather than guesses:
//
//   - a NUL byte or a backslash, raw or encoded ("%00", "\", "%5C"):
//     Windows servers and IIS read a backslash as a separator;
//   - a "." or ".." segment followed by a path parameter ("/..;/admin",
//     "/.;x/"): Tomcat, Jetty and Spring drop path parameters before they
//     resolve dot segments, so "/public/..;/admin" is their "/admin" while
//     others read a segment named "..;";
//   - an encoded slash ("%2F") next to a slash, raw or encoded, at either
//     end of a segment, or next to a "." or ".." ("/a%2F%2Fb", "/%2Fa",
//     "/a/..%2Fb"), a segment holding both an encoded slash and a path
//     parameter, and a ".." after a segment with an encoded slash
//     ("/a%2Fb/.."): a server that decodes "%2F" into a separator and one
//     that does not would read different segments there;
//   - bytes above 0x7F, raw or encoded, that are not well-formed UTF-8:
//     overlong forms ("%C0%AE", "%E0%80%AE") are decoded as "." by old
//     decoders, and other stray bytes (legacy Latin-1 paths) name nothing
//     two decoders agree on;
//   - a malformed escape ("%", "%4", "%zz"); the codec answers these 400
//     already.
//
// Encoded slashes and path parameters are part of the path that is
// forwarded (the wire form: Ctx.WirePath), and an encoded slash keeps the
// case of its hex digits as sent. Routing, access rules and every local
// handler read the routing form (Ctx.Path), which is the reading of the
// strictest server behind gale: an encoded slash is a separator
// ("/admin%2Fx" is "/admin/x", as Go's net/http, WSGI and nginx read it),
// and a path parameter (from a ";", raw or encoded, to the end of its
// segment) is dropped ("/admin;jsessionid=1/x" is "/admin/x", as Tomcat,
// Jetty and Spring read it), a segment left empty being merged. So no
// spelling reaches an upstream's "/admin/" without passing the "/admin/"
// route. What a route does with an encoded slash (keep it, refuse it,
// forward it decoded) is its encoded_slashes setting (router.go).
//
// Escapes are decoded once: "%252e" stays "%252e" (a literal "%2e"),
// which only a server that decodes twice reads as ".".
//
// Normalising never lengthens a path by more than three times (a raw byte
// becomes an escape); it appends to Ctx.Scratch, reused between requests,
// or returns the request's own bytes when they are already in normal
// form, so it allocates nothing in steady state.

// Classes of path bytes (pathClass).
const (
	pcUnreserved = 1 << iota // ALPHA DIGIT "-" "." "_" "~": decoded when escaped
	pcRaw                    // pchar but pct-encoded (unreserved, sub-delims, ":", "@"): kept raw when sent raw
)

// pathClass classifies the bytes of a path segment (RFC 3986 section 3.3):
//
//	pchar       = unreserved / pct-encoded / sub-delims / ":" / "@"
//	unreserved  = ALPHA / DIGIT / "-" / "." / "_" / "~"
//	sub-delims  = "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="
var pathClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		if 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || strings.IndexByte("-._~", b) >= 0 {
			t[c] = pcUnreserved | pcRaw
		} else if strings.IndexByte("!$&'()*+,;=:@", b) >= 0 {
			t[c] = pcRaw
		}
	}
	return t
}()

// normalizePath sets c.Path to the routing form of c.Req.Path and
// c.WirePath to its wire form when that differs: the request's own bytes
// when they are normal already, else bytes appended to c.Scratch (which
// handlers append above). It reports false, leaving c.Path nil and
// c.Scratch as it was, when the path is refused (a bad request).
func (c *Ctx) normalizePath() bool {
	p := c.Req.Path
	c.WirePath, c.slashes = nil, false
	if isNormalPath(p) {
		c.Path = p
		return true
	}
	mark := len(c.Scratch)
	var (
		ok    bool
		flags uint8
	)
	c.Scratch, flags, ok = appendNormal(c.Scratch, p)
	if !ok {
		c.Path = nil
		return false
	}
	c.Path = c.scratchSince(mark)
	if flags != 0 {
		c.setWire(c.Path, flags)
	}
	return true
}

// setWire makes the wire form w (in c.Scratch) c.WirePath and appends
// its routing form to c.Scratch as c.Path; when the two are alike (the
// parameters were in segments a ".." removed), c.Path is w alone.
func (c *Ctx) setWire(w []byte, flags uint8) {
	at := len(c.Scratch)
	c.Scratch = appendRouting(c.Scratch, w)
	if r := c.scratchSince(at); string(r) != string(w) {
		c.Path, c.WirePath = r, w
		c.slashes = flags&segSlash != 0
		return
	}
	c.Scratch = c.Scratch[:at]
	c.Path = w
}

// isNormalPath reports whether p is in normal form without needing to be
// rewritten: it starts with "/", holds only raw pchar bytes and slashes
// (no escapes) but ";" (a path parameter makes a routing form apart), no
// empty segment but a final one, and no "." or ".." segment. It is the
// fast path of
// normalizePath; a normal path with escapes ("/a%20b") takes the slow
// path and comes out unchanged.
func isNormalPath(p []byte) bool {
	if len(p) == 0 || p[0] != '/' {
		return false
	}
	start := 1 // where the current segment begins
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			if pathClass[p[i]]&pcRaw == 0 || p[i] == ';' {
				return false
			}
			continue
		}
		seg := p[start:i]
		if len(seg) == 0 && i < len(p) || isDotSegment(seg) {
			return false
		}
		start = i + 1
	}
	return true
}

// AppendNormalPath appends the wire form of the request path p (see the
// rules above) to dst. ok is false when p is refused: it does not start
// with "/", or breaks one of the rules; dst is then returned unchanged.
// The result is at most 3*len(p) bytes longer than dst. AppendRoutingPath
// turns it into the routing form.
func AppendNormalPath(dst, p []byte) (_ []byte, ok bool) {
	dst, _, ok = appendNormal(dst, p)
	return dst, ok
}

// What a segment of a wire form holds besides pchar (appendSegment).
const (
	segSlash uint8 = 1 << iota // an encoded slash
	segParam                   // a path parameter (";", raw or encoded)
)

// appendNormal is AppendNormalPath, reporting too which of segSlash and
// segParam the path holds (0 when the wire form is the routing form).
func appendNormal(dst, p []byte) (_ []byte, flags uint8, ok bool) {
	if len(p) == 0 || p[0] != '/' {
		return dst, 0, false
	}
	base := len(dst)
	dst = append(dst, '/')
	for i := 0; i < len(p); {
		for i < len(p) && p[i] == '/' {
			i++
		}
		if i == len(p) {
			break
		}
		s := len(dst)
		var f uint8
		dst, i, f, ok = appendSegment(dst, p, i)
		if !ok {
			return dst[:base], 0, false
		}
		flags |= f
		seg := dst[s:]
		switch {
		case len(seg) == 1 && seg[0] == '.':
			dst = dst[:s]
		case len(seg) == 2 && seg[0] == '.' && seg[1] == '.':
			if s == base+1 {
				return dst[:base], 0, false // above "/"
			}
			k := s - 2 // the last byte of the previous segment
			for dst[k] != '/' {
				k--
			}
			if flags&segSlash != 0 && hasEncodedSlash(dst[k+1:s]) {
				return dst[:base], 0, false // "/a%2Fb/..": "/" or "/a/"?
			}
			dst = dst[:k+1]
		default:
			if i < len(p) {
				dst = append(dst, '/')
			}
		}
	}
	return dst, flags, true
}

// appendSegment appends the normal form of the segment of p that starts
// at i (up to the next raw "/" or the end) to dst, and returns where it
// ended and whether it holds an encoded slash or a path parameter. ok is
// false when the segment holds a malformed escape, a NUL, a backslash,
// bytes above 0x7F that are not well-formed UTF-8, a "." or ".." before
// a path parameter, or an encoded slash that is not between two
// non-empty pieces other than "." and ".." or that shares the segment
// with a path parameter.
func appendSegment(dst, p []byte, i int) (_ []byte, end int, flags uint8, ok bool) {
	var u utf8Seq
	seg, piece := len(dst), len(dst) // where the segment and its current piece (between encoded slashes) begin
	for i < len(p) && p[i] != '/' {
		b, esc := p[i], false
		if b == '%' {
			if i+2 >= len(p) {
				return dst, i, 0, false
			}
			hi, ok1 := unhex(p[i+1])
			lo, ok2 := unhex(p[i+2])
			if !ok1 || !ok2 {
				return dst, i, 0, false
			}
			b, esc = hi<<4|lo, true
			i += 3
		} else {
			i++
		}
		if !u.next(b) || b == 0 || b == '\\' {
			return dst, i, 0, false
		}
		switch {
		case b == ';' && flags&segParam == 0:
			if flags&segSlash != 0 || isDotSegment(dst[seg:]) {
				return dst, i, 0, false
			}
			flags |= segParam
		case esc && b == '/':
			if flags&segParam != 0 || !goodPiece(dst[piece:]) {
				return dst, i, 0, false
			}
			flags |= segSlash
			dst = append(dst, p[i-3:i]...) // as sent, hex digits in either case
			piece = len(dst)
			continue
		}
		k := pathClass[b]
		if k&pcUnreserved != 0 || !esc && k&pcRaw != 0 {
			dst = append(dst, b)
		} else {
			dst = codec.AppendPercent(dst, b)
		}
	}
	if flags&segSlash != 0 && !goodPiece(dst[piece:]) {
		return dst, i, 0, false
	}
	return dst, i, flags, u.need == 0
}

// hasEncodedSlash reports whether a part of a wire form holds an encoded
// slash.
func hasEncodedSlash(w []byte) bool {
	for i := 0; i < len(w); {
		n, kind := wireUnit(w, i)
		if kind == unitSep && n == 3 {
			return true
		}
		i += n
	}
	return false
}

// goodPiece reports whether a piece of a segment next to an encoded slash
// is one that every server reads alike: not empty, not "." nor "..".
func goodPiece(piece []byte) bool {
	return len(piece) > 0 && !isDotSegment(piece)
}

// AppendRoutingPath appends the routing form of the wire form w (what
// AppendNormalPath gives) to dst: each encoded slash a "/", each path
// parameter dropped, and a segment that held only a parameter merged
// with the next ("/;x/a" is "/a"; "/a/;x" is "/a/").
func AppendRoutingPath(dst, w []byte) []byte {
	return appendRouting(dst, w)
}

func appendRouting(dst, w []byte) []byte {
	dst = append(dst, '/')
	param := false
	for i := 1; i < len(w); {
		n, kind := wireUnit(w, i)
		switch {
		case kind == unitSep:
			param = false
			if dst[len(dst)-1] != '/' {
				dst = append(dst, '/')
			}
		case kind == unitParam || param:
			param = true
		default:
			dst = append(dst, w[i:i+n]...)
		}
		i += n
	}
	return dst
}

// Kinds of unit of a wire form (wireUnit).
const (
	unitByte  = iota // a byte or an escape, part of a segment
	unitSep          // "/", raw or encoded: a separator in the routing form
	unitParam        // ";", raw or encoded: a path parameter begins
)

// wireUnit returns the length and kind of the unit of the wire form w at
// i: an escape (3 bytes) or a byte.
func wireUnit(w []byte, i int) (n, kind int) {
	switch w[i] {
	case '/':
		return 1, unitSep
	case ';':
		return 1, unitParam
	case '%':
		if i+2 < len(w) {
			switch {
			case w[i+1] == '2' && (w[i+2] == 'F' || w[i+2] == 'f'):
				return 3, unitSep
			case w[i+1] == '3' && (w[i+2] == 'B' || w[i+2] == 'b'):
				return 3, unitParam
			}
		}
		return 3, unitByte
	}
	return 1, unitByte
}

// WireOffset returns where in the wire form w the part begins that
// follows the first n bytes of its routing form (the route's prefix,
// for a proxy that strips or rewrites it): after the separator that ends
// them, or, when they end inside a segment, after that segment's path
// parameter (and after an encoded slash that follows).
func WireOffset(w []byte, n int) int {
	if n <= 1 {
		return min(n, len(w))
	}
	r := 1 // bytes of the routing form so far
	last := byte('/')
	param := false
	i := 1
	for i < len(w) && r < n {
		k, kind := wireUnit(w, i)
		switch {
		case kind == unitSep:
			param = false
			if last != '/' {
				r, last = r+1, '/'
			}
		case kind == unitParam || param:
			param = true
		default:
			r, last = r+k, w[i+k-1]
		}
		i += k
	}
	if last == '/' {
		return i
	}
	for i < len(w) {
		k, kind := wireUnit(w, i)
		if kind == unitSep {
			if k == 3 {
				i += k // an encoded slash ends the prefix as "/" would: the rest is the next segment
			}
			break
		}
		if kind != unitParam && !param {
			break
		}
		param = true
		i += k
	}
	return i
}

// isDotSegment reports whether a segment is "." or "..".
func isDotSegment(seg []byte) bool {
	switch len(seg) {
	case 1:
		return seg[0] == '.'
	case 2:
		return seg[0] == '.' && seg[1] == '.'
	}
	return false
}

// utf8Seq checks that the decoded bytes of a segment are well-formed
// UTF-8 (RFC 3629 section 4): no overlong forms, no surrogates, nothing
// above U+10FFFF, no stray continuation bytes.
type utf8Seq struct {
	need   int  // continuation bytes still expected
	lo, hi byte // the range of the next continuation byte
}

// next takes the next decoded byte and reports whether the bytes so far
// can still be well-formed.
func (u *utf8Seq) next(b byte) bool {
	if u.need > 0 {
		if b < u.lo || b > u.hi {
			return false
		}
		u.need--
		u.lo, u.hi = 0x80, 0xBF
		return true
	}
	u.lo, u.hi = 0x80, 0xBF
	switch {
	case b < 0x80:
		return true
	case b < 0xC2: // a continuation byte, or the lead of an overlong pair
		return false
	case b < 0xE0:
		u.need = 1
	case b == 0xE0:
		u.need, u.lo = 2, 0xA0
	case b == 0xED:
		u.need, u.hi = 2, 0x9F
	case b < 0xF0:
		u.need = 2
	case b == 0xF0:
		u.need, u.lo = 3, 0x90
	case b < 0xF4:
		u.need = 3
	case b == 0xF4:
		u.need, u.hi = 3, 0x8F
	default:
		return false
	}
	return true
}
