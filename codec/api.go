// Package codec parses HTTP/1.1 request heads and frames request bodies over
// byte slices, in place, and renders response heads. It does no I/O and
// imports nothing else of gale, so it can be fuzzed and benchmarked alone.
//
// The parser (Parse) is strict about message framing (RFC 9112): the rules,
// and every way it is stricter than net/http, are listed on Parse. Request
// bodies are framed with a BodyReader. Responses are rendered with
// AppendResponseHead and AppendErrorResponse from pre-rendered bytes; the
// Date field is rendered once a second.
//
// Nothing in this package keeps a reference to the buffers it is given
// beyond what the returned values alias: every result that aliases input
// says so.
package codec

import (
	"errors"

	"gale/config"
)

// Version is an HTTP protocol version as it appears on the request line.
type Version uint8

const (
	HTTP10 Version = 10 // HTTP/1.0
	HTTP11 Version = 11 // HTTP/1.1
	HTTP20 Version = 20 // HTTP/2: a request view filled from an HTTP/2 stream's header block, never parsed by this package
	HTTP30 Version = 30 // HTTP/3: a request view filled from an HTTP/3 request's header section, never parsed by this package
)

// TargetForm is the form of a request-target (RFC 9112 section 3.2).
type TargetForm uint8

const (
	OriginForm    TargetForm = iota // "/path?query"
	AbsoluteForm                    // "http://host/path?query"
	AuthorityForm                   // "host:port", CONNECT only
	AsteriskForm                    // "*", OPTIONS only
)

// Header is one header field. Name and Value alias the buffer they were
// parsed from (or static memory for response fields): they are valid only
// as long as that buffer is; copy them to keep them.
type Header struct {
	Name  []byte
	Value []byte
}

// DefaultMaxHeaders is the default of Limits.MaxHeaders.
const DefaultMaxHeaders = 100

// Limits bound what the parser accepts. Zero (or negative) fields take the
// defaults documented on each field: those of server.limits are
// config's (config.DefaultRequestLine, DefaultHeaderBytes and
// DefaultBodyBytes). Limits is read, never written, by the
// codec: one value may be shared by all event loops.
type Limits struct {
	RequestLine int   // longest request line in bytes, CRLF excluded; 0 = config.DefaultRequestLine; longer: 414
	HeaderBytes int   // longest header block (request line through the empty line); 0 = config.DefaultHeaderBytes; longer: 431
	MaxHeaders  int   // most header fields; 0 = DefaultMaxHeaders; more: 431
	BodyBytes   int64 // largest request body; 0 = config.DefaultBodyBytes; larger: 413 (a larger Content-Length is refused by Parse)
}

// withDefaults returns a copy of *l (the zero Limits when l is nil) with the
// defaults filled in.
func (l *Limits) withDefaults() Limits {
	var v Limits
	if l != nil {
		v = *l
	}
	if v.RequestLine <= 0 {
		v.RequestLine = config.DefaultRequestLine
	}
	if v.HeaderBytes <= 0 {
		v.HeaderBytes = config.DefaultHeaderBytes
	}
	if v.MaxHeaders <= 0 {
		v.MaxHeaders = DefaultMaxHeaders
	}
	if v.BodyBytes <= 0 {
		v.BodyBytes = config.DefaultBodyBytes
	}
	return v
}

// ErrNeedMore says the buffer holds no complete message yet: keep the bytes,
// read more and call again with the whole buffer.
var ErrNeedMore = errors.New("codec: need more data")

// Error is a request error with the status to answer it with. Its message
// is for logs only: the response body is fixed per status and never echoes
// input. After an Error the connection must be closed, since framing is in
// doubt.
//
// The codec returns shared, pre-allocated *Error values (returning an error
// does not allocate): callers must not modify them.
type Error struct {
	Status int    // 400, 413, 414, 417, 431, 501 or 505
	Reason string // short fixed text for logs, e.g. "duplicate Content-Length"
}

func (e *Error) Error() string { return "codec: " + e.Reason }
