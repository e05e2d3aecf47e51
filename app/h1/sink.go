package h1

import (
	"time"

	"math"
	"strconv"

	"gale/app/wire"
	"gale/codec"
	"gale/handlers"
)

// This file is the HTTP/1.1 connection's handlers.ResponseSink: the one
// place where the head and body framing of a response written later (the
// proxy's) are rendered for an HTTP/1.1 client, with codec's renderers.
// The producer hands over status, end-to-end fields, a length or -1, and
// de-framed body bytes; the sink renders the status line, Date when the
// fields have none, Content-Length or "Transfer-Encoding: chunked", the
// Connection field, and chunk framing. Nothing the producer relays frames
// the body.
//
// What one event writes leaves with one write at Flush (the proxy flushes
// once per upstream event): heads, framing and small body pieces gather
// in the loop's sink buffer, and larger body pieces are referenced where
// they are (the upstream connection's inbound buffer) and written in
// place by one writev, the way the loop's own output references large
// cached bodies (Conn.flush).

// inlineRelay is the largest body piece copied into the sink buffer; a
// larger one is referenced in place until Flush.
const inlineRelay = 16 << 10

// maxSinkSegs bounds the pieces referenced in place per write: with the
// bytes around them they make at most 2*maxSinkSegs+1 iovecs, within the
// 8 that golang.org/x/sys/unix.Writev (under gnet's Writev) converts
// without allocating. A piece past it flushes what was gathered first.
const maxSinkSegs = 3

const crlf = "\r\n"

// How the sink frames the body of the current response.
const (
	sinkNoBody  uint8 = iota // nothing follows the head (HEAD, 204, 304), or no head yet
	sinkLength               // Content-Length: the bytes as they are
	sinkChunked              // chunked coding (HTTP/1.1 clients, length unknown)
	sinkClose                // delimited by closing the connection (HTTP/1.0 clients, length unknown)
)

// responseSink is one HTTP/1.1 connection's response sink. start prepares it
// for each request; it is used on the connection's loop only.
type responseSink struct {
	cs      *Conn
	version codec.Version // the request's
	keep    bool          // the request lets the connection stay open
	isHead  bool          // the request is HEAD: the body is dropped
	framing uint8         // sinkNoBody, ...
	maxOut  int           // server.max_buffered_output for the request
	wrote   int64         // bytes handed to the connection for this response
	body    int64         // body payload bytes written, for the access log
}

var _ handlers.ResponseSink = (*responseSink)(nil)

// start prepares the sink for req, from answer: the request's bytes are
// valid now but not when the response is written.
func (s *responseSink) start(req *codec.Request, set *wire.Settings) {
	s.version = req.Version
	s.keep = req.KeepAlive
	s.isHead = req.IsHead()
	s.framing = sinkNoBody
	s.maxOut = set.MaxOut
	s.wrote, s.body = 0, 0
}

// buffer returns the loop's sink buffer for s. The buffer holds one
// sink's bytes at a time: bytes another connection's sink left unflushed
// (which a correct producer never does) are handed to it first.
func (s *responseSink) buffer() []byte {
	l := s.cs.loop
	if l.sinkOwner != s {
		if o := l.sinkOwner; o != nil && (len(l.sinkBuf) > 0 || len(l.sinkSegs) > 0) {
			o.Flush()
		}
		l.sinkOwner = s
	}
	return l.sinkBuf
}

// WriteInterim renders a 1xx response; HTTP/1.0 clients get none (RFC
// 9110 section 15.2).
func (s *responseSink) WriteInterim(status int, fields []codec.Header) {
	if s.version == codec.HTTP10 {
		return
	}
	b := s.buffer()
	b = codec.AppendStatusLine(b, status)
	b = codec.AppendFieldLines(b, fields)
	s.cs.loop.sinkBuf = append(b, crlf...)
}

// WriteHead renders the final head and chooses the body's framing: a
// known length as Content-Length; an unknown one chunked, or for an
// HTTP/1.0 client delimited by the close. A Content-Length with no body
// after it (HEAD, 304) is the representation's and is kept (RFC 9110
// section 8.6); 204 has none. The connection closes after the response
// when h.Close says so, the client did not ask to keep it, the body is
// close-delimited, or the server is stopping.
func (s *responseSink) WriteHead(h handlers.Head) {
	cs := s.cs
	st := h.Status
	closeConn := h.Close || !s.keep || cs.closeAfter || cs.loop.Shared.Draining.Load()
	switch {
	case codec.NoBody(s.isHead, st):
		s.framing = sinkNoBody
	case h.Length >= 0:
		s.framing = sinkLength
	case s.version == codec.HTTP10:
		s.framing = sinkClose
		closeConn = true
	default:
		s.framing = sinkChunked
	}
	b := appendStatusLine(s.buffer(), st, h.Reason)
	f := wire.CommonFields(cs.altSvc, nil, h.Fields)
	b = f.AppendLines(b)
	b = codec.AppendFieldLines(b, h.Fields)
	switch {
	case h.Length >= 0 && st >= 200 && st != 204:
		b = codec.AppendContentLength(b, h.Length)
	case s.framing == sinkChunked:
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	}
	b = codec.AppendConnection(b, closeConn, s.version == codec.HTTP10)
	cs.loop.sinkBuf = append(b, crlf...)
	if closeConn {
		cs.closeAfter = true
	}
	if cs.loop.Shared.Metered {
		cs.meter.Head = time.Now().UnixNano()
	}
}

// Room is what the client can take before the connection's output passes
// server.max_buffered_output.
func (s *responseSink) Room() int {
	if s.maxOut <= 0 {
		return math.MaxInt
	}
	waiting := s.cs.OutboundBuffered()
	if l := s.cs.loop; l.sinkOwner == s {
		waiting += len(l.sinkBuf)
		for i := range l.sinkSegs {
			waiting += len(l.sinkSegs[i].Body)
		}
	}
	return max(s.maxOut-waiting, 0)
}

// WriteBody frames p as the head chose (dropping it when no body
// follows). A piece larger than inlineRelay is referenced, not copied:
// it must stay valid until Flush (the proxy's pieces alias the upstream's
// inbound buffer, which it discards after flushing).
func (s *responseSink) WriteBody(p []byte) {
	if len(p) == 0 || s.framing == sinkNoBody {
		return
	}
	s.body += int64(len(p))
	l := s.cs.loop
	b := s.buffer()
	if s.framing == sinkChunked {
		b = codec.AppendChunkSize(b, len(p))
	}
	switch {
	case len(p) <= inlineRelay:
		b = append(b, p...)
	case len(l.sinkSegs) == maxSinkSegs:
		l.sinkBuf = b
		s.Flush()
		b = l.sinkBuf
		fallthrough
	default:
		l.sinkSegs = append(l.sinkSegs, wire.Segment{At: len(b), Body: p})
	}
	if s.framing == sinkChunked {
		b = append(b, crlf...)
	}
	l.sinkBuf = b
}

// Flush hands what was gathered to the connection: one write, or one
// writev around the pieces referenced in place. A failing write closes
// the connection inside the call.
func (s *responseSink) Flush() {
	l := s.cs.loop
	if l.sinkOwner != s || len(l.sinkBuf) == 0 && len(l.sinkSegs) == 0 {
		return
	}
	b, segs := l.sinkBuf, l.sinkSegs
	l.sinkBuf, l.sinkSegs = b[:0], segs[:0]
	if len(segs) == 0 {
		if !s.cs.Dead {
			s.cs.Send(b)
			s.wrote += int64(len(b))
		}
		return
	}
	iov := l.sinkIov[:0]
	prev, total := 0, len(b)
	for i := range segs {
		if segs[i].At > prev {
			iov = append(iov, b[prev:segs[i].At])
		}
		iov = append(iov, segs[i].Body)
		total += len(segs[i].Body)
		prev = segs[i].At
	}
	if prev < len(b) {
		iov = append(iov, b[prev:])
	}
	if !s.cs.Dead {
		s.cs.Sendv(iov)
		s.wrote += int64(total)
	}
	clear(iov)
	clear(segs)
	l.sinkIov = iov[:0]
}

// Finish ends the body: the last chunk and trailers for a chunked body.
func (s *responseSink) Finish(trailers []codec.Header) {
	if s.framing == sinkChunked {
		s.cs.loop.sinkBuf = codec.AppendLastChunk(s.buffer(), trailers)
	}
	s.framing = sinkNoBody
	s.Flush()
}

// Abort makes the connection close once what was written drained, so a
// cut body is never taken for a whole one.
func (s *responseSink) Abort() {
	s.framing = sinkNoBody
	s.cs.closeAfter = true
	s.Flush()
}

// switchProtocols renders the 101 that turns the connection into a
// tunnel (RFC 9110 section 15.2.2): fields, then the Connection and
// Upgrade fields the tunnel needs. HTTP/1.1 only.
func (s *responseSink) switchProtocols(fields []codec.Header, upgrade []byte) {
	b := codec.AppendStatusLine(s.buffer(), 101)
	b = codec.AppendFieldLines(b, fields)
	b = append(b, "Connection: Upgrade\r\nUpgrade: "...)
	b = append(b, upgrade...)
	s.cs.loop.sinkBuf = append(b, "\r\n\r\n"...)
	s.Flush()
}

// appendStatusLine renders a status line, always HTTP/1.1, with reason
// when one is given, else the registered phrase.
func appendStatusLine(b []byte, status int, reason []byte) []byte {
	if len(reason) == 0 || status < 100 || status > 599 {
		return codec.AppendStatusLine(b, status)
	}
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, reason...)
	return append(b, crlf...)
}

// release forgets bytes the sink gathered once the connection closed.
func (s *responseSink) release() {
	if l := s.cs.loop; l.sinkOwner == s {
		clear(l.sinkSegs)
		l.sinkBuf, l.sinkSegs = l.sinkBuf[:0], l.sinkSegs[:0]
		l.sinkOwner = nil
	}
}
