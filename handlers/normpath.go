package handlers

import "gale/codec"

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
//   - a ";", raw or encoded ("%3B"): Tomcat, Jetty and Spring drop path
//     parameters before they route, so "/admin;x/secret" is their
//     "/admin/secret" and "/..;/admin" their "/../admin", whatever route
//     gale matched;
//   - an encoded slash ("%2F"): Go's net/http, WSGI's PATH_INFO and
//     others decode it into a separator before they route, so
//     "/admin%2Fsecret" is their "/admin/secret" (the default of Apache's
//     AllowEncodedSlashes refuses it too);
//   - bytes above 0x7F, raw or encoded, that are not well-formed UTF-8:
//     overlong forms ("%C0%AE", "%E0%80%AE") are decoded as "." by old
//     decoders, and other stray bytes (legacy Latin-1 paths) name nothing
//     two decoders agree on;
//   - a malformed escape ("%", "%4", "%zz"); the codec answers these 400
//     already.
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
		if 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || isByteIn(b, "-._~") {
			t[c] = pcUnreserved | pcRaw
		} else if isByteIn(b, "!$&'()*+,;=:@") {
			t[c] = pcRaw
		}
	}
	return t
}()

func isByteIn(b byte, set string) bool {
	for i := 0; i < len(set); i++ {
		if set[i] == b {
			return true
		}
	}
	return false
}

// normalizePath sets c.Path to the normal form of c.Req.Path: the request's
// own bytes when they are normal already, else bytes appended to
// c.Scratch (which handlers append above). It reports false, leaving
// c.Path nil and c.Scratch as it was, when the path is refused (a bad
// request).
func (c *Ctx) normalizePath() bool {
	p := c.Req.Path
	if isNormalPath(p) {
		c.Path = p
		return true
	}
	mark := len(c.Scratch)
	var ok bool
	c.Scratch, ok = AppendNormalPath(c.Scratch, p)
	if !ok {
		c.Path = nil
		return false
	}
	c.Path = c.scratchSince(mark)
	return true
}

// isNormalPath reports whether p is in normal form without needing to be
// rewritten: it starts with "/", holds only raw pchar bytes and slashes
// (no escapes) but ";", no empty segment but a final one, and no "." or
// ".." segment. It is the fast path of
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

// AppendNormalPath appends the normal form of the request path p (see
// the rules above) to dst. ok is false when p is refused: it does not
// start with "/", or breaks one of the rules; dst is then returned
// unchanged. The result is at most 3*len(p) bytes longer than dst.
func AppendNormalPath(dst, p []byte) (_ []byte, ok bool) {
	if len(p) == 0 || p[0] != '/' {
		return dst, false
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
		dst, i, ok = appendSegment(dst, p, i)
		if !ok {
			return dst[:base], false
		}
		seg := dst[s:]
		switch {
		case len(seg) == 1 && seg[0] == '.':
			dst = dst[:s]
		case len(seg) == 2 && seg[0] == '.' && seg[1] == '.':
			if s == base+1 {
				return dst[:base], false // above "/"
			}
			k := s - 2 // the last byte of the previous segment
			for dst[k] != '/' {
				k--
			}
			dst = dst[:k+1]
		default:
			if i < len(p) {
				dst = append(dst, '/')
			}
		}
	}
	return dst, true
}

// appendSegment appends the normal form of the segment of p that starts
// at i (up to the next raw "/" or the end) to dst, and returns where it
// ended. ok is false when the segment holds a malformed escape, a NUL, a
// backslash, a ";", an encoded slash, or bytes above 0x7F that are not
// well-formed UTF-8.
func appendSegment(dst, p []byte, i int) (_ []byte, end int, ok bool) {
	var u utf8Seq
	for i < len(p) && p[i] != '/' {
		b, esc := p[i], false
		if b == '%' {
			if i+2 >= len(p) {
				return dst, i, false
			}
			hi, ok1 := unhex(p[i+1])
			lo, ok2 := unhex(p[i+2])
			if !ok1 || !ok2 {
				return dst, i, false
			}
			b, esc = hi<<4|lo, true
			i += 3
		} else {
			i++
		}
		if !u.next(b) || b == 0 || b == '\\' || b == ';' || esc && b == '/' {
			return dst, i, false
		}
		k := pathClass[b]
		if k&pcUnreserved != 0 || !esc && k&pcRaw != 0 {
			dst = append(dst, b)
		} else {
			dst = codec.AppendPercent(dst, b)
		}
	}
	return dst, i, u.need == 0
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
