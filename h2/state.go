package h2

import "gale/h2/hpack"

// Stream life: the response side the engine drives, and how streams close
// (RFC 9113 section 5.1).

// tableSizeZero is the HPACK dynamic table size update to 0 (RFC 7541
// section 6.3) that starts the connection's first response block: our
// encoder never uses the dynamic table, so the peer's decoder may drop
// its own.
var tableSizeZero = hpack.AppendTableSizeZero(nil)

// appendHeaderBlock appends a response header block on stream id, split by
// the peer's maximum frame size, prefixed with the table size update on
// the connection's first block.
func (c *Conn) appendHeaderBlock(id uint32, end bool, block []byte) []byte {
	var prefix []byte
	if c.state&flagFirstBlock == 0 {
		c.state |= flagFirstBlock
		prefix = tableSizeZero
	}
	return appendHeaders(c.out, id, end, prefix, block, c.peerMax)
}

// WriteHeaders queues a response header block on s (RFC 9113 section 8.1):
// block is HPACK from the hpack Append functions; the Conn prefixes the
// table size update to the connection's first block and splits the block
// into HEADERS and CONTINUATION frames by PeerMaxFrame. Informational
// (1xx) blocks may precede the final one; trailers are a second final block
// with end set. end sets END_STREAM: the response is complete, the engine
// is done with s (it is closed, or reset with NO_ERROR when the request
// body has not ended, section 8.1). It does not keep block.
func (c *Conn) WriteHeaders(s *Stream, block []byte, end bool) {
	c.finishPending()
	if s.state == stateFree || s.localEnded() || c.err != nil {
		return
	}
	c.out = c.appendHeaderBlock(s.ID, end, block)
	if !informational(block) {
		s.sentHeaders = true
	}
	if end {
		c.endLocal(s, true)
	}
}

// informational reports whether block starts with a 1xx :status as the
// hpack package encodes it (a literal with the name of static entry 8 and
// a 3-digit raw value): such a block is not the final response head.
func informational(block []byte) bool {
	return len(block) >= 3 && block[0]&0xf0 == 0 && block[0]&0x0f == 8 && block[1] == 3 && block[2] == '1'
}

// endLocal records that we sent END_STREAM on s. A stream whose peer also
// ended closes; otherwise the request body is not wanted any more and the
// stream is reset with NO_ERROR (RFC 9113 section 8.1), at once when now is
// set, else (after AppendDataHeader, whose payload the engine has yet to
// put after Out) on the next call into the Conn.
func (c *Conn) endLocal(s *Stream, now bool) {
	s.requested = false // the engine is done with s
	if s.peerEnded() {
		c.closeStream(s, true)
		return
	}
	s.state = stateHalfClosedLocal
	if now {
		c.resetDone(s)
		return
	}
	c.pending = append(c.pending, int32(s.Slot))
}

// resetDone resets a stream whose response is complete but whose request
// body has not ended.
func (c *Conn) resetDone(s *Stream) {
	c.out = AppendRSTStream(c.out, s.ID, NoError)
	c.resets.add(s.ID)
	c.closeStream(s, true)
}

// finishPending resets the streams AppendDataHeader ended while their
// peer was still sending.
func (c *Conn) finishPending() {
	for _, slot := range c.pending {
		if s := &c.streams[slot]; s.state == stateHalfClosedLocal {
			c.resetDone(s)
		}
	}
	c.pending = c.pending[:0]
}

// Reset resets s with code (RFC 9113 section 6.4) at the engine's request:
// RST_STREAM is queued and the stream closed; Handler.Reset is not called.
func (c *Conn) Reset(s *Stream, code ErrCode) {
	c.finishPending()
	if s.state == stateFree || c.err != nil {
		return
	}
	c.out = AppendRSTStream(c.out, s.ID, code)
	c.resets.add(s.ID)
	c.closeStream(s, false)
}

// streamError raises the stream error e on stream id (RFC 9113 section
// 5.4.2): RST_STREAM with e's code; an open stream is closed, with
// Handler.Reset when the engine holds it. Resets the peer made us send are
// counted (MadeYouReset, defence.go): past the budget, streamError returns
// a connection error.
func (c *Conn) streamError(id uint32, e *Error) *Error {
	if s := c.stream(id); s != nil {
		if s.requested {
			c.h.Reset(s, e.Code)
		}
		c.closeStream(s, false)
	}
	c.out = AppendRSTStream(c.out, id, e.Code)
	c.resets.add(id)
	if err := c.queuedControl(); err != nil {
		return err
	}
	return c.budget.madeReset()
}

// closeStream frees s's slot. normal says the exchange completed (both
// sides ended, or our response did), which refills the defence budgets.
func (c *Conn) closeStream(s *Stream, normal bool) {
	if s.state == stateFree {
		return
	}
	c.table.del(s.ID)
	*s = Stream{Slot: s.Slot}
	c.free = append(c.free, int32(s.Slot))
	c.open--
	if normal {
		c.budget.completed()
	}
}
