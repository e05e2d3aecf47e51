package h1

import "gale/app/wire"

// SetAltSvc makes every response the handlers answer on the connection
// carry an Alt-Svc field of value v (wire.HeadFields), rendered once per
// listener (HTTP/3 on the same port); nil carries none. It runs on the
// connection's loop, before its first request. v is not copied.
func (cs *Conn) SetAltSvc(v []byte) { cs.altSvc = v }

// insertAltSvc inserts the Alt-Svc line of f before the empty line that
// ends the response head at the end of out, whose Date and Server lines
// codec rendered. It does not allocate when out has room.
func insertAltSvc(out []byte, f *wire.HeadFields) []byte {
	if f.AltSvc == nil {
		return out
	}
	alt := wire.HeadFields{AltSvc: f.AltSvc}
	out = alt.AppendLines(out[:len(out)-2])
	return append(out, '\r', '\n')
}
