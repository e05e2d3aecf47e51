package h2

import (
	"bytes"
	"encoding/binary"

	"gale/codec"
)

// Request validation (RFC 9113 section 8.2, 8.3): a malformed request is a
// stream error of type PROTOCOL_ERROR (section 8.1.1), and never reaches
// the Handler.

var (
	errPseudoAfter      = streamErr(ProtocolError, "pseudo-header field after a regular field")
	errPseudoDup        = streamErr(ProtocolError, "duplicate pseudo-header field")
	errPseudoUnknown    = streamErr(ProtocolError, "unknown or response pseudo-header field")
	errPseudoInTrailers = streamErr(ProtocolError, "pseudo-header field in trailers")
	errPseudoMissing    = streamErr(ProtocolError, "missing :method, :scheme or :path")
	errConnectFields    = streamErr(ProtocolError, "CONNECT with :scheme or :path, or without :authority")
	errFieldName        = streamErr(ProtocolError, "invalid field name")
	errFieldValue       = streamErr(ProtocolError, "invalid field value")
	errConnSpecific     = streamErr(ProtocolError, "connection-specific field")
	errTE               = streamErr(ProtocolError, "te other than trailers")
	errMethod           = streamErr(ProtocolError, "invalid :method")
	errScheme           = streamErr(ProtocolError, "invalid :scheme")
	errPath             = streamErr(ProtocolError, "invalid :path")
	errAuthority        = streamErr(ProtocolError, "invalid :authority or host")
	errNoAuthority      = streamErr(ProtocolError, "neither :authority nor host")
	errHostMismatch     = streamErr(ProtocolError, "host differs from :authority")
	errContentLength    = streamErr(ProtocolError, "invalid or duplicate content-length")
	errLengthNoBody     = streamErr(ProtocolError, "content-length with END_STREAM on HEADERS")
)

// emptyValue stands for an empty field value that the decoder gave as nil,
// so that "present but empty" differs from "absent".
var emptyValue = []byte{}

// Byte classes, one 256-entry table (STYLE.md practice 3).
const (
	// bName: a byte of a field name (RFC 9113 section 8.2.1, RFC 9110
	// section 5.6.2): tchar without uppercase.
	bName uint8 = 1 << iota
	// bValue: a byte of a field value: VCHAR, SP, HTAB and obs-text (RFC
	// 9110 section 5.5). RFC 9113 section 8.2.1 forbids only NUL, CR and
	// LF; like codec we refuse every other CTL and DEL too, since the
	// request may be forwarded over HTTP/1.1.
	bValue
	// bTarget: a byte of :path, as codec accepts it in a request-target:
	// VCHAR but "#", and obs-text.
	bTarget
	// bToken: tchar (RFC 9110 section 5.6.2), for :method.
	bToken
	// bHost: a reg-name byte (RFC 3986 section 3.2.2), plus ":" for the
	// port, and "[" "]" and hex digits for IP literals.
	bHost
	// bScheme: ALPHA / DIGIT / "+" / "-" / "." (RFC 3986 section 3.1).
	bScheme
)

var class = func() (t [256]uint8) {
	for i := 0; i < 256; i++ {
		b := byte(i)
		if codec.IsToken(b) {
			t[i] |= bToken
			if !('A' <= b && b <= 'Z') {
				t[i] |= bName
			}
		}
		if codec.IsFieldValue(b) {
			t[i] |= bValue
		}
		if codec.IsTarget(b) {
			t[i] |= bTarget
		}
		if codec.IsRegName(b) || b == ':' || b == '[' || b == ']' {
			t[i] |= bHost
		}
		alpha := 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
		if alpha || '0' <= b && b <= '9' || b == '+' || b == '-' || b == '.' {
			t[i] |= bScheme
		}
	}
	return t
}()

// all reports whether every byte of b is in class k.
func all(b []byte, k uint8) bool {
	for _, c := range b {
		if class[c]&k == 0 {
			return false
		}
	}
	return true
}

// checkField validates a regular field (RFC 9113 section 8.2.1): a
// non-empty lowercase token for a name; a value of bValue bytes that does
// not start or end with SP or HTAB.
func checkField(name, value []byte) *Error {
	if len(name) == 0 || !all(name, bName) {
		return errFieldName
	}
	if !validValue(value) || len(value) > 0 && (isWS(value[0]) || isWS(value[len(value)-1])) {
		return errFieldValue
	}
	return nil
}

func isWS(c byte) bool { return c == ' ' || c == '\t' }

// validValue reports whether every byte of v is a bValue byte, eight at a
// time: a word with no byte below 0x20 and none equal to 0x7f (bytes of
// 0x80 and above are obs-text) needs no closer look; one with such a byte
// (HTAB is one) is checked byte by byte. The tests of "has a byte below n"
// are exact for the word as a whole, which is all that is asked of them.
func validValue(v []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(v) >= 8 {
		x := binary.LittleEndian.Uint64(v)
		ctl := (x - 0x20*ones) & ^x & highs
		d := x ^ 0x7f*ones
		del := (d - ones) & ^d & highs
		if ctl|del != 0 && !all(v[:8], bValue) {
			return false
		}
		v = v[8:]
	}
	return all(v, bValue)
}

// pseudo holds a request's pseudo-header fields (RFC 9113 section 8.3.1).
type pseudo struct {
	method, scheme, path, authority []byte
	seen                            uint8 // which were present, even empty
}

const (
	seenMethod uint8 = 1 << iota
	seenScheme
	seenPath
	seenAuthority
)

// set records one pseudo-header field.
func (p *pseudo) set(name, value []byte) *Error {
	var bit uint8
	var dst *[]byte
	switch string(name) {
	case ":method":
		bit, dst = seenMethod, &p.method
	case ":scheme":
		bit, dst = seenScheme, &p.scheme
	case ":path":
		bit, dst = seenPath, &p.path
	case ":authority":
		bit, dst = seenAuthority, &p.authority
	default:
		return errPseudoUnknown // :status, :protocol (not advertised, RFC 8441) and the rest
	}
	if p.seen&bit != 0 {
		return errPseudoDup
	}
	p.seen |= bit
	*dst = value
	return nil
}

// buildRequest validates the decoded fields of a new stream and fills
// c.req (see Handler.Request). end is END_STREAM on the HEADERS frame;
// with tooLarge the list is partial and only what arrived is checked.
func (c *Conn) buildRequest(end, tooLarge bool) *Error {
	var p pseudo
	var host []byte
	r := &c.req
	*r = codec.Request{Headers: c.headers[:0], ContentLength: -1, Version: codec.HTTP20}
	cookieAt, regular := -1, false
	c.cookie = c.cookie[:0]
	for _, f := range c.fields {
		if len(f.Name) > 0 && f.Name[0] == ':' {
			if regular {
				return errPseudoAfter
			}
			if e := p.set(f.Name, f.Value); e != nil {
				return e
			}
			continue
		}
		regular = true
		if e := checkField(f.Name, f.Value); e != nil {
			return e
		}
		switch string(f.Name) {
		case "connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade":
			return errConnSpecific // section 8.2.2
		case "te":
			if string(f.Value) != "trailers" {
				return errTE
			}
		case "host":
			if host != nil {
				return errAuthority
			}
			host = f.Value
			if host == nil {
				host = emptyValue
			}
		case "content-length":
			n, ok := codec.ParseLength(f.Value)
			if !ok || r.ContentLength >= 0 {
				return errContentLength
			}
			r.ContentLength = n
		case "cookie":
			if cookieAt >= 0 { // section 8.2.3: crumbs joined with "; "
				if len(c.cookie) == 0 {
					c.cookie = append(c.cookie, r.Headers[cookieAt].Value...)
				}
				c.cookie = append(append(c.cookie, "; "...), f.Value...)
				continue
			}
			cookieAt = len(r.Headers)
		}
		r.Headers = append(r.Headers, codec.Header{Name: f.Name, Value: f.Value})
	}
	c.headers = r.Headers
	if len(c.cookie) > 0 {
		r.Headers[cookieAt].Value = c.cookie
	}
	if e := c.target(&p, host); e != nil {
		return e
	}
	if end && r.ContentLength > 0 {
		return errLengthNoBody // section 8.1.1
	}
	r.Streamed = !end && r.ContentLength < 0
	return nil
}

// target checks the pseudo-header fields and fills the request's method,
// target and authority (RFC 9113 section 8.3.1, 8.5).
func (c *Conn) target(p *pseudo, host []byte) *Error {
	r := &c.req
	if p.seen&seenMethod == 0 {
		return errPseudoMissing
	}
	if len(p.method) == 0 || !all(p.method, bToken) {
		return errMethod
	}
	r.Method = p.method
	if string(p.method) == "CONNECT" {
		// Section 8.5: only :method and :authority. The engine answers it
		// as it answers an HTTP/1.1 CONNECT (AuthorityForm: 405).
		if p.seen&(seenScheme|seenPath) != 0 || p.seen&seenAuthority == 0 || !validAuthority(p.authority) {
			return errConnectFields
		}
		r.Form, r.Target, r.Host = codec.AuthorityForm, p.authority, p.authority
		return nil
	}
	if p.seen&(seenScheme|seenPath) != seenScheme|seenPath {
		return errPseudoMissing
	}
	if len(p.scheme) == 0 || !all(p.scheme, bScheme) {
		return errScheme
	}
	if e := c.path(p); e != nil {
		return e
	}
	return c.authority(p, host)
}

// path checks :path (RFC 9113 section 8.3.1): "*" for OPTIONS
// (asterisk-form), else an origin-form path and query with codec's bytes
// and valid percent-encoding, split at the first '?'.
func (c *Conn) path(p *pseudo) *Error {
	r := &c.req
	r.Target = p.path
	if string(p.path) == "*" && string(p.method) == "OPTIONS" {
		r.Form = codec.AsteriskForm
		return nil
	}
	if len(p.path) == 0 || p.path[0] != '/' || !all(p.path, bTarget) || !validPercent(p.path) {
		return errPath
	}
	r.Form = codec.OriginForm
	r.Path, r.Query = p.path, nil
	if i := bytes.IndexByte(p.path, '?'); i >= 0 {
		r.Path, r.Query = p.path[:i:i], p.path[i+1:]
	}
	return nil
}

// authority sets Host from :authority, else from the host field (RFC 9113
// section 8.3.1): one of them is required for http and https, both must
// be valid, and a host that differs from :authority is malformed.
func (c *Conn) authority(p *pseudo, host []byte) *Error {
	r := &c.req
	switch {
	case p.seen&seenAuthority != 0:
		if !validAuthority(p.authority) {
			return errAuthority
		}
		if host != nil && !codec.EqualFoldBytes(host, p.authority) {
			return errHostMismatch
		}
		r.Host = p.authority
	case host != nil:
		if !validAuthority(host) {
			return errAuthority
		}
		r.Host = host
	default:
		return errNoAuthority
	}
	return nil
}

// validAuthority reports whether a is host [":" port] with a non-empty
// host and no userinfo (RFC 3986 section 3.2, RFC 9110 section 4.2.4): a
// reg-name (pct-encoding excluded, as codec does) or a bracketed IP literal,
// and a port of digits.
func validAuthority(a []byte) bool {
	if len(a) == 0 || !all(a, bHost) {
		return false
	}
	hostEnd := len(a)
	if a[0] == '[' {
		i := bytes.IndexByte(a, ']')
		if i < 2 || bytes.IndexByte(a[1:i], '[') >= 0 || !ipLiteral(a[1:i]) {
			return false
		}
		hostEnd = i + 1
		if hostEnd < len(a) && a[hostEnd] != ':' {
			return false
		}
	} else if i := bytes.IndexByte(a, ':'); i >= 0 {
		hostEnd = i
	}
	if hostEnd == 0 || a[0] != '[' && (bytes.IndexByte(a[:hostEnd], '[') >= 0 || bytes.IndexByte(a[:hostEnd], ']') >= 0) {
		return false
	}
	if hostEnd < len(a) {
		for _, d := range a[hostEnd+1:] {
			if d < '0' || d > '9' {
				return false
			}
		}
	}
	return true
}

// ipLiteral reports whether s holds only the bytes of an IPv6 address
// (hex digits, ':' and '.') with at least one ':'.
func ipLiteral(s []byte) bool {
	colon := false
	for _, b := range s {
		switch {
		case b == ':':
			colon = true
		case b == '.', '0' <= b && b <= '9', 'a' <= b && b <= 'f', 'A' <= b && b <= 'F':
		default:
			return false
		}
	}
	return colon
}

// validPercent reports whether every '%' in t starts "%" HEXDIG HEXDIG.
func validPercent(t []byte) bool {
	for i := 0; i < len(t); i++ {
		if t[i] == '%' {
			if i+2 >= len(t) || !isHex(t[i+1]) || !isHex(t[i+2]) {
				return false
			}
			i += 2
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// ValidOriginPath reports whether p is a request path as :path carries it
// outside CONNECT and OPTIONS "*" (RFC 9113 section 8.3.1, RFC 9114
// section 4.3.1): "/" first, then codec's request-target bytes with valid
// percent-encoding. HTTP/3 requests are held to the same rule.
func ValidOriginPath(p []byte) bool {
	return len(p) > 0 && p[0] == '/' && all(p, bTarget) && validPercent(p)
}

// ValidAuthority reports whether a is a valid :authority (host [":"
// port], no userinfo), as HTTP/2 requests are held to; HTTP/3 requests
// are held to the same rule.
func ValidAuthority(a []byte) bool { return validAuthority(a) }
