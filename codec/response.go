package codec

// ResponseHead describes a response head for AppendResponseHead.
// Header names and values are rendered as given; the caller has validated
// them (config values are checked at load time).
type ResponseHead struct {
	Status        int      // 100..599
	Version       Version  // the request's version; the status line says HTTP/1.1 either way (RFC 9110 6.2), but HTTP/1.0 changes keep-alive rendering
	Headers       []Header // extra fields, rendered in order
	ContentLength int64    // rendered as Content-Length when >= 0; -1 renders none
	Close         bool     // render "Connection: close"
	KeepAlive10   bool     // HTTP/1.0 client that asked for keep-alive: render "Connection: keep-alive"
	Server        []byte   // Server field value; nil or empty renders none
}

// AppendResponseHead appends the status line, Date, Server, the extra
// headers, Content-Length and Connection fields and the empty line to dst.
// It does not allocate when dst has room.
func AppendResponseHead(dst []byte, h *ResponseHead) []byte { panic("unimplemented") }

// AppendDate appends "Date: <IMF-fixdate>\r\n" for the current second. The
// text is rendered once a second and read without locks.
func AppendDate(dst []byte) []byte { panic("unimplemented") }

// StatusText returns the reason phrase for code ("" if unknown).
func StatusText(code int) string { panic("unimplemented") }

// AppendErrorResponse appends a complete fixed error response for status
// (head and body) that never echoes request input: a short text/plain body,
// or a JSON body {"status":N,"error":"..."} when asJSON. It always renders
// "Connection: close" when closeConn is set.
func AppendErrorResponse(dst []byte, status int, asJSON, closeConn bool, server []byte) []byte {
	panic("unimplemented")
}
