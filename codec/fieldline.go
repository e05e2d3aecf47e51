package codec

import "strconv"

// Every HTTP/1.1 field line gale sends, in requests towards an upstream
// and in responses, is rendered here: "Name: value" CRLF (RFC 9112
// section 5), with exactly one space after the colon and no trailing
// whitespace. Names and values are rendered as given: the caller has
// validated them (parsed fields passed the parser's grammar, config
// values are checked at load time, and gale's own values are built from
// numbers and constants). The functions do not allocate when dst has room,
// keep no reference to their arguments and are safe for concurrent use.

// AppendFieldLine appends the field line "name: value\r\n" to dst.
func AppendFieldLine(dst, name, value []byte) []byte {
	dst = append(dst, name...)
	dst = append(dst, ':', ' ')
	dst = append(dst, value...)
	return append(dst, '\r', '\n')
}

// AppendFieldLines appends a field line for each of fs, in order.
func AppendFieldLines(dst []byte, fs []Header) []byte {
	for i := range fs {
		dst = AppendFieldLine(dst, fs[i].Name, fs[i].Value)
	}
	return dst
}

// AppendContentLength appends "Content-Length: n\r\n" (RFC 9110 section
// 8.6) for n >= 0.
func AppendContentLength(dst []byte, n int64) []byte {
	dst = append(dst, "Content-Length: "...)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, crlf...)
}

// AppendConnection appends the Connection field an HTTP/1.1 response
// needs (RFC 9112 section 9.3): "Connection: close" when closeConn, else
// "Connection: keep-alive" when keepAlive10 (an HTTP/1.0 client that asked
// to keep the connection), else nothing (HTTP/1.1 keeps it by default).
func AppendConnection(dst []byte, closeConn, keepAlive10 bool) []byte {
	switch {
	case closeConn:
		return append(dst, "Connection: close\r\n"...)
	case keepAlive10:
		return append(dst, "Connection: keep-alive\r\n"...)
	}
	return dst
}
