package h2conn

import "gale/h2/hpack"

// SetAltSvc makes every response the handlers answer on the connection
// carry an alt-svc field of value v, rendered once per listener (HTTP/3
// on the same port); nil carries none. It runs on the connection's loop,
// before its first stream. v is not copied.
func (h *Conn) SetAltSvc(v []byte) { h.altSvc = v }

var fieldAltSvc = []byte("alt-svc")

// appendAltSvc appends the connection's alt-svc field to the HPACK block
// dst, as a literal without indexing like every field of a response.
func (h *Conn) appendAltSvc(dst []byte) []byte {
	if h.altSvc == nil {
		return dst
	}
	return hpack.AppendField(dst, fieldAltSvc, h.altSvc)
}
