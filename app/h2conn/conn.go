package h2conn

import (
	"crypto/tls"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/app/wire"
	"gale/h2"
	"gale/handlers"
)

// The HTTP/2 connection engine. A connection becomes HTTP/2 when TLS
// negotiated ALPN "h2", or, on a plain listener, when its first bytes are
// the client preface (h2c with prior knowledge, RFC 9113 section 3.3),
// checked before the HTTP/1.1 parser ever sees them. From then on its
// bytes go to the protocol core (package h2: frames, HPACK, stream states
// and flow control over byte slices), and each stream is an exchange
// (exchange.go) answered by the same router and handlers as an HTTP/1.1
// request. The engine reads and writes through the connection's
// transport (wire.Conn), shared with HTTP/1.1, so TLS sits underneath
// unchanged.
//
// Output leaves in one of two ways. Inline, the core's frames are handed
// to gnet after every event, as HTTP/1.1 responses are. When a body is too
// large for the loop's buffers, or the socket stops taking bytes while
// bodies wait, the connection moves its output to a writer goroutine on a
// duplicate of the socket (writer.go) for the rest of its life: the
// loop keeps producing frames, but only while the writer holds less than
// server.max_buffered_output, and the writer wakes the loop when it has
// room again. gnet has no writable callback, so this is what keeps a fast
// download at socket speed and a slow one at bounded memory.

// maxProducePerEvent bounds the body bytes one connection produces inline
// in one event before it lets the loop's other connections have a turn (it
// wakes itself to go on).
const maxProducePerEvent = 4 << 20

// Conn is one HTTP/2 connection's engine state. Owned by its loop.
type Conn struct {
	wc       *wire.Conn       // the transport
	redirect handlers.Handler // answers every request on redirect_to_https listeners; nil elsewhere
	core     h2.Conn
	cfg      h2.Config

	ex            []*exchange // by h2.Stream.Slot; made once per slot, reused
	nwait         int         // exchanges waiting for the file cache
	active        []*exchange // exchanges with body bytes left to send, in round-robin order
	toDispatch    []*exchange // streams of forwarding routes held until the read batch ended (dispatch.go)
	resetsCharged uint64      // the core's resets already charged to the address and the loop (resets.go)
	turn          int         // where the next production round starts in active

	hdr      []byte // HPACK block being built
	lower    []byte // a field name being lower-cased
	produced int    // body bytes produced inline during the current event

	wantWriter  bool    // output must move to the writer once gnet's buffer drained
	w           *writer // the off-loop writer, once started
	now         int64   // when the current event began (unix ns): the time of everything it does
	progress    int64   // when body bytes were last produced, or an exchange began waiting to send (unix ns)
	goingAway   bool    // GOAWAY sent: no new streams, close once none remain
	woke        bool    // a Wake to continue production is pending
	inEvent     bool    // the connection's own event runs (Traffic): it flushes at its end
	held        bool    // input is left unfed until the output drained (feed)
	bodyCheck   int64   // when the sweep next looks for request bodies past timeouts.read_body (unix ns)
	memHeld     int64   // in-memory body bytes the active exchanges hold (memCap)
	parked      int     // exchanges waiting for memHeld to shrink (exchange.park)
	closing     bool    // the connection closes once its output drained
	lingerUntil int64   // when a lingering close gives up waiting for the client; 0 = not lingering
	altSvc      []byte  // the Alt-Svc value advertising HTTP/3 on the listener (SetAltSvc); nil for none
}

var _ wire.Engine = (*Conn)(nil)

// New makes the connection of transport wc an HTTP/2 connection under
// set, with redirect answering its requests when it is not nil. st is the
// TLS session's state when ALPN chose h2, nil for h2c: a TLS 1.2 session
// with a cipher suite RFC 9113 forbids gets GOAWAY(INADEQUATE_SECURITY)
// at once. It runs on the loop, before any byte of the connection was
// handed to the HTTP/1.1 parser.
func New(wc *wire.Conn, set *wire.Settings, redirect handlers.Handler, st *tls.ConnectionState) *Conn {
	h := &Conn{wc: wc, redirect: redirect, cfg: set.HTTP2}
	h.core.Init(&h.cfg, h)
	wc.Loop.Stats.H2Conns.Add(1)
	h.now = time.Now().UnixNano()
	if h.refuseSpent() {
		return h
	}
	if st != nil && !cipherAllowed(st.Version, st.CipherSuite) {
		h.core.GoAway(h2.InadequateSecurity)
		h.goingAway = true
	}
	return h
}

// Preface says what the first bytes of a plain connection are.
type Preface int

const (
	NotPreface   Preface = iota // not the HTTP/2 client preface
	MaybePreface                // a prefix of it: more bytes decide
	IsPreface                   // the whole client preface
)

// SniffPreface reports whether b (the first bytes a plain connection
// sent) is the HTTP/2 client preface, could still become it, or is not
// it.
func SniffPreface(b []byte) Preface {
	p := h2.ClientPreface
	n := min(len(b), len(p))
	if string(b[:n]) != p[:n] {
		return NotPreface
	}
	if n < len(p) {
		return MaybePreface
	}
	return IsPreface
}

// cipherAllowed reports whether a TLS 1.2 cipher suite is allowed under
// HTTP/2: RFC 9113 section 9.2.2 forbids every suite but ephemeral key
// exchange with an AEAD cipher. TLS 1.3 suites are all allowed.
func cipherAllowed(version, suite uint16) bool {
	if version >= 0x0304 {
		return true
	}
	switch suite {
	case 0xc02b, 0xc02c, 0xc02f, 0xc030, 0xcca8, 0xcca9: // ECDHE_{ECDSA,RSA}_WITH_AES_{128,256}_GCM, CHACHA20_POLY1305
		return true
	}
	return false
}

// Traffic implements wire.Engine: it feeds what arrived to the core and
// writes what it answered. On a layered (TLS) connection whose client
// sent close_notify, or whose session failed, the connection closes once
// its output drained.
func (h *Conn) Traffic() gnet.Action {
	h.inEvent = true
	a := h.traffic()
	h.inEvent = false
	if h.wc.Layered() {
		return h.afterLayer(a)
	}
	return a
}

// traffic feeds what arrived to the core and writes what it answered.
func (h *Conn) traffic() gnet.Action {
	cs := h.wc
	h.woke = false
	h.produced = 0
	h.now = time.Now().UnixNano()
	if h.w != nil && h.w.failed() {
		return gnet.Close
	}
	if h.closing {
		cs.Consume(-1) // nothing more is read once closing
		if h.pendingOutput() == 0 && h.lingerUntil == 0 {
			h.startLinger(h.now)
		}
		return gnet.None
	}
	buf := cs.Inbound()
	if len(buf) > 0 {
		n, err := h.feed(buf)
		h.chargeResets()
		if err == nil {
			err = h.core.Err()
		}
		h.dispatchDeferred()
		if n > 0 {
			cs.Consume(n)
			cs.Loop.Stats.BytesIn.Add(uint64(n))
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
func (h *Conn) feed(buf []byte) (int, error) {
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
func (h *Conn) maxHeldInput() int {
	w := int(h.cfg.InitialConnWindow)
	if w == 0 {
		w = h2.DefaultInitialConnWindow
	}
	return w + wire.MaxPendingInput
}

// maybeClose closes the connection when the core says it is done (a
// connection error, or a graceful GOAWAY with no stream left).
func (h *Conn) maybeClose() gnet.Action {
	if h.core.Closed() || (h.goingAway && h.core.Streams() == 0 && len(h.active) == 0) {
		return h.closeAfterOutput()
	}
	return gnet.None
}

// closeAfterOutput begins closing: once the output drained, the write
// side is shut (after close_notify on TLS) and the connection lingers,
// reading and dropping what the client still sends, until the client
// closes or wire.LingerTime passed; closing with unread bytes would make
// the kernel reset the connection and destroy the final frames (GOAWAY).
func (h *Conn) closeAfterOutput() gnet.Action {
	h.closing = true
	if h.pendingOutput() == 0 && h.lingerUntil == 0 {
		h.startLinger(time.Now().UnixNano())
	}
	return gnet.None
}

// startLinger shuts the write side and starts the linger deadline.
func (h *Conn) startLinger(now int64) {
	cs := h.wc
	if h.w != nil {
		// The writer holds the TLS state's write side: shut the
		// socket itself (no close_notify).
		cs.ShutdownWrite()
		h.lingerUntil = now + int64(wire.LingerTime)
		cs.Consume(-1)
		return
	}
	cs.CloseWrite()
	h.lingerUntil = now + int64(wire.LingerTime)
	cs.Consume(-1)
}

// closingCheck runs from the sweep while the connection closes: it
// starts the linger once the output drained and reports when to close.
func (h *Conn) closingCheck(now int64) bool {
	if h.pendingOutput() > 0 {
		return false
	}
	if h.lingerUntil == 0 {
		h.startLinger(now)
		return false
	}
	return now > h.lingerUntil
}

// pendingOutput is how many bytes wait to leave: in gnet's buffer, or in
// the writer's queue.
func (h *Conn) pendingOutput() int {
	if h.w != nil {
		return h.w.queuedBytes()
	}
	return h.wc.OutboundBuffered()
}

// flush hands the core's output to gnet or the writer, and lets the
// writer go on with everything queued.
func (h *Conn) flush() {
	h.moveOut()
	if h.w != nil {
		h.w.kick()
	}
}

// moveOut hands the core's output to gnet or queues it for the writer
// (which writes it at the next kick).
func (h *Conn) moveOut() {
	out := h.core.Out()
	if len(out) == 0 {
		return
	}
	cs := h.wc
	cs.Loop.Stats.BytesOut.Add(uint64(len(out)))
	if h.w != nil {
		h.w.queueBytes(out)
	} else if !cs.Dead {
		cs.Send(out)
	}
	h.core.ResetOut()
}

// room is how many more bytes the connection may queue now: the output
// bound minus what already waits.
func (h *Conn) room() int {
	set := h.wc.Loop.Shared.Set.Load()
	return set.MaxOut - h.pendingOutput() - len(h.core.Out())
}

// flushLater has what a stream queued from outside the connection's own
// event (an upstream's) written at the connection's next event, which a
// Wake brings: the frames of every stream answered meanwhile leave
// together, in one write (one TLS record) rather than one each.
func (h *Conn) flushLater() {
	if !h.inEvent {
		h.wake()
	}
}

// wake asks the loop to run onTraffic again soon.
func (h *Conn) wake() {
	if !h.woke && !h.wc.Dead {
		h.woke = true
		_ = h.wc.C.Wake(nil)
	}
}

// goAway begins a graceful stop of the connection: GOAWAY with the last
// stream processed; streams in flight finish; the connection closes when
// none remain. It runs on the loop (drain).
func (h *Conn) goAway() {
	if h.goingAway {
		return
	}
	h.goingAway = true
	h.core.GoAway(h2.NoError)
	h.flush()
	if h.wc.Dead {
		return
	}
	if h.core.Streams() == 0 && len(h.active) == 0 {
		h.closeAfterOutput()
	}
}

// Check implements wire.Engine: it runs from the sweep and reports
// whether the connection must be closed now: timeouts, a drained final GOAWAY, and resuming output that
// waited for gnet's buffer to drain.
func (h *Conn) Check(now int64, set *wire.Settings) bool {
	h.now = now
	cs := h.wc
	if h.w == nil && cs.WriteStalled(now, set.Write) {
		cs.Loop.Stats.TimedOut.Add(1)
		return true
	}
	if h.w != nil && h.w.failed() {
		return true
	}
	if h.closing {
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
			cs.Loop.Stats.TimedOut.Add(1)
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
		// Exchanges answered later (a file-cache load, an upstream)
		// are timed by what they wait for.
		if h.nwait == 0 && now-cs.LastActive > set.ReadBody {
			cs.Loop.Stats.TimedOut.Add(1)
			return true
		}
		return false
	}
	if now-cs.LastActive > set.Idle {
		cs.Loop.Stats.TimedOut.Add(1)
		h.goAway()
		return false
	}
	return false
}

// streamActive records progress of a stream: a request arrived, body
// bytes arrived, or a response ended. The read_body and idle timeouts
// count from it (check).
func (h *Conn) streamActive() { h.wc.LastActive = h.now }

// Release implements wire.Engine: it drops what the connection holds once
// gnet closed it.
func (h *Conn) Release() {
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

// afterLayer runs after the engine on an open TLS connection: when the
// client sent close_notify (or the session failed), the connection closes
// once its output drained.
func (h *Conn) afterLayer(a gnet.Action) gnet.Action {
	cs := h.wc
	if eof, _ := cs.Layer().Ended(); a != gnet.None || cs.Dead || !eof {
		return a
	}
	if h.pendingOutput() == 0 {
		return gnet.Close
	}
	h.closing = true
	return gnet.None
}

// Drain implements wire.Engine for a graceful stop: GOAWAY goes out, and
// the connection closes once its streams are done. It reports whether the
// connection can close now.
func (h *Conn) Drain() bool {
	h.goAway()
	return !h.wc.Dead && h.closing && h.pendingOutput() == 0
}

// Closing reports whether the connection closes once its output drained.
func (h *Conn) Closing() bool { return h.closing }

// Pending is how many of the connection's exchanges wait to be answered
// later (a load of the file cache).
func (h *Conn) Pending() int {
	n := 0
	for _, ex := range h.ex {
		if ex != nil && ex.pending != nil {
			n++
		}
	}
	return n
}
