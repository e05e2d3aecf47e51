package app

import (
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/app/wire"
	"gale/h2"
)

// The HTTP/2 connection engine. A connection becomes HTTP/2 when TLS
// negotiated ALPN "h2", or, on a plain listener, when its first bytes are
// the client preface (h2c with prior knowledge, RFC 9113 section 3.3),
// checked before the HTTP/1.1 parser ever sees them. From then on its
// bytes go to the protocol core (package h2: frames, HPACK, stream states
// and flow control over byte slices), and each stream is an exchange
// (h2_exchange.go) answered by the same router and handlers as an
// HTTP/1.1 request. The transport seam of conn (inbound, consume, send)
// is shared with HTTP/1.1, so TLS sits underneath unchanged.
//
// Output leaves in one of two ways. Inline, the core's frames are handed
// to gnet after every event, as HTTP/1.1 responses are. When a body is too
// large for the loop's buffers, or the socket stops taking bytes while
// bodies wait, the connection moves its output to a writer goroutine on a
// duplicate of the socket (h2_writer.go) for the rest of its life: the
// loop keeps producing frames, but only while the writer holds less than
// server.max_buffered_output, and the writer wakes the loop when it has
// room again. gnet has no writable callback, so this is what keeps a fast
// download at socket speed and a slow one at bounded memory.

// maxProducePerEvent bounds the body bytes one connection produces inline
// in one event before it lets the loop's other connections have a turn (it
// wakes itself to go on).
const maxProducePerEvent = 4 << 20

// h2conn is one HTTP/2 connection's engine state. Owned by its loop.
type h2conn struct {
	cs   *conn
	core h2.Conn
	cfg  h2.Config

	ex     []*h2exchange // by h2.Stream.Slot; made once per slot, reused
	nwait  int           // exchanges waiting for the file cache
	active []*h2exchange // exchanges with body bytes left to send, in round-robin order
	turn   int           // where the next production round starts in active

	hdr      []byte // HPACK block being built
	lower    []byte // a field name being lower-cased
	date     []byte // the Date line of the current second
	produced int    // body bytes produced inline during the current event

	wantWriter bool      // output must move to the writer once gnet's buffer drained
	w          *h2writer // the off-loop writer, once started
	now        int64     // when the current event began (unix ns): the time of everything it does
	progress   int64     // when body bytes were last produced, or an exchange began waiting to send (unix ns)
	goingAway  bool      // GOAWAY sent: no new streams, close once none remain
	woke       bool      // a Wake to continue production is pending
	held       bool      // input is left unfed until the output drained (feed)
	bodyCheck  int64     // when the sweep next looks for request bodies past timeouts.read_body (unix ns)
	memHeld    int64     // in-memory body bytes the active exchanges hold (memCap)
	parked     int       // exchanges waiting for memHeld to shrink (h2exchange.park)
}

// startH2 makes cs an HTTP/2 connection. It runs on the loop, before any
// byte of the connection was handed to the HTTP/1.1 parser.
func (cs *conn) startH2(set *wire.Settings) {
	h := &h2conn{cs: cs, cfg: set.HTTP2}
	h.core.Init(&h.cfg, h)
	cs.h2 = h
	cs.loop.Stats.H2Conns.Add(1)
}

// prefaceState says what the first bytes of a plain connection are.
const (
	notPreface = iota
	maybePreface
	isPreface
)

// sniffPreface reports whether b (the first bytes a plain connection sent)
// is the HTTP/2 client preface, could still become it, or is not it.
func sniffPreface(b []byte) int {
	p := h2.ClientPreface
	n := min(len(b), len(p))
	if string(b[:n]) != p[:n] {
		return notPreface
	}
	if n < len(p) {
		return maybePreface
	}
	return isPreface
}

// onTraffic feeds what arrived to the core and writes what it answered.
func (h *h2conn) onTraffic() gnet.Action {
	cs := h.cs
	h.woke = false
	h.produced = 0
	h.now = time.Now().UnixNano()
	if h.w != nil && h.w.failed() {
		return gnet.Close
	}
	if cs.closing {
		cs.Consume(-1) // nothing more is read once closing
		if h.pendingOutput() == 0 && cs.lingerUntil == 0 {
			h.startLinger(h.now)
		}
		return gnet.None
	}
	buf := cs.Inbound()
	if len(buf) > 0 {
		n, err := h.feed(buf)
		if n > 0 {
			cs.Consume(n)
			cs.loop.Stats.BytesIn.Add(uint64(n))
		}
		if cs.Dead {
			return gnet.None
		}
		if err != nil {
			h.flush()
			return h.closeAfterOutput()
		}
		if h.held && cs.InboundBuffered() > h.maxHeldInput() {
			return gnet.Close
		}
	}
	h.produce()
	h.flush()
	if cs.Dead {
		return gnet.None
	}
	return h.maybeClose()
}

// feedChunk is how many input bytes the core is fed at a time: the output
// bound is checked between chunks, so that a burst of tiny requests (a
// few bytes each, their fields indexed in the HPACK table) cannot queue
// responses many times its size without bound.
const feedChunk = 4 << 10

// feed feeds buf to the core a chunk at a time (a frame longer than a
// chunk whole) while the connection may queue more output, and returns
// how many bytes the core used. Input left over is held (h.held) until
// the output drained below server.max_buffered_output: the writer wakes
// the loop then, or the sweep does (check).
func (h *h2conn) feed(buf []byte) (int, error) {
	used := 0
	for used < len(buf) {
		if h.room() <= 0 {
			h.held = true
			if h.w != nil {
				h.w.askRoom()
			}
			return used, nil
		}
		rest := buf[used:]
		k := min(len(rest), feedChunk)
		h.core.SetBacklog(h.pendingOutput())
		n, err := h.core.Feed(rest[:k])
		if n == 0 && err == nil && k < len(rest) {
			// The next frame is longer than a chunk (the preface,
			// shorter, is behind): give it whole.
			k = min(len(rest), h2.FrameHeaderLen+(int(rest[0])<<16|int(rest[1])<<8|int(rest[2])))
			n, err = h.core.Feed(rest[:k])
		}
		used += n
		if err != nil || n == 0 {
			h.held = false
			return used, err
		}
	}
	h.held = false
	return used, nil
}

// maxHeldInput bounds the input a connection may hold while its output
// drains: what the client may send within the connection window we
// granted (nothing is granted while input is held), and as much again
// of other frames; past it the connection is closed, since gnet cannot
// stop reading.
func (h *h2conn) maxHeldInput() int {
	w := int(h.cfg.InitialConnWindow)
	if w == 0 {
		w = h2.DefaultInitialConnWindow
	}
	return w + maxPendingInput
}

// maybeClose closes the connection when the core says it is done (a
// connection error, or a graceful GOAWAY with no stream left).
func (h *h2conn) maybeClose() gnet.Action {
	if h.core.Closed() || (h.goingAway && h.core.Streams() == 0 && len(h.active) == 0) {
		return h.closeAfterOutput()
	}
	return gnet.None
}

// closeAfterOutput begins closing: once the output drained, the write
// side is shut (after close_notify on TLS) and the connection lingers,
// reading and dropping what the client still sends, until the client
// closes or lingerTime passed; closing with unread bytes would make the
// kernel reset the connection and destroy the final frames (GOAWAY).
func (h *h2conn) closeAfterOutput() gnet.Action {
	cs := h.cs
	cs.closing, cs.closeAfter, cs.linger = true, true, true
	if h.pendingOutput() == 0 && cs.lingerUntil == 0 {
		h.startLinger(time.Now().UnixNano())
	}
	return gnet.None
}

// startLinger shuts the write side and starts the linger deadline.
func (h *h2conn) startLinger(now int64) {
	cs := h.cs
	if h.w != nil {
		// The writer holds the TLS state's write side: shut the
		// socket itself (no close_notify).
		cs.ShutdownWrite()
		cs.lingerUntil = now + int64(lingerTime)
		cs.Consume(-1)
		return
	}
	cs.startLinger(now)
}

// closingCheck runs from the sweep while the connection closes: it
// starts the linger once the output drained and reports when to close.
func (h *h2conn) closingCheck(now int64) bool {
	cs := h.cs
	if h.pendingOutput() > 0 {
		return false
	}
	if cs.lingerUntil == 0 {
		h.startLinger(now)
		return false
	}
	return now > cs.lingerUntil
}

// pendingOutput is how many bytes wait to leave: in gnet's buffer, or in
// the writer's queue.
func (h *h2conn) pendingOutput() int {
	if h.w != nil {
		return h.w.queuedBytes()
	}
	return h.cs.OutboundBuffered()
}

// flush hands the core's output to gnet or the writer, and lets the
// writer go on with everything queued.
func (h *h2conn) flush() {
	h.moveOut()
	if h.w != nil {
		h.w.kick()
	}
}

// moveOut hands the core's output to gnet or queues it for the writer
// (which writes it at the next kick).
func (h *h2conn) moveOut() {
	out := h.core.Out()
	if len(out) == 0 {
		return
	}
	cs := h.cs
	cs.loop.Stats.BytesOut.Add(uint64(len(out)))
	if h.w != nil {
		h.w.queueBytes(out)
	} else if !cs.Dead {
		cs.Send(out)
	}
	h.core.ResetOut()
}

// room is how many more bytes the connection may queue now: the output
// bound minus what already waits.
func (h *h2conn) room() int {
	set := h.cs.loop.srv.sh.Set.Load()
	return set.MaxOut - h.pendingOutput() - len(h.core.Out())
}

// wake asks the loop to run onTraffic again soon.
func (h *h2conn) wake() {
	if !h.woke && !h.cs.Dead {
		h.woke = true
		_ = h.cs.C.Wake(nil)
	}
}

// goAway begins a graceful stop of the connection: GOAWAY with the last
// stream processed; streams in flight finish; the connection closes when
// none remain. It runs on the loop (drain).
func (h *h2conn) goAway() {
	if h.goingAway {
		return
	}
	h.goingAway = true
	h.core.GoAway(h2.NoError)
	h.flush()
	if h.cs.Dead {
		return
	}
	if h.core.Streams() == 0 && len(h.active) == 0 {
		h.closeAfterOutput()
	}
}

// check runs from the sweep and reports whether the connection must be
// closed now: timeouts, a drained final GOAWAY, and resuming output that
// waited for gnet's buffer to drain.
func (h *h2conn) check(now int64, set *wire.Settings) bool {
	h.now = now
	cs := h.cs
	if h.w == nil && cs.WriteStalled(now, set.Write) {
		cs.loop.Stats.TimedOut.Add(1)
		return true
	}
	if h.w != nil && h.w.failed() {
		return true
	}
	if cs.closing {
		return h.closingCheck(now)
	}
	if h.held {
		// Input waits for the output to drain (feed); the write
		// timeouts bound the wait.
		if h.room() > 0 {
			h.wake()
		}
		return false
	}
	if h.wantWriter || len(h.active) > 0 {
		if now-h.progress > set.Write {
			// Bodies wait and none moved for timeouts.write: the
			// client keeps its windows shut or reads nothing.
			cs.loop.Stats.TimedOut.Add(1)
			return true
		}
		if h.w == nil && cs.OutboundBuffered() == 0 {
			h.wake() // resume production (and start the writer) on the loop
		}
		return false
	}
	// lastActive is the last stream event (a request, body bytes, a
	// response ended: streamActive), not the last frame: PING, SETTINGS,
	// PRIORITY or WINDOW_UPDATE frames on their own hold neither streams
	// nor an idle connection, as x/net's IdleTimeout does not count PING.
	if h.core.Streams() > 0 {
		if now >= h.bodyCheck {
			h.bodyCheck = now + set.ReadBody/4
			if h.expireBodies(now, set.ReadBody) {
				h.produce()
				h.flush()
				return cs.Dead
			}
		}
		if now-cs.LastActive > set.ReadBody {
			cs.loop.Stats.TimedOut.Add(1)
			return true
		}
		return false
	}
	if now-cs.LastActive > set.Idle {
		cs.loop.Stats.TimedOut.Add(1)
		h.goAway()
		return false
	}
	return false
}

// streamActive records progress of a stream: a request arrived, body
// bytes arrived, or a response ended. The read_body and idle timeouts
// count from it (check).
func (h *h2conn) streamActive() { h.cs.LastActive = h.now }

// release drops what the connection holds once gnet closed it.
func (h *h2conn) release() {
	for _, ex := range h.ex {
		if ex != nil && ex.s != nil {
			ex.abandon()
		}
	}
	h.active = h.active[:0]
	if h.w != nil {
		h.w.abort()
	}
}

// afterTLS runs after the engine on an open TLS connection: when the
// client sent close_notify (or the session failed), the connection closes
// once its output drained.
func (h *h2conn) afterTLS(a gnet.Action) gnet.Action {
	cs := h.cs
	if eof, _ := cs.tls.Ended(); a != gnet.None || cs.Dead || !eof {
		return a
	}
	if h.pendingOutput() == 0 {
		return gnet.Close
	}
	cs.closing, cs.closeAfter = true, true
	return gnet.None
}
