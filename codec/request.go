package codec

// Request is one parsed request head. Every []byte field and every Header
// aliases the buffer given to Parse: it is valid only until that buffer is
// discarded or overwritten (in gale: until the connection's inbound bytes
// are discarded at the end of the OnTraffic call). Copy what you keep.
// A Request is reused from request to request; it is not safe for
// concurrent use.
type Request struct {
	Method  []byte     // e.g. "GET"; a token
	Target  []byte     // the raw request-target as sent
	Form    TargetForm // which form Target has
	Path    []byte     // path part of Target (absolute-form: after the authority; "" for authority/asterisk form), still percent-encoded
	Query   []byte     // after the first '?', without it; nil when there is no '?'
	Version Version    // HTTP10 or HTTP11
	Host    []byte     // Host header, or the authority of an absolute-form target (which wins, RFC 9112 3.2.2); nil if none

	Headers []Header // every field in arrival order, the only source of truth; storage reused between requests

	ContentLength int64 // body length; -1 when the request has no Content-Length (then Chunked says whether a body follows)
	Chunked       bool  // Transfer-Encoding: chunked
	KeepAlive     bool  // the connection may serve another request after this one (version default, Connection header)
	Expect100     bool  // "Expect: 100-continue" was sent (other expectations are answered 417 by the parser)
	Upgrade       bool  // Connection names "upgrade" and an Upgrade field is present

	HeadLen int // bytes from the start of the request line through the empty line
}

// Reset clears r for reuse, keeping its header storage.
func (r *Request) Reset() {
	h := r.Headers[:0]
	*r = Request{Headers: h, ContentLength: -1}
}

// Header returns the value of the first field named name (ASCII
// case-insensitive), or nil. The result aliases the parse buffer.
func (r *Request) Header(name string) []byte {
	for i := range r.Headers {
		if equalFold(r.Headers[i].Name, name) {
			return r.Headers[i].Value
		}
	}
	return nil
}

// HasBody reports whether a message body follows the head.
func (r *Request) HasBody() bool { return r.Chunked || r.ContentLength > 0 }

func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Parse parses one request head from the start of buf into r. It returns
// the number of bytes the head occupies, ErrNeedMore when buf holds no
// complete head yet (nothing is consumed; call again with more bytes), or an
// *Error naming the status to answer with. Limits are enforced while bytes
// accumulate: a request line or header block over its limit is rejected
// even before its end arrives. The body, if any, is not consumed: frame it
// with a BodyReader initialised from r.
func Parse(buf []byte, r *Request, lim *Limits) (int, error) {
	panic("unimplemented")
}
