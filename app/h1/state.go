package h1

import "gale/app/wire"

// State implements wire.Engine: writing while a response is produced,
// waits, is sent or the connection closes after one; reading while a
// request head or a body is arriving; idle between requests.
func (cs *Conn) State() wire.ConnState {
	switch {
	case cs.pending != nil || cs.xfer != nil || cs.closing || cs.paused || cs.OutboundBuffered() > 0:
		return wire.StateWriting
	case cs.headStart != 0 || cs.inBody:
		return wire.StateReading
	}
	return wire.StateIdle
}
