package codec

// Response is one parsed response head, as received from an upstream
// server. Every []byte field and every Header aliases the buffer given to
// ParseResponse: it is valid only until that buffer is discarded or
// overwritten. Copy what you keep. A Response is reused from response to
// response; it is not safe for concurrent use.
//
// Headers is the only source of truth: ContentLength, Chunked, KeepAlive
// and ConnUpgrade are derived from it (and from the status line) in the
// same pass.
type Response struct {
	Version Version  // HTTP10 or HTTP11
	Status  int      // 100..599
	Reason  []byte   // the reason phrase as sent (possibly empty); never trusted for anything
	Headers []Header // every field in arrival order; storage reused between responses

	ContentLength int64 // -1 when the response has no Content-Length
	Chunked       bool  // Transfer-Encoding: chunked
	KeepAlive     bool  // the connection may carry another exchange (version default, Connection header)
	ConnUpgrade   bool  // Connection lists "upgrade" (a 101 must, RFC 9110 section 7.8)

	HeadLen int // bytes from the start of the status line through the empty line

	headScan // where framing an incomplete head stopped (see ParseResponse)
}

// Reset clears r for reuse, keeping its header storage. Call it before
// giving ParseResponse bytes unrelated to those of an earlier call that
// returned ErrNeedMore.
func (r *Response) Reset() { *r = Response{Headers: r.Headers[:0], ContentLength: -1} }

// Header returns the value of the first field named name (ASCII
// case-insensitive), or nil. The result aliases the parse buffer.
func (r *Response) Header(name string) []byte { return headerValue(r.Headers, name) }

// BodyKind says how a response body is delimited (RFC 9112 section 6.3).
type BodyKind uint8

const (
	BodyNone       BodyKind = iota // no body: 1xx, 204, 304, or a response to HEAD
	BodyLength                     // Content-Length bytes
	BodyChunked                    // chunked transfer coding
	BodyUntilClose                 // everything until the server closes the connection
)

// Framing returns how the body of r is delimited, given whether the
// request was HEAD (RFC 9112 section 6.3, rules 1, 4 to 8): responses to
// HEAD and 1xx, 204 and 304 responses have none whatever their fields say;
// then chunked, then Content-Length; otherwise the body runs until the
// connection closes.
func (r *Response) Framing(head bool) BodyKind {
	switch {
	case NoBody(head, r.Status):
		return BodyNone
	case r.Chunked:
		return BodyChunked
	case r.ContentLength >= 0:
		return BodyLength
	}
	return BodyUntilClose
}

// InitResponse prepares b for the body of r (see Framing) and returns its
// kind. A body of BodyNone or BodyUntilClose leaves b finished at once:
// the caller delimits an until-close body itself. Response bodies have no
// size limit.
func (b *BodyReader) InitResponse(r *Response, head bool) BodyKind {
	k := r.Framing(head)
	*b = BodyReader{max: 1<<63 - 1}
	switch {
	case k == BodyChunked:
		b.state = stSizeFirst
	case k == BodyLength && r.ContentLength > 0:
		b.state = stLength
		b.remaining = uint64(r.ContentLength)
	default:
		b.state = stDone
	}
	return k
}

// Response limits: the defaults of ParseResponse's Limits are those of
// requests but for the header block, which upstreams fill with cookies
// and the like more than clients do.
const (
	DefaultResponseHeaderBytes = 64 << 10 // 64 KiB
)

// The errors of ParseResponse. They carry status 502 (badResponse).
var (
	errRespBareLF     = badResponse("response line ending is a bare LF")
	errRespEmptyLine  = badResponse("empty line before the status line")
	errStatusLine     = badResponse("malformed status line")
	errRespVersion    = badResponse("unsupported HTTP version in response")
	errStatusCode     = badResponse("invalid status code")
	errReason         = badResponse("invalid byte in reason phrase")
	errRespObsFold    = badResponse("obsolete line folding in response")
	errRespFieldName  = badResponse("invalid field name in response")
	errRespSpaceColon = badResponse("whitespace between field name and colon in response")
	errRespFieldValue = badResponse("invalid field value in response")
	errRespLength     = badResponse("invalid Content-Length in response")
	errRespDupLength  = badResponse("duplicate Content-Length in response")
	errRespTEAndLen   = badResponse("Transfer-Encoding with Content-Length in response")
	errRespCoding     = badResponse("unsupported Transfer-Encoding in response")
	errRespTE10       = badResponse("Transfer-Encoding in an HTTP/1.0 response")
	errRespHeadSize   = badResponse("response header block too large")
	errRespFields     = badResponse("too many header fields in response")
)

// responseErrors answers each fault of a response's head.
var responseErrors = headErrors{
	side:      faultInResponse,
	bareLF:    errRespBareLF,
	emptyLine: errRespEmptyLine,
	tooLarge:  errRespHeadSize,
	tooMany:   errRespFields,
}

// badResponse is the error of a response that cannot be parsed: a proxy
// answers it with Bad Gateway (RFC 9110 section 15.6.3).
func badResponse(reason string) *Error { return &Error{Status: 502, Reason: reason} }

// ParseResponse parses one response head from the start of buf into r. It
// returns the number of bytes the head occupies, ErrNeedMore when buf holds
// no complete head yet (nothing is consumed; call again with more bytes),
// or an *Error with status 502. The body is not consumed: frame it with a
// BodyReader initialised by InitResponse. lim may be nil; its HeaderBytes
// (0: DefaultResponseHeaderBytes) bounds the whole head and its MaxHeaders
// (0: DefaultMaxHeaders) the fields; RequestLine and BodyBytes are not
// used.
//
// Every field of r aliases buf (see Response). ParseResponse clears r
// before it looks at buf, and again when buf holds a bad head: after
// ErrNeedMore or an error, r is empty (as after Reset, with its header
// storage kept) and names nothing of an earlier response. After
// ErrNeedMore r also remembers how far it looked: call again with the
// same bytes at the start of buf (more may follow), or Reset r first. ParseResponse does not
// allocate once r.Headers has grown to the number of fields a server
// sends.
//
// The grammar is RFC 9112 sections 4 and 5, as strict as Parse is with
// requests, since a proxy must not relay a response whose framing it may
// misread (response splitting, RFC 9112 section 11.2):
//
//   - Lines end in CRLF; a bare LF or CR is an error, as is an empty line
//     before the status line.
//   - status-line = HTTP-version SP status-code SP [ reason-phrase ]: the
//     version is HTTP/1.0 or HTTP/1.1, the code three digits from 100 to
//     599, the reason HTAB, SP, VCHAR and obs-text. A missing SP after the
//     code (no reason at all) is accepted, as most clients do.
//   - Field lines as in requests: a token name, no whitespace before the
//     colon, no obs-fold, values of VCHAR, obs-text, SP and HTAB.
//   - At most one Content-Length, 1*DIGIT; Transfer-Encoding only in
//     HTTP/1.1, never with Content-Length (section 6.3 says to treat such a
//     message as an error), and only exactly "chunked": other codings would
//     have to be relayed as they are, which a proxy that re-frames bodies
//     cannot do.
//   - Connection tokens set KeepAlive (HTTP/1.1 unless "close"; HTTP/1.0
//     only with "keep-alive") and ConnUpgrade.
func ParseResponse(buf []byte, r *Response, lim *Limits) (int, error) {
	maxHead, maxFields := DefaultResponseHeaderBytes, DefaultMaxHeaders
	if lim != nil {
		if lim.HeaderBytes > 0 {
			maxHead = lim.HeaderBytes
		}
		if lim.MaxHeaders > 0 {
			maxFields = lim.MaxHeaders
		}
	}
	k := headKind{bytes: maxHead, fields: maxFields, errs: &responseErrors, countLF: true}
	return r.parse(buf, &k, r.Reset, func(b []byte) error { return parseResponseHead(b, r, &k) })
}

// parseResponseHead parses b, a complete head whose line endings frame
// has checked, into r (reset by the caller).
func parseResponseHead(b []byte, r *Response, k *headKind) error {
	// Status line: HTTP-version SP 3DIGIT [ SP reason-phrase ] CRLF.
	if len(b) < 14 || string(b[:5]) != "HTTP/" || b[6] != '.' || b[8] != ' ' {
		return errStatusLine
	}
	switch {
	case b[5] == '1' && b[7] == '1':
		r.Version = HTTP11
	case b[5] == '1' && b[7] == '0':
		r.Version = HTTP10
	default:
		if charClass[b[5]]&cDigit != 0 && charClass[b[7]]&cDigit != 0 {
			return errRespVersion
		}
		return errStatusLine
	}
	d0, d1, d2 := b[9], b[10], b[11]
	if charClass[d0]&cDigit == 0 || charClass[d1]&cDigit == 0 || charClass[d2]&cDigit == 0 {
		return errStatusCode
	}
	r.Status = int(d0-'0')*100 + int(d1-'0')*10 + int(d2-'0')
	if r.Status < 100 || r.Status > 599 {
		return errStatusCode
	}
	p := 12
	switch b[p] {
	case '\r':
		r.Reason = b[p:p:p]
	case ' ':
		p++
		r0 := p
		for charClass[b[p]]&cValue != 0 {
			p++
		}
		r.Reason = b[r0:p:p]
	default:
		return errStatusCode
	}
	if b[p] != '\r' || b[p+1] != '\n' { // a bare CR or a control byte
		return errReason
	}
	p += 2

	var (
		fr  framing
		err error
	)
	if r.HeadLen, err = k.readFields(b, p, &r.Headers, &fr, nil); err != nil {
		return err
	}
	if r.ContentLength, r.Chunked, err = k.body(&fr, r.Version); err != nil {
		return err
	}
	r.ConnUpgrade = fr.upgrade
	r.KeepAlive = fr.persistent(r.Version)
	return nil
}
