package h2

import "gale/h2/hpack"

// Flow control (RFC 9113 section 5.2, 6.9) both ways, and the request body.

// streamRecvWindow is the receive window of a new stream: our
// SETTINGS_INITIAL_WINDOW_SIZE once the peer acknowledged it, and until
// then the larger of it and the protocol's 65535, which the peer may still
// be using (section 6.9.2).
func (c *Conn) streamRecvWindow() int64 {
	w := int64(c.cfg.InitialStreamWindow)
	if c.state&flagAcked == 0 {
		w = max(w, initialWindow)
	}
	return w
}

// onData handles a DATA frame (RFC 9113 section 6.1). The whole frame,
// padding included, counts against both receive windows; padding is
// granted back at once, the data when the engine calls Consumed. DATA on a
// stream that cannot take it is granted back at once too, so that the
// connection window stays in step with the peer's.
func (c *Conn) onData(fh FrameHeader, p []byte) *Error {
	data, err := ParseData(fh, p)
	if err != nil {
		return err.(*Error)
	}
	n := int64(fh.Length)
	if n > c.flow.recv {
		return errConnFlow
	}
	c.flow.recv -= n
	s := c.stream(fh.StreamID)
	if s == nil {
		if c.idle(fh.StreamID) {
			return errIdleStream
		}
		c.credit(nil, n)
		if c.resets.has(fh.StreamID) {
			return c.budget.idle()
		}
		return errStreamClosed
	}
	if s.peerEnded() {
		c.credit(nil, n)
		return errStreamClosed
	}
	if n > s.recvWindow {
		c.credit(nil, n)
		return errStreamFlow
	}
	s.recvWindow -= n
	if pad := n - int64(len(data)); pad > 0 {
		c.credit(s, pad)
	}
	return c.body(s, data, fh.Flags.Has(FlagEndStream))
}

// body delivers request body bytes of s, checking them against the
// declared content-length (RFC 9113 section 8.1.1) and MaxBodyBytes.
func (c *Conn) body(s *Stream, data []byte, end bool) *Error {
	s.received += int64(len(data))
	if s.length >= 0 && (s.received > s.length || end && s.received != s.length) {
		c.credit(nil, int64(len(data)))
		return errLength
	}
	if s.received > c.cfg.MaxBodyBytes {
		c.credit(nil, int64(len(data)))
		return c.bodyTooLarge(s)
	}
	if len(data) == 0 && !end {
		return c.budget.idle() // the empty DATA flood
	}
	c.budget.progress(len(data))
	if s.localEnded() {
		// The response is complete: the body is not wanted.
		c.credit(nil, int64(len(data)))
		if end {
			c.closeStream(s, true)
		}
		return nil
	}
	if end {
		s.state = stateHalfClosedRemote
	}
	c.h.Data(s, data, end)
	return nil
}

// status413 is the header block ":status: 413".
var status413 = hpack.AppendStatus(nil, 413)

// bodyTooLarge answers a stream whose body exceeds MaxBodyBytes: the
// engine drops it (Handler.Reset with CANCEL); when no response started, a
// 413 with END_STREAM and RST_STREAM NO_ERROR follow (RFC 9113 section
// 8.1), else RST_STREAM CANCEL. The reset counts as one the peer made us
// send.
func (c *Conn) bodyTooLarge(s *Stream) *Error {
	if s.requested {
		c.h.Reset(s, Cancel)
	}
	if s.state != stateFree {
		code := Cancel
		if !s.sentHeaders {
			c.out = c.appendHeaderBlock(s.ID, true, status413)
			code = NoError
		}
		c.out = AppendRSTStream(c.out, s.ID, code)
		c.resets.add(s.ID)
		c.closeStream(s, false)
	}
	return c.budget.madeReset()
}

// Consumed returns n bytes of request body credit (RFC 9113 section 6.9):
// WINDOW_UPDATE frames are batched, one for the stream and one for the
// connection once half their window was consumed. s may be nil (the
// stream is gone: connection credit only); a stream the peer ended takes
// no stream credit.
func (c *Conn) Consumed(s *Stream, n int) {
	if n <= 0 || c.err != nil {
		return
	}
	if s != nil && (s.state == stateFree || s.peerEnded()) {
		s = nil
	}
	c.credit(s, int64(n))
}

// credit records n consumed bytes and queues the WINDOW_UPDATE frames due.
func (c *Conn) credit(s *Stream, n int64) {
	if c.err != nil {
		return
	}
	c.flow.unacked += n
	if c.flow.unacked >= max(int64(c.cfg.InitialConnWindow)/2, 1) {
		c.out = AppendWindowUpdate(c.out, 0, uint32(c.flow.unacked))
		c.flow.recv += c.flow.unacked
		c.flow.unacked = 0
	}
	if s == nil || s.peerEnded() {
		return
	}
	s.recvUnacked += n
	if s.recvUnacked >= max(int64(c.cfg.InitialStreamWindow)/2, 1) {
		c.out = AppendWindowUpdate(c.out, s.ID, uint32(s.recvUnacked))
		s.recvWindow += s.recvUnacked
		s.recvUnacked = 0
	}
}

// onWindowUpdate grows a send window (RFC 9113 section 6.9): an increment
// of 0 is a stream error on a stream and a connection error on the
// connection; growing past 2^31-1 is FLOW_CONTROL_ERROR of the same kind.
// Streams whose writes found no room are told by Handler.Writable.
func (c *Conn) onWindowUpdate(fh FrameHeader, p []byte) *Error {
	incr, err := ParseWindowUpdate(fh, p)
	if err != nil {
		return err.(*Error)
	}
	if fh.StreamID == 0 {
		if e := c.budget.windowUpdate(&c.flow.sentData); e != nil {
			return e
		}
		if incr == 0 {
			return errConnWindowZero
		}
		c.flow.send += int64(incr)
		if c.flow.send > maxWindow {
			return errWindowOverflow
		}
		c.wakeBlocked()
		return nil
	}
	s := c.stream(fh.StreamID)
	if s == nil {
		if c.idle(fh.StreamID) {
			return errIdleStream
		}
		return c.budget.idle() // closed: ignored (section 5.1), but counted
	}
	if e := c.budget.windowUpdate(&s.sentData); e != nil {
		return e
	}
	if incr == 0 {
		return errStreamWindow0
	}
	s.sendWindow += int64(incr)
	if s.sendWindow > maxWindow {
		return errStreamOverflow
	}
	if s.blocked && c.flow.send > 0 {
		s.blocked = false
		c.h.Writable(s)
	}
	return nil
}

// wakeBlocked calls Handler.Writable for every stream that found no room
// and now has some.
func (c *Conn) wakeBlocked() {
	for i := range c.streams {
		if c.flow.send <= 0 {
			return
		}
		s := &c.streams[i]
		if s.state != stateFree && s.blocked && s.sendWindow > 0 {
			s.blocked = false
			c.h.Writable(s)
		}
	}
}

// SendWindow returns how many DATA payload bytes s may send now: the
// smaller of its window and the connection's (RFC 9113 section 6.9.1),
// never negative, and 0 for a stream whose response ended. A result of 0
// marks s as waiting for Handler.Writable.
func (c *Conn) SendWindow(s *Stream) int {
	if s.state == stateFree || s.localEnded() || c.err != nil {
		return 0
	}
	w := max(min(s.sendWindow, c.flow.send), 0)
	if w == 0 {
		s.blocked = true
	}
	return int(w)
}

// WriteData queues DATA frames of at most PeerMaxFrame bytes each for as
// much of p as the windows allow (RFC 9113 section 6.1, 6.9) and returns
// how many bytes it took. END_STREAM goes with the last byte of p when end
// is set (p empty with end: an empty DATA frame with END_STREAM). When it
// takes less than len(p), Handler.Writable follows once a window grows.
// It does not keep p.
func (c *Conn) WriteData(s *Stream, p []byte, end bool) int {
	c.finishPending()
	if s.state == stateFree || s.localEnded() || c.err != nil || len(p) == 0 && !end {
		return 0
	}
	taken := 0
	for {
		w := min(int64(len(p)-taken), max(min(s.sendWindow, c.flow.send), 0), int64(c.peerMax))
		last := taken+int(w) == len(p)
		if w == 0 && !last {
			s.blocked = true
			return taken
		}
		c.out = AppendData(c.out, s.ID, end && last, p[taken:taken+int(w)])
		c.debit(s, int(w))
		taken += int(w)
		if last {
			if end {
				c.endLocal(s, true)
			}
			return taken
		}
	}
}

// debit takes n sent bytes off both send windows.
func (c *Conn) debit(s *Stream, n int) {
	s.sendWindow -= int64(n)
	c.flow.send -= int64(n)
	s.sentData, c.flow.sentData = true, true
	c.budget.progress(n)
}

// AppendDataHeader is WriteData for engines that write the payload
// themselves: it queues only the 9-byte header of one DATA frame of n
// bytes, with END_STREAM when end is set, and takes n off the windows. The
// engine must put exactly n payload bytes right after Out (appended to its
// copy of Out, or by writev) before it calls into the Conn again. It
// returns false, queueing nothing, when n exceeds SendWindow(s) or
// PeerMaxFrame, or the stream cannot send.
func (c *Conn) AppendDataHeader(s *Stream, n int, end bool) bool {
	c.finishPending()
	if n < 0 || n > c.SendWindow(s) && n > 0 || n > int(c.peerMax) || s.state == stateFree || s.localEnded() || c.err != nil {
		return false
	}
	var f Flags
	if end {
		f = FlagEndStream
	}
	c.out = AppendFrameHeader(c.out, FrameHeader{Length: uint32(n), Type: FrameData, Flags: f, StreamID: s.ID})
	c.debit(s, n)
	if end {
		c.endLocal(s, false)
	}
	return true
}
