package handlers

import (
	"bytes"

	"gale/codec"
)

// Static responses use four fields of Response besides Status, Headers,
// Body and File:
//
//   - Head: the cached file's HTTP/1.1 header block, rendered when the file
//     was loaded (status line, a Date line of fixed length, Server, the
//     representation's fields, Cache-Control and the route's response
//     header rules), without the empty line that ends the head. The writer
//     copies it with the Date line replaced by the current one (see
//     AppendHead); Status is set too (for logs and counters) and Headers
//     are ignored. Content-Length is part of Head.
//   - Entry: the cache entry that Body, Parts or Head alias. Holding the
//     bytes needs nothing (the garbage collector keeps them); the writer
//     pins the entry (cache.Entry.Pin) while a response leaves the loop,
//     so that the cache's byte budget counts an old version still being
//     sent.
//   - FileOffset: where the body starts in File (a byte range); FileSize
//     bytes are sent from there.
//   - Parts: a body made of pieces (multipart/byteranges): each is bytes in
//     memory or a region of File. The body's length is the sum of the
//     pieces' lengths.

// BodyPart is one piece of a response body: Data when it is not nil, else
// Len bytes of the response's File from offset Off. Data aliases static,
// cached or Ctx.Scratch memory, valid until the response is rendered (or,
// for cached memory, for as long as it is referenced).
type BodyPart struct {
	Data []byte // bytes in memory; nil: a region of File
	Off  int64  // where the region starts in File
	Len  int64  // the region's length
}

// Size returns the number of body bytes p stands for.
func (p BodyPart) Size() int64 {
	if p.Data != nil {
		return int64(len(p.Data))
	}
	return p.Len
}

// headStatusOK and headDateLine start every head a static route renders
// for a cached file; the Date line is a placeholder of exactly the length
// of a real one, replaced by AppendHead.
const (
	headStatusOK = "HTTP/1.1 200 OK\r\n"
	headDateLine = "Date: Thu, 01 Jan 1970 00:00:00 GMT\r\n"
)

// AppendHead appends a response head rendered ahead of time (Response.Head:
// a status line, a Date line of the fixed length of headDateLine, then
// header fields, without the final empty line) to dst with the current
// Date, the Connection field the connection needs ("close" when
// closeConn, else "keep-alive" when keepAlive10 for an HTTP/1.0 client
// that asked for it) and the empty line. It does not allocate when dst has
// room and keeps no reference to head. Safe for concurrent use.
func AppendHead(dst, head []byte, closeConn, keepAlive10 bool) []byte {
	i := bytes.IndexByte(head, '\n') + 1
	if i == 0 || len(head) < i+len(headDateLine) {
		panic("bug: handlers: malformed pre-rendered head")
	}
	dst = append(dst, head[:i]...)
	dst = codec.AppendDate(dst)
	dst = append(dst, head[i+len(headDateLine):]...)
	dst = codec.AppendConnection(dst, closeConn, keepAlive10)
	return append(dst, '\r', '\n')
}

// BodySize returns the length of r's body: the sum of Parts, FileSize
// when File is set, else len(Body).
func (r *Response) BodySize() int64 {
	switch {
	case r.Parts != nil:
		var n int64
		for _, p := range r.Parts {
			n += p.Size()
		}
		return n
	case r.File != nil:
		return r.FileSize
	}
	return int64(len(r.Body))
}
