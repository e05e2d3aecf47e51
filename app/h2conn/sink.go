package h2conn

import (
	"strconv"
	"time"

	"gale/app/wire"
	"gale/codec"
	"gale/h2"
	"gale/h2/hpack"
	"gale/handlers"
)

// The response sink of a stream whose handler answers later and streams
// its response (the proxy, FastCGI): the head becomes a HEADERS block,
// body bytes DATA frames under the stream's and the connection's windows,
// trailers a final HEADERS block, an abort RST_STREAM. Bytes the windows
// do not take at once wait in the sink, and the exchange joins the
// connection's round-robin production (response.go) until they are sent;
// Room tells the producer how much more the client can take, so what
// waits is bounded by the windows and one piece of overshoot.

// streamSink is one exchange's handlers.ResponseSink. It runs on the
// connection's loop only.
type streamSink struct {
	ex       *exchange
	out      []byte // body bytes written and not yet framed, from off
	off      int
	head     bool   // the final head went out
	ended    bool   // Finish came: END_STREAM follows the last of out
	closed   bool   // END_STREAM or RST_STREAM went out: nothing more is sent
	trailers []byte // the HPACK block of the trailer fields Finish gave, sent after out
}

var _ handlers.ResponseSink = (*streamSink)(nil)

// reset prepares the sink for a new stream, keeping a small buffer.
func (s *streamSink) reset() {
	if cap(s.out) > slotKeep {
		s.out = nil
	}
	if cap(s.trailers) > slotKeep {
		s.trailers = nil
	}
	s.out, s.off = s.out[:0], 0
	s.head, s.ended, s.closed = false, false, false
	s.trailers = s.trailers[:0]
}

// queued is how many body bytes wait for the windows.
func (s *streamSink) queued() int { return len(s.out) - s.off }

// usable reports whether the stream can still be written to.
func (s *streamSink) usable() bool { return s.ex.s != nil && !s.closed && !s.ex.h.wc.Dead }

// WriteInterim implements handlers.ResponseSink: a 1xx response as a
// HEADERS block without END_STREAM (RFC 9113 section 8.1).
func (s *streamSink) WriteInterim(status int, fields []codec.Header) {
	if !s.usable() || s.head || status < 100 || status > 199 || status == 101 {
		return
	}
	h := s.ex.h
	h.hdr = hpack.AppendStatus(h.hdr[:0], status)
	h.hdr, h.lower = handlers.AppendHPACKFields(h.hdr, h.lower, fields)
	h.core.WriteHeaders(s.ex.s, h.hdr, false)
}

// WriteHead implements handlers.ResponseSink: the final head. A response
// that has no body (to HEAD, 204, 304, or of length 0) ends the stream
// with it: a gRPC status without messages ("Trailers-Only") is such a
// response, and must arrive as one HEADERS frame.
func (s *streamSink) WriteHead(hd handlers.Head) {
	ex := s.ex
	if !s.usable() || s.head {
		return
	}
	h := ex.h
	h.now = time.Now().UnixNano()
	isHead := ex.ctx.Req.IsHead()
	bodyless := codec.NoBody(false, hd.Status)
	h.hdr = hpack.AppendStatus(h.hdr[:0], hd.Status)
	h.hdr, h.lower = handlers.AppendHPACKFields(h.hdr, h.lower, hd.Fields)
	if hd.Length > 0 && !bodyless || hd.Length == 0 && isHead {
		var n [20]byte
		h.hdr = hpack.AppendField(h.hdr, fieldContentLength, strconv.AppendInt(n[:0], hd.Length, 10))
	}
	f := wire.CommonFields(h.altSvc, nil, hd.Fields)
	h.hdr = f.AppendHPACK(h.hdr)
	end := isHead || bodyless || hd.Length == 0
	h.core.WriteHeaders(ex.s, h.hdr, end)
	s.head, s.closed = true, end
	ex.status = hd.Status
	ex.answered = true
	if h.wc.Loop.Shared.Access != nil {
		ex.rec.FromRequest(ex.ctx.Req, ex.ctx.Cert)
		ex.recBuf = ex.rec.Keep(ex.recBuf)
	}
	if h.wc.Loop.Shared.Metered {
		ex.meter.Head = h.now
	}
}

// Room implements handlers.ResponseSink: what the stream's and the
// connection's windows and the connection's output bound take now, less
// what already waits.
func (s *streamSink) Room() int {
	if !s.usable() {
		return 0
	}
	h := s.ex.h
	return max(min(h.core.SendWindow(s.ex.s), h.room())-s.queued(), 0)
}

// WriteBody implements handlers.ResponseSink: what the windows take goes
// out as DATA now, the rest waits in the sink.
func (s *streamSink) WriteBody(p []byte) {
	if !s.usable() || len(p) == 0 || !s.head {
		return
	}
	ex := s.ex
	if s.queued() == 0 {
		n := ex.h.core.WriteData(ex.s, p, false)
		ex.sent += int64(n)
		p = p[n:]
		if len(p) == 0 {
			return
		}
	}
	if s.off == len(s.out) {
		s.out, s.off = s.out[:0], 0
	}
	s.out = append(s.out, p...)
	ex.h.enqueue(ex)
}

// Flush implements handlers.ResponseSink: the frames go to the
// connection at the end of its current event, or at its next one when the
// producer runs outside it (flushLater); bytes still waiting for the
// windows are produced then too.
func (s *streamSink) Flush() { s.ex.h.flushLater() }

// Finish implements handlers.ResponseSink: END_STREAM after the last body
// byte, on the trailers when there are any.
func (s *streamSink) Finish(trailers []codec.Header) {
	if !s.usable() || !s.head {
		return
	}
	h := s.ex.h
	s.ended = true
	if len(trailers) > 0 {
		s.trailers, h.lower = handlers.AppendHPACKFields(s.trailers[:0], h.lower, trailers)
	}
	if s.queued() == 0 {
		s.end()
	}
}

// end sends END_STREAM once every body byte went: on the trailers, or on
// an empty DATA frame.
func (s *streamSink) end() {
	ex := s.ex
	if len(s.trailers) > 0 {
		ex.h.core.WriteHeaders(ex.s, s.trailers, true)
	} else {
		ex.h.core.WriteData(ex.s, nil, true)
	}
	s.closed = true
}

// Abort implements handlers.ResponseSink: the stream is reset, so that a
// cut response never passes for a whole one.
func (s *streamSink) Abort() { s.resetStream(h2.InternalError) }

// Cancel implements handlers.Canceler: the stream is reset with CANCEL.
func (s *streamSink) Cancel() { s.resetStream(h2.Cancel) }

var _ handlers.Canceler = (*streamSink)(nil)

// resetStream ends the stream with RST_STREAM(code), dropping what waits.
func (s *streamSink) resetStream(code h2.ErrCode) {
	ex := s.ex
	if !s.usable() {
		return
	}
	s.closed = true
	s.out, s.off = s.out[:0], 0
	ex.h.dequeue(ex)
	ex.h.core.Reset(ex.s, code)
	ex.h.flushLater()
}

// step sends up to limit of the waiting body bytes, and END_STREAM once
// they went and Finish came. It returns how many bytes it sent.
func (s *streamSink) step(limit int) int {
	ex := s.ex
	if !s.usable() {
		s.out, s.off = s.out[:0], 0
		return 0
	}
	n := 0
	if q := s.queued(); q > 0 && limit > 0 {
		n = ex.h.core.WriteData(ex.s, s.out[s.off:s.off+min(q, limit)], false)
		s.off += n
		ex.sent += int64(n)
		ex.h.produced += n
	}
	if s.queued() == 0 && s.ended && !s.closed {
		s.end()
	}
	return n
}
