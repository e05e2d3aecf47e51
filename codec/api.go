package codec

// This file declares the codec's public contract. The parser lives in
// request.go, body framing in body.go, response rendering in response.go.

import "errors"

// Version is an HTTP protocol version as it appears on the request line.
type Version uint8

const (
	HTTP10 Version = 10 // HTTP/1.0
	HTTP11 Version = 11 // HTTP/1.1
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

// Limits bound what the parser accepts. Zero fields take the defaults
// documented on each field.
type Limits struct {
	RequestLine int   // longest request line in bytes, CRLF excluded; 0 = 8 KiB; longer: 414
	HeaderBytes int   // longest header block (request line through the empty line); 0 = 16 KiB; longer: 431
	MaxHeaders  int   // most header fields; 0 = 100; more: 431
	BodyBytes   int64 // largest request body; 0 = 10 MiB; larger: 413
}

// ErrNeedMore says the buffer holds no complete message yet: keep the bytes,
// read more and call again with the whole buffer.
var ErrNeedMore = errors.New("codec: need more data")

// Error is a request error with the status to answer it with. Its message
// is for logs only: the response body is fixed per status and never echoes
// input. After an Error the connection must be closed, since framing is in
// doubt.
type Error struct {
	Status int    // 400, 413, 414, 431, 501 or 505
	Reason string // short fixed text for logs, e.g. "duplicate Content-Length"
}

func (e *Error) Error() string { return "codec: " + e.Reason }
