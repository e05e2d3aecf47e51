package h1

// SetAltSvc makes every response the handlers answer on the connection
// carry line, a whole "Alt-Svc: ...\r\n" field line rendered once per
// listener (HTTP/3 on the same port); nil carries none. It runs on the
// connection's loop, before its first request. line is not copied.
func (cs *Conn) SetAltSvc(line []byte) { cs.altSvc = line }

// appendAltSvc inserts the connection's Alt-Svc line before the empty
// line that ends the response head at the end of out. It does not
// allocate when out has room.
func (cs *Conn) appendAltSvc(out []byte) []byte {
	if cs.altSvc == nil {
		return out
	}
	out = append(out[:len(out)-2], cs.altSvc...)
	return append(out, '\r', '\n')
}
