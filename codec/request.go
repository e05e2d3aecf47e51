package codec

import (
	"bytes"
	"encoding/binary"
)

// Request is one parsed request head. Every []byte field and every Header
// aliases the buffer given to Parse: it is valid only until that buffer is
// discarded or overwritten (in gale: until the connection's inbound bytes
// are discarded at the end of the OnTraffic call). Copy what you keep.
// A Request is reused from request to request; it is not safe for
// concurrent use.
//
// Headers is the only source of truth: Host, ContentLength, Chunked,
// KeepAlive, Expect100 and Upgrade are derived from it (and from the
// request line) in the same pass, never parsed from anywhere else.
//
// A Request is also the protocol-neutral view of an HTTP/2 or HTTP/3
// request that handlers read: method, target parts, authority, fields,
// whether a body follows and its declared length (HasBody, ContentLength,
// LengthUnknown). Chunked, KeepAlive and Upgrade are HTTP/1.1's framing
// and connection semantics: only Parse sets them, and only this package
// and the HTTP/1.1 engine read them (a handler asks the exchange, through
// handlers.Exchange.Closing and handlers.Upgrader, what they mean for it).
type Request struct {
	Method  []byte     // e.g. "GET"; a token
	Target  []byte     // the raw request-target as sent
	Form    TargetForm // which form Target has
	Path    []byte     // path part of Target (absolute-form: after the authority, "/" in static memory when empty; nil for authority/asterisk form), still percent-encoded
	Query   []byte     // after the first '?', without it; nil when there is no '?'
	Version Version    // HTTP10 or HTTP11
	Host    []byte     // Host header, or the authority of an absolute- or authority-form target (which wins, RFC 9112 3.2.2, 3.3); nil if none

	Headers []Header // every field in arrival order, the only source of truth; storage reused between requests

	ContentLength int64 // body length; -1 when the request declares none (then Chunked or Streamed says whether a body follows)
	Streamed      bool  // HTTP/2, HTTP/3: a body of undeclared length follows (no content-length, and the head did not end the stream)
	Chunked       bool  // HTTP/1.1 only: Transfer-Encoding: chunked
	KeepAlive     bool  // HTTP/1.1 only: the connection may serve another request after this one (version default, Connection header)
	Expect100     bool  // "Expect: 100-continue" was sent in an HTTP/1.1 request (other expectations are answered 417 by the parser)
	Upgrade       bool  // HTTP/1.1 only: Connection names "upgrade" and an Upgrade field is present

	HeadLen int // bytes from the start of the request line through the empty line

	headScan // where framing an incomplete head stopped (see Parse)
}

// Reset clears r for reuse, keeping its header storage. Call it before
// giving r bytes unrelated to those of an earlier call that returned
// ErrNeedMore.
func (r *Request) Reset() { *r = Request{Headers: r.Headers[:0], ContentLength: -1} }

// Header returns the value of the first field named name (ASCII
// case-insensitive), or nil. The result aliases the parse buffer.
func (r *Request) Header(name string) []byte { return headerValue(r.Headers, name) }

// headerValue returns the value of the first field of hs named name
// (ASCII case-insensitive), or nil.
func headerValue(hs []Header, name string) []byte {
	for i := range hs {
		if EqualFold(hs[i].Name, name) {
			return hs[i].Value
		}
	}
	return nil
}

// HasBody reports whether a message body follows the head.
func (r *Request) HasBody() bool { return r.Chunked || r.Streamed || r.ContentLength > 0 }

// LengthUnknown reports whether a body follows whose length the head did
// not declare (HTTP/1.1 chunked coding; HTTP/2 or HTTP/3 without
// content-length).
func (r *Request) LengthUnknown() bool { return r.ContentLength < 0 && (r.Chunked || r.Streamed) }

// The parser's errors. Each reason names one class of input; the fuzz test
// keeps a table of those classes that net/http accepts and we reject.
var (
	errEmptyLine      = &Error{400, "empty line before the request line"}
	errBareLF         = &Error{400, "line ending is a bare LF"}
	errRequestLine    = &Error{400, "malformed request line"}
	errMethod         = &Error{400, "invalid method"}
	errTargetByte     = &Error{400, "invalid byte in request-target"}
	errPercent        = &Error{400, "malformed percent-encoding in request-target"}
	errTargetForm     = &Error{400, "request-target form not allowed"}
	errAuthority      = &Error{400, "invalid authority in request-target"}
	errVersion        = &Error{400, "malformed HTTP version"}
	errObsFold        = &Error{400, "obsolete line folding"}
	errEmptyName      = &Error{400, "empty field name"}
	errFieldName      = &Error{400, "invalid byte in field name"}
	errSpaceColon     = &Error{400, "whitespace between field name and colon"}
	errNoColon        = &Error{400, "field line without colon"}
	errFieldValue     = &Error{400, "invalid byte in field value"}
	errNoHost         = &Error{400, "missing Host"}
	errDupHost        = &Error{400, "duplicate Host"}
	errBadHost        = &Error{400, "invalid Host"}
	errBadLength      = &Error{400, "invalid Content-Length"}
	errDupLength      = &Error{400, "duplicate Content-Length"}
	errTEAndLength    = &Error{400, "Transfer-Encoding with Content-Length"}
	errTE10           = &Error{400, "Transfer-Encoding in an HTTP/1.0 request"}
	errTrailerField   = &Error{400, "Trailer names a framing field"}
	errBodyTooLarge   = &Error{413, "body too large"}
	errLineTooLong    = &Error{414, "request line too long"}
	errHeadTooLarge   = &Error{431, "header block too large"}
	errTooManyFields  = &Error{431, "too many header fields"}
	errExpectation    = &Error{417, "unsupported expectation"}
	errTransferCoding = &Error{501, "unsupported Transfer-Encoding"}
	errHTTPVersion    = &Error{505, "unsupported HTTP version"}
)

// requestErrors answers each fault of a request's head.
var requestErrors = headErrors{
	side:      faultInRequest,
	bareLF:    errBareLF,
	emptyLine: errEmptyLine,
	firstLine: errLineTooLong,
	tooLarge:  errHeadTooLarge,
	tooMany:   errTooManyFields,
}

// Parse parses one request head from the start of buf into r. It returns
// the number of bytes the head occupies, ErrNeedMore when buf holds no
// complete head yet (nothing is consumed; call again with more bytes), or an
// *Error naming the status to answer with. Limits are enforced while bytes
// accumulate: a request line or header block over its limit is rejected
// even before its end arrives. The body, if any, is not consumed: frame it
// with a BodyReader initialised from r. lim may be nil (all defaults).
//
// Every field of r aliases buf (see Request). Parse clears r before it
// looks at buf, and again when buf holds a bad head: after ErrNeedMore or
// an error, r is empty (as after Reset, with its header storage kept), so
// that nothing read from r after a failed call names bytes of an earlier
// request, which its caller may since have handed to another connection.
// After ErrNeedMore, r remembers how far it has looked,
// so that a head arriving a byte at a time costs linear time: call again
// with the same bytes at the start of buf (more may follow), or Reset r
// first. Whether buf arrives whole or in pieces, the result is the same.
// Parse does not allocate once r.Headers has grown to the number of fields
// a client sends. It may run concurrently on distinct Requests and
// buffers; lim is only read.
//
// Strict framing (RFC 9112 and RFC 9110; a violation is answered with the
// status given, and the connection is closed):
//
//   - Lines end in CRLF; a bare LF anywhere in the head is 400 (section
//     2.2 allows a recipient to accept it, we do not). A bare CR is 400
//     (section 2.2). No empty line may precede the request line (400).
//   - Request line (section 3): method SP request-target SP HTTP-version,
//     single spaces. The method is a token. HTTP/1.0 and HTTP/1.1 are
//     served; any other "HTTP/" DIGIT "." DIGIT is 505 (RFC 9110 section
//     15.6.6); anything else is 400. A request line over
//     Limits.RequestLine is 414, as soon as that many bytes arrived
//     without a CRLF.
//   - request-target (section 3.2): origin-form ("/..."); absolute-form
//     with scheme http or https, a non-empty host and no userinfo (RFC
//     9110 section 4.2.4), whose authority replaces Host (section 3.2.2);
//     authority-form host ":" port for CONNECT only, and CONNECT takes
//     nothing else (section 3.2.3); "*" for OPTIONS only (section 3.2.4).
//     Bytes are VCHAR but "#"; every "%" starts a valid pct-encoding. Any
//     other target is 400.
//   - Field lines (section 5): a non-empty token, a colon with no
//     whitespace before it (section 5.1), OWS, a value of VCHAR, obs-text,
//     SP and HTAB (RFC 9110 section 5.5), OWS, CRLF. Leading and trailing
//     OWS are not part of the value. A line starting with SP or HTAB
//     (obs-fold, section 5.2) is 400. More than Limits.MaxHeaders fields,
//     or a head over Limits.HeaderBytes, is 431 (RFC 6585 section 5), as
//     soon as it shows.
//   - Host (section 3.2): exactly one in an HTTP/1.1 request, at most one
//     in HTTP/1.0; its value is empty or uri-host [":" port] (400).
//   - Content-Length (section 6.3): at most one field, even with equal
//     values; its value is 1*DIGIT and fits an int64 (400). A value over
//     Limits.BodyBytes is 413.
//   - Transfer-Encoding (section 6.1): with Content-Length, 400 (section
//     6.1 allows dropping Content-Length instead); in an HTTP/1.0 request,
//     400 (section 6.1 treats it as faulty framing); anything but exactly
//     one field naming exactly one coding, "chunked" (case-insensitive),
//     is 501 (section 6.1, RFC 9110 section 15.6.2). With chunked, a
//     Trailer field naming Transfer-Encoding, Content-Length or Trailer is
//     400 (RFC 9110 section 6.5.1; net/http rejects it too).
//   - Expect (RFC 9110 section 10.1.1): "100-continue" sets Expect100; any
//     other expectation is 417.
//   - Connection (RFC 9110 section 7.6.1): comma-separated tokens over any
//     number of fields, case-insensitive. "close" clears KeepAlive;
//     HTTP/1.1 keeps alive by default, HTTP/1.0 only with "keep-alive"
//     (RFC 9112 section 9.3). "upgrade" with an Upgrade field in an
//     HTTP/1.1 request sets Upgrade (RFC 9110 section 7.8).
//
// Stricter than net/http's ReadRequest, which accepts each of these (the
// fuzz test keeps the same list, stricterThanNetHTTP, with a test each):
//
//  1. bare LF line endings (RFC 9112 section 2.2);
//  2. an empty request-target, which net/http takes for an empty
//     authority with CONNECT (section 3);
//  3. "#" in the request-target (section 3.2);
//  4. malformed pct-encoding in the query (RFC 3986 section 2.1);
//  5. "*" with a method other than OPTIONS, CONNECT with anything but
//     authority-form, absolute-form other than http(s)://authority
//     (sections 3.2.2 to 3.2.4);
//  6. userinfo, pct-encoding, an empty host, or bytes outside RFC 3986
//     in an authority; CONNECT without a port (section 3.2.3, RFC 9110
//     section 4.2.4);
//  7. whitespace, or other bytes outside tchar, in a field name (section
//     5.1);
//  8. obs-fold (section 5.2);
//  9. a missing Host in HTTP/1.1, or a Host value that is not
//     uri-host [":" port] (section 3.2; net/http's server checks these, its
//     ReadRequest does not);
//  10. two Content-Length fields with the same value (section 6.3 allows
//     collapsing them);
//  11. Transfer-Encoding together with Content-Length (section 6.1);
//  12. Transfer-Encoding in an HTTP/1.0 request (net/http ignores it);
//  13. HTTP versions other than 1.0 and 1.1 (505);
//  14. expectations other than 100-continue (417; net/http's server does
//     the same, its ReadRequest does not);
//  15. the limits: Limits.RequestLine (414), Limits.HeaderBytes and
//     Limits.MaxHeaders (431), a Content-Length over Limits.BodyBytes
//     (413).
func Parse(buf []byte, r *Request, lim *Limits) (int, error) {
	l := lim.withDefaults()
	k := headKind{firstLine: l.RequestLine, bytes: l.HeaderBytes, fields: l.MaxHeaders, errs: &requestErrors}
	return r.parse(buf, &k, r.Reset, func(b []byte) error { return parseHead(b, r, &k, l.BodyBytes) })
}

// slashPath is the Path of an absolute-form target with an empty path.
var slashPath = []byte("/")

// parseHead parses b, a complete head whose line endings frame has
// checked, into r (reset by the caller); a body declared longer than
// maxBody is refused.
func parseHead(b []byte, r *Request, k *headKind, maxBody int64) error {
	// Request line: method SP request-target SP HTTP-version CRLF.
	i := 0
	for i < len(b) && charClass[b[i]]&cToken != 0 {
		i++
	}
	if i == 0 || i >= len(b) || b[i] != ' ' {
		if i == 0 || i < len(b) && b[i] == '\r' {
			return errRequestLine
		}
		return errMethod
	}
	r.Method = b[:i:i]
	t0 := i + 1
	j := t0
	var seen uint8
	for j < len(b) {
		k := charClass[b[j]]
		if k&cTarget == 0 {
			break
		}
		seen |= k
		j++
	}
	if j >= len(b) || b[j] != ' ' || j == t0 {
		if j < len(b) && (b[j] == ' ' || b[j] == '\r') {
			return errRequestLine
		}
		return errTargetByte
	}
	v := j + 1
	if len(b)-v < 10 || b[v+8] != '\r' || b[v+9] != '\n' ||
		string(b[v:v+5]) != "HTTP/" || charClass[b[v+5]]&cDigit == 0 ||
		b[v+6] != '.' || charClass[b[v+7]]&cDigit == 0 {
		return errVersion
	}
	switch {
	case b[v+5] == '1' && b[v+7] == '1':
		r.Version = HTTP11
	case b[v+5] == '1' && b[v+7] == '0':
		r.Version = HTTP10
	default:
		return errHTTPVersion
	}
	t := b[t0:j:j]
	r.Target = t
	if seen&cPct != 0 && !validPercent(t) {
		return errPercent
	}
	var authority []byte
	connect := string(r.Method) == "CONNECT"
	switch {
	case t[0] == '/':
		if connect {
			return errTargetForm
		}
		r.Form = OriginForm
		r.Path, r.Query = splitQuery(t)
	case len(t) == 1 && t[0] == '*':
		if string(r.Method) != "OPTIONS" {
			return errTargetForm
		}
		r.Form = AsteriskForm
	case connect:
		if !validAuthority(t, true) {
			return errAuthority
		}
		r.Form = AuthorityForm
		authority = t
	default:
		var rest []byte
		switch {
		case hasPrefixFold(t, "http://"):
			rest = t[len("http://"):]
		case hasPrefixFold(t, "https://"):
			rest = t[len("https://"):]
		default:
			return errTargetForm
		}
		a := 0
		for a < len(rest) && rest[a] != '/' && rest[a] != '?' {
			a++
		}
		authority = rest[:a:a]
		if !validAuthority(authority, false) {
			return errAuthority
		}
		r.Form = AbsoluteForm
		r.Path, r.Query = splitQuery(rest[a:])
		if len(r.Path) == 0 {
			r.Path = slashPath[:1:1]
		}
	}

	// Field lines, then the empty line.
	var (
		fr  framing
		own requestFields
		err error
	)
	r.HeadLen, err = k.readFields(b, v+10, &r.Headers, &fr, func(name, value []byte) error {
		return own.see(name, value, &r.Expect100)
	})
	if err != nil {
		return err
	}
	if r.Version == HTTP11 && own.hosts == 0 {
		return errNoHost
	}
	if own.hosts == 1 && !validHost(own.host) {
		return errBadHost
	}
	if authority != nil {
		r.Host = authority
	} else {
		r.Host = own.host
	}
	if r.ContentLength, r.Chunked, err = k.body(&fr, r.Version); err != nil {
		return err
	}
	if r.Chunked && own.trailer && trailerNamesFraming(r.Headers) {
		return errTrailerField
	}
	if r.ContentLength > maxBody {
		return errBodyTooLarge
	}
	if own.badExpect {
		return errExpectation
	}
	if r.Version == HTTP10 {
		r.Expect100 = false // RFC 9110 section 10.1.1: ignored in HTTP/1.0
	}
	r.KeepAlive = fr.persistent(r.Version)
	r.Upgrade = r.Version == HTTP11 && fr.upgrade && own.upgrade
	return nil
}

// requestFields gathers, field by field, what the fields only requests
// carry say: Host, Expect, Upgrade and Trailer.
type requestFields struct {
	hosts     int
	host      []byte
	trailer   bool
	upgrade   bool
	badExpect bool
}

// see takes one field; expect100 is set when it expects 100-continue. It
// reports a second Host at once.
func (q *requestFields) see(name, value []byte, expect100 *bool) error {
	switch len(name) {
	case 4:
		if EqualFold(name, "host") {
			q.hosts++
			if q.hosts > 1 {
				return errDupHost
			}
			q.host = value
		}
	case 6:
		if EqualFold(name, "expect") {
			for rest := value; len(rest) > 0; {
				var tok []byte
				tok, rest = nextElement(rest)
				if len(tok) > 0 && !EqualFold(tok, "100-continue") {
					q.badExpect = true
				} else if len(tok) > 0 {
					*expect100 = true
				}
			}
		}
	case 7:
		if EqualFold(name, "upgrade") {
			q.upgrade = q.upgrade || len(value) > 0
		} else if EqualFold(name, "trailer") {
			q.trailer = true
		}
	}
	return nil
}

// scanValue returns the index of the first byte at or after p in b that is
// not a field-value byte (cValue). It checks eight bytes at a time for
// CTLs and DEL; a word holding one (HTAB, or the CR ending the line) is
// finished byte by byte.
func scanValue(b []byte, p int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for p+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[p:])
		// A byte < 0x20 (bytes >= 0x80 are excluded by ^x), or a byte
		// equal to 0x7f (a zero byte in x ^ 0x7f7f...).
		y := x ^ 0x7f*ones
		if (x-0x20*ones)&^x&highs != 0 || (y-ones)&^y&highs != 0 {
			break
		}
		p += 8
	}
	for p < len(b) && charClass[b[p]]&cValue != 0 {
		p++
	}
	return p
}

// nextElement splits the first element off a comma-separated list
// (RFC 9110 section 5.6.1) and trims its OWS; empty elements come back
// empty.
func nextElement(v []byte) (elem, rest []byte) {
	if i := bytes.IndexByte(v, ','); i >= 0 {
		elem, rest = v[:i], v[i+1:]
	} else {
		elem = v
	}
	return TrimOWS(elem), rest
}

// trailerNamesFraming reports whether a Trailer field lists a field that
// must not be sent in trailers and that net/http refuses there:
// Transfer-Encoding, Content-Length or Trailer (RFC 9110 section 6.5.1).
func trailerNamesFraming(hs []Header) bool {
	for i := range hs {
		if !EqualFold(hs[i].Name, "trailer") {
			continue
		}
		for rest := hs[i].Value; len(rest) > 0; {
			var tok []byte
			tok, rest = nextElement(rest)
			if EqualFold(tok, "transfer-encoding") || EqualFold(tok, "content-length") || EqualFold(tok, "trailer") {
				return true
			}
		}
	}
	return false
}

// ParseLength parses a Content-Length value: 1*DIGIT that fits an int64
// (RFC 9110 section 8.6), whichever protocol carried it.
func ParseLength(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if charClass[c]&cDigit == 0 {
			return 0, false
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// splitQuery splits a path-and-query at the first '?'.
func splitQuery(pq []byte) (path, query []byte) {
	if i := bytes.IndexByte(pq, '?'); i >= 0 {
		return pq[:i:i], pq[i+1:]
	}
	return pq, nil
}

// validPercent reports whether every '%' in t starts "%" HEXDIG HEXDIG.
func validPercent(t []byte) bool {
	for i := 0; i < len(t); i++ {
		if t[i] == '%' {
			if i+2 >= len(t) || charClass[t[i+1]]&cHex == 0 || charClass[t[i+2]]&cHex == 0 {
				return false
			}
			i += 2
		}
	}
	return true
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && EqualFold(b[:len(prefix)], prefix)
}

// validHost reports whether v is a valid Host value (RFC 9110 section 7.2):
// empty, or uri-host [":" port] with a non-empty host.
func validHost(v []byte) bool {
	return len(v) == 0 || validAuthority(v, false)
}

// validAuthority reports whether a is host [":" port] with a non-empty
// host (RFC 3986 section 3.2 without userinfo and pct-encoding, which
// RFC 9110 section 4.2.4 and 4.2.1 rule out for http):
//
//	host       = IP-literal / IPv4address / reg-name
//	IP-literal = "[" IPv6address "]"
//	port       = *DIGIT
//
// needPort requires a non-empty port (authority-form, RFC 9112 3.2.3).
func validAuthority(a []byte, needPort bool) bool {
	if len(a) == 0 {
		return false
	}
	var port []byte
	hasPort := false
	if a[0] == '[' {
		k := bytes.IndexByte(a, ']')
		if k < 0 || !validIPv6(a[1:k]) {
			return false
		}
		if rest := a[k+1:]; len(rest) > 0 {
			if rest[0] != ':' {
				return false
			}
			port, hasPort = rest[1:], true
		}
	} else {
		h := a
		if k := bytes.IndexByte(a, ':'); k >= 0 {
			h, port, hasPort = a[:k], a[k+1:], true
		}
		if len(h) == 0 {
			return false
		}
		for _, c := range h {
			if charClass[c]&cRegName == 0 {
				return false
			}
		}
	}
	for _, c := range port {
		if charClass[c]&cDigit == 0 {
			return false
		}
	}
	return !needPort || hasPort && len(port) > 0
}

// validIPv6 reports whether s is an IPv6address (RFC 3986 section 3.2.2):
// up to eight groups of one to four hex digits separated by ':', at most
// one "::" standing for one or more zero groups, the last two groups
// optionally written as an IPv4 address. Zones are not accepted.
func validIPv6(s []byte) bool {
	groups, ellipsis := 0, false
	i := 0
	if len(s) >= 2 && s[0] == ':' && s[1] == ':' {
		ellipsis = true
		i = 2
	}
	for i < len(s) {
		j := i
		for j < len(s) && j-i < 4 && charClass[s[j]]&cHex != 0 {
			j++
		}
		if j == i {
			return false
		}
		if j < len(s) && s[j] == '.' {
			// IPv4 in the last 32 bits.
			if groups > 6 || !ellipsis && groups != 6 || !validIPv4(s[i:]) {
				return false
			}
			groups += 2
			i = len(s)
			break
		}
		groups++
		if groups > 8 {
			return false
		}
		i = j
		if i == len(s) {
			break
		}
		if s[i] != ':' {
			return false
		}
		i++
		if i < len(s) && s[i] == ':' {
			if ellipsis {
				return false
			}
			ellipsis = true
			i++
		} else if i == len(s) {
			return false // a trailing single ':'
		}
	}
	if ellipsis {
		return groups < 8
	}
	return groups == 8
}

// validIPv4 reports whether s is a dotted-decimal IPv4 address: four
// numbers 0..255 without leading zeros.
func validIPv4(s []byte) bool {
	parts := 0
	for i := 0; i <= len(s); {
		j := i
		n := 0
		for j < len(s) && charClass[s[j]]&cDigit != 0 {
			n = n*10 + int(s[j]-'0')
			j++
			if j-i > 3 {
				return false
			}
		}
		if j == i || n > 255 || s[i] == '0' && j-i > 1 {
			return false
		}
		parts++
		if j == len(s) {
			return parts == 4
		}
		if s[j] != '.' || parts == 4 {
			return false
		}
		i = j + 1
	}
	return false
}
