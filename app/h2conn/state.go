package h2conn

import "gale/app/wire"

// State implements wire.Engine: writing while any response is produced,
// waits or is sent, or the connection closes; reading while a stream is
// open with nothing to send yet (its request body arriving); idle when
// no stream is open.
func (h *Conn) State() wire.ConnState {
	if len(h.active) > 0 || h.nwait > 0 || h.parked > 0 || h.closing || h.pendingOutput() > 0 {
		return wire.StateWriting
	}
	for _, ex := range h.ex {
		if ex != nil && ex.s != nil {
			return wire.StateReading
		}
	}
	return wire.StateIdle
}
