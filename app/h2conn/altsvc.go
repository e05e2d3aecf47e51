package h2conn

// SetAltSvc makes every response the handlers answer on the connection
// carry an alt-svc field of value v (wire.HeadFields), rendered once per
// listener (HTTP/3 on the same port); nil carries none. It runs on the
// connection's loop, before its first stream. v is not copied.
func (h *Conn) SetAltSvc(v []byte) { h.altSvc = v }
