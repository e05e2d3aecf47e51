package tlsconn

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"

	"gale/acme"
	"gale/app/wire"
	"gale/clientcert"
	"gale/internal/tlsrec"
)

// The TLS transport of one client connection, with crypto/tls doing the
// protocol and no goroutine per connection once the handshake is done.
//
// A tls.Conn sits on a shim net.Conn whose reads and writes each work in
// one of three modes:
//
//   - handshake: the handshake runs in a short-lived goroutine. The shim's
//     Read waits for ciphertext that the loop feeds it from OnTraffic; its
//     Write appends to a pending buffer under a mutex and wakes the loop,
//     which hands the pending bytes to gnet before it writes anything else
//     on the connection (gnet runs I/O events before queued tasks, so an
//     AsyncWrite of the final flight could be overtaken by a response).
//   - loop: after the handshake the loop calls tls.Conn.Read and Write
//     itself. Read takes ciphertext from gnet's inbound buffer and, when
//     none is left, returns a net.Error whose Temporary() and Timeout()
//     are true: crypto/tls then keeps a partial record for the next call
//     instead of failing. Write appends the records to the loop's out
//     buffer, which goes to gnet with one Write.
//   - fd: a goroutine uses the same tls.Conn over a duplicate of the
//     socket: a large body encrypted by the transfer goroutine, a proxied
//     body copied off the loop, a tunnel (dup.go). The loop does
//     nothing on the connection in the direction handed off.
//
// A mode changes only while no other goroutine uses that direction: when
// the handshake goroutine has finished (observed through an atomic), and
// around a hand-off (started after, and observed finished before, any
// loop use). Deadline methods are no-ops: timeouts are the sweep's (and
// the hand-offs set them on the duplicate itself).

const (
	shimHandshake = iota
	shimLoop
	shimFD
)

// TLS connection phases, on the loop.
const (
	tlsWaiting     = iota // no handshake yet: the ClientHello is arriving, or waits for a slot (gate.go)
	tlsHandshaking        // the handshake goroutine runs
	tlsOpen               // application data flows on the loop
	tlsFailed             // the handshake failed; the connection is closing
)

const (
	// maxHandshakeInput bounds the ciphertext a client may send before its
	// handshake completes (a ClientHello is at most a few records).
	maxHandshakeInput = 256 << 10
	// minPlainRead is the free room given to each tls.Conn.Read on the
	// loop: one full record's plaintext.
	minPlainRead = 16 << 10
	// keepPlain is the largest decryption buffer a loop keeps; a larger
	// one (grown by a burst) is dropped once it is free.
	keepPlain = 256 << 10
	// recordHeaderLen is the length of a TLS record header: type,
	// version, length.
	recordHeaderLen = 5
)

var (
	errWouldBlock = tlsrec.ErrWouldBlock
	errShimClosed = errors.New("app: tls: connection closed")
)

// Conn is the TLS state of one connection. Fields are touched on the
// connection's loop, except where the shim's comments say otherwise.
type Conn struct {
	wc       *wire.Conn // the transport this layer sits in
	lp       *Loop      // the loop's TLS buffers
	ln       *Listener
	tc       *tls.Conn
	sh       shim
	phase    uint8
	eof      bool     // no more application data will come: close_notify, or a fatal record error
	fatal    bool     // the TLS session failed (an alert was sent)
	start    int64    // when the connection opened, for the ClientHello timeout and the wait for a slot
	hsStart  int64    // when the handshake got its slot and started, for the handshake timeout
	plain    []byte   // decrypted request bytes not yet consumed: a prefix of the loop's in buffer while lent, else owned
	lent     bool     // plain aliases the loop's in buffer (see Inbound)
	dupc     *dupConn // the duplicate handed off the loop (dup.go), until reclaimed
	counted  bool     // the handshake's outcome was counted (outcome.go)
	failedAt int64    // when the handshake failed: the connection lingers from then (finishHandshake)
	shut     bool     // lingering, the output was shut after the alert

	hsDone atomic.Bool      // set by the handshake goroutine when it returns
	flight bool             // the server's handshake output went out: the client may finish and send its request
	hsErr  error            // written by the handshake goroutine before hsDone
	auth   *clientAuth      // the client_auth of the handshake (GetConfigForClient, on the handshake goroutine)
	cert   *clientcert.Info // the client's certificate, written by the handshake goroutine before hsDone; nil for none

	// Admission (hello.go, gate.go).
	key       netip.Addr  // the client address the handshake share is counted under
	hello     helloScan   // the ClientHello received so far
	helloDone bool        // the whole ClientHello is buffered
	claimed   bool        // admitted: a claim of key is held until the handshake starts or the connection closes
	slot      atomic.Bool // a handshake slot is this connection's (set by the gate, from any goroutine)

	queued       bool  // in the gate's queue; guarded by the gate's mu, like qprev and qnext
	qprev, qnext *Conn // neighbours in the queue
}

// shim is the net.Conn under the tls.Conn.
type shim struct {
	t     *Conn
	rmode uint8 // where Read takes ciphertext from
	wmode uint8 // where Write puts records

	mu     sync.Mutex // guards in, inOff, out and closed in handshake mode
	cond   sync.Cond
	in     []byte // ciphertext fed by the loop, not yet read (handshake mode; drained first in loop mode)
	inOff  int
	out    []byte // ciphertext written by the handshake, not yet given to gnet
	spare  []byte // the other out buffer, swapped in by the loop
	closed bool
	ended  bool // the handshake goroutine returned (outcome.go)
	orphan bool // the connection closed while the handshake ran: its goroutine counts the outcome

	fd net.Conn // fd mode: the duplicate of the socket

	fr tlsrec.Framer // record framing of the ciphertext handed to crypto/tls
}

var (
	_ net.Conn   = (*shim)(nil)
	_ wire.Layer = (*Conn)(nil)
)

// Loop is the TLS state of one event loop, shared by its connections and
// touched only on that loop.
type Loop struct {
	out   []byte         // TLS records written on the loop, handed to gnet with one Write
	in    []byte         // plaintext decrypted on the loop, lent to one connection at a time
	lent  *Conn          // the connection whose plain aliases in, or nil
	Stats HandshakeStats // written on the loop; read by anyone
}

// New returns the TLS layer of transport wc, accepted by listener ln, on
// the loop whose TLS state is lp. The caller puts it under the engines
// with wc.SetLayer.
func New(wc *wire.Conn, lp *Loop, ln *Listener) *Conn {
	t := &Conn{wc: wc, lp: lp, ln: ln, start: time.Now().UnixNano(), key: wire.AddrKey(wc.Remote.Addr())}
	t.sh.t = t
	t.sh.cond.L = &t.sh.mu
	t.tc = tls.Server(&t.sh, ln.config)
	return t
}

// Read implements net.Conn for crypto/tls.
func (s *shim) Read(p []byte) (int, error) {
	switch s.rmode {
	case shimLoop:
		if s.inOff < len(s.in) {
			n := s.hand(p, s.in[s.inOff:])
			s.inOff += n
			if s.inOff == len(s.in) {
				s.in, s.inOff = nil, 0
			}
			return n, nil
		}
		c := s.t.wc.C
		b, _ := c.Peek(-1)
		if len(b) == 0 {
			return 0, errWouldBlock
		}
		n := s.hand(p, b)
		_, _ = c.Discard(n)
		return n, nil
	case shimHandshake:
		s.mu.Lock()
		defer s.mu.Unlock()
		for s.inOff == len(s.in) && !s.closed {
			s.cond.Wait()
		}
		if s.inOff == len(s.in) {
			// Closed, with nothing left: what arrived before the close
			// (a client's last handshake flight, or its alert) is read
			// first.
			return 0, errShimClosed
		}
		n := s.hand(p, s.in[s.inOff:])
		s.inOff += n
		if s.inOff == len(s.in) {
			s.in, s.inOff = s.in[:0], 0
		}
		return n, nil
	case shimFD:
		return s.fd.Read(p)
	}
	return 0, errShimClosed
}

// hand copies into p the bytes of b up to the end of the record being
// read, and returns how many (tlsrec.Framer).
func (s *shim) hand(p, b []byte) int { return s.fr.Hand(p, b) }

// moreInput reports whether ciphertext waits in the shim or in gnet's
// buffer (loop mode).
func (s *shim) moreInput() bool {
	return s.inOff < len(s.in) || s.t.wc.C.InboundBuffered() > 0
}

// Write implements net.Conn for crypto/tls. p is copied (crypto/tls reuses
// its buffer).
func (s *shim) Write(p []byte) (int, error) {
	switch s.wmode {
	case shimLoop:
		l := s.t.lp
		l.out = append(l.out, p...)
		return len(p), nil
	case shimHandshake:
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return 0, errShimClosed
		}
		wake := len(s.out) == 0
		s.out = append(s.out, p...)
		s.mu.Unlock()
		if wake {
			_ = s.t.wc.C.Wake(nil)
		}
		return len(p), nil
	case shimFD:
		return s.fd.Write(p)
	}
	return 0, errShimClosed
}

// Close implements net.Conn: the loop owns the socket, so this only stops
// a handshake in progress.
func (s *shim) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cond.Broadcast()
	return nil
}

func (s *shim) LocalAddr() net.Addr { return s.t.wc.C.LocalAddr() }

// RemoteAddr is the client's address: the peer's, or the one a PROXY
// protocol header named, as the handshake gate counts it (certificate
// callbacks see it through tls.ClientHelloInfo.Conn).
func (s *shim) RemoteAddr() net.Addr { return net.TCPAddrFromAddrPort(s.t.wc.Remote) }

// ClientIs makes ap the client's address for the handshake gate's
// per-address share (a PROXY protocol header named it before the
// ClientHello, so no slot is claimed yet).
func (t *Conn) ClientIs(ap netip.AddrPort)       { t.key = wire.AddrKey(ap.Addr()) }
func (s *shim) SetDeadline(time.Time) error      { return nil }
func (s *shim) SetReadDeadline(time.Time) error  { return nil }
func (s *shim) SetWriteDeadline(time.Time) error { return nil }

// Handshaking reports whether the connection is not open yet.
func (t *Conn) Handshaking() bool { return t.phase != tlsOpen }

// Buffered is how many received bytes wait: plaintext not yet
// consumed and ciphertext not yet decrypted (gnet's is counted by the
// caller).
func (t *Conn) Buffered() int {
	if t.phase == tlsHandshaking {
		t.sh.mu.Lock()
		defer t.sh.mu.Unlock()
	}
	return len(t.plain) + len(t.sh.in) - t.sh.inOff
}

// Traffic runs first in every OnTraffic of a TLS connection. While the
// handshake is not done it handles the event itself (handled is true);
// once the connection is open it returns handled false and the engine
// above runs, reading through the transport.
func (t *Conn) Traffic() (a gnet.Action, handled bool) {
	if t.phase == tlsOpen {
		return gnet.None, false
	}
	if t.phase == tlsFailed {
		// Lingering after the alert (finishHandshake): what the client
		// still sends is dropped.
		if n := t.wc.C.InboundBuffered(); n > 0 {
			_, _ = t.wc.C.Discard(n)
		}
		return gnet.None, true
	}
	c := t.wc.C
	// Hand the handshake what arrived.
	if a, handled := t.feedHandshake(c); handled {
		return a, true
	}
	if t.phase == tlsWaiting {
		switch t.admit() {
		case admitRefused:
			return gnet.Close, true
		case admitQueued:
			return gnet.None, true // the gate wakes the loop when a slot is ours
		}
		t.startHandshake()
	}
	// Whatever the handshake wrote goes out before anything else.
	t.flushHandshake()
	if t.wc.Dead || !t.hsDone.Load() {
		return gnet.None, true
	}
	return t.finishHandshake()
}

// feedHandshake hands the handshake goroutine what arrived, up to
// maxHandshakeInput not yet read by it; past that, before the server's
// handshake output went out, the connection is closed (a ClientHello is a
// few records). Once it went out, a client may finish its side and send
// its request at once (a TLS 1.3 client right after its Finished; curl -T
// does, with a large body) before the goroutine has read that Finished:
// what passes the bound then stays in gnet's buffer, behind the
// handshake's input, and the request path reads it once the connection is
// open. It is bounded as the request path bounds the input of a pending
// request (twice limits.body_bytes and wire.MaxPendingInput). A client
// that sends anything but a valid Finished there fails the handshake as
// soon as the goroutine reads its first record, which it has: the
// goroutine waits on nothing but the client once the server's output went
// out.
func (t *Conn) feedHandshake(c gnet.Conn) (gnet.Action, bool) {
	n := c.InboundBuffered()
	if n == 0 {
		return gnet.None, false
	}
	t.sh.mu.Lock()
	room := maxHandshakeInput - (len(t.sh.in) - t.sh.inOff)
	if room > 0 {
		buf, _ := c.Peek(min(n, room))
		t.sh.in = append(t.sh.in, buf...)
		_, _ = c.Discard(len(buf)) // len(buf) > 0: gnet's Discard(0) would drop everything
	}
	t.sh.mu.Unlock()
	t.sh.cond.Signal()
	if left := c.InboundBuffered(); left > 0 && (!t.flight || left > earlyInputBound(t.wc.Loop.Shared.Set.Load())) {
		t.fail(ReasonBadRecord)
		return gnet.Close, true
	}
	return gnet.None, false
}

// earlyInputBound is how many bytes past maxHandshakeInput a client may
// send before its handshake is done on the server's side.
func earlyInputBound(set *wire.Settings) int {
	return 2 * (int(set.Limits.BodyBytes) + wire.MaxPendingInput)
}

// admit moves a connection that has no handshake yet towards one: it
// scans what arrived of the ClientHello and, once it is complete, asks the
// listener's gate for a slot. It returns admitGranted when the handshake
// can start now, admitQueued while it must wait (for more bytes or a
// slot), and admitRefused when the connection must close: not a TLS
// ClientHello, or beyond its address's share.
func (t *Conn) admit() int {
	if t.claimed {
		if t.slot.Load() {
			return admitGranted
		}
		return admitQueued
	}
	if !t.helloDone {
		switch t.hello.scan(t.sh.in) {
		case helloMore:
			return admitQueued
		case helloBad:
			t.debug("tls: not a TLS ClientHello")
			t.fail(ReasonNotTLS)
			return admitRefused
		}
		t.helloDone = true
	}
	set := t.ln.cur.Load()
	r := t.ln.gate.admit(t, set.max, set.share)
	if r == admitRefused {
		t.wc.Loop.Stats.Rejected.Add(1)
		t.fail(ReasonRefused)
		t.debug("tls: the client address holds its share of handshakes")
	}
	return r
}

// debug logs why the handshake of the connection went nowhere.
func (t *Conn) debug(msg string) {
	if l := t.wc.Loop.Shared.Log; l.Enabled(context.Background(), slog.LevelDebug) {
		l.Debug(msg, "remote", t.wc.Remote.String())
	}
}

// startHandshake starts the handshake goroutine, with a slot granted.
func (t *Conn) startHandshake() {
	t.phase = tlsHandshaking
	t.hsStart = time.Now().UnixNano()
	t.claimed = false // the goroutine gives the slot and the claim back
	t.sh.rmode, t.sh.wmode = shimHandshake, shimHandshake
	c := t.wc.C
	gate, key := t.ln.gate, t.key
	go func() {
		err := t.handshake()
		gate.release(key, t.ln.cur.Load().max)
		if err == nil && t.auth != nil {
			st := t.tc.ConnectionState()
			t.cert = t.auth.info(&st)
		}
		t.hsErr = err
		t.hsDone.Store(true)
		if t.sh.endHandshake() {
			t.countOrphan(err)
			return
		}
		_ = c.Wake(nil) // a no-op once the connection closed
	}()
}

// handshake runs the handshake, on its goroutine. On a listener with
// automatic certificates it runs within a context that ends with the
// handshake's timeout, so that a certificate being obtained is waited for
// no longer than the handshake may last.
func (t *Conn) handshake() error {
	if t.ln.site == nil {
		return t.tc.Handshake()
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, t.hsStart+t.ln.cur.Load().timeout))
	defer cancel()
	return t.tc.HandshakeContext(ctx)
}

// flushHandshake hands the handshake's pending output to gnet.
func (t *Conn) flushHandshake() {
	s := &t.sh
	s.mu.Lock()
	out := s.out
	s.out = s.spare[:0]
	s.mu.Unlock()
	if len(out) > 0 {
		t.wc.WriteRaw(out)
		t.flight = true
	}
	s.spare = out[:0]
}

// finishHandshake switches to loop mode once the handshake goroutine has
// returned (its output already flushed).
func (t *Conn) finishHandshake() (gnet.Action, bool) {
	t.flushHandshake() // written between the last flush and the return
	if t.wc.Dead {
		return gnet.None, true
	}
	if t.hsErr != nil {
		t.phase = tlsFailed
		t.fail(reasonOf(t.hsErr))
		if l := t.wc.Loop.Shared.Log; l.Enabled(context.Background(), slog.LevelDebug) {
			l.Debug("tls handshake failed", "remote", t.wc.Remote.String(), "err", t.hsErr.Error())
		}
		// The alert goes out, then the connection lingers: it reads
		// and drops what the client still sends until the client
		// closes or wire.LingerTime passes (CheckHandshake; the engine
		// above learns of the failure from Failed). Closing with the
		// client's last flight, or the request a TLS 1.3 client sends
		// right after its Finished, unread in the socket would reset
		// the connection, and the reset can destroy the alert before
		// the client reads it: a client refused for want of a
		// certificate would see a reset instead of "certificate
		// required".
		t.failedAt = time.Now().UnixNano()
		return gnet.None, true
	}
	t.phase = tlsOpen
	t.succeed()
	t.wc.Cert = t.cert
	if t.ln.site != nil && t.tc.ConnectionState().NegotiatedProtocol == acme.ALPNChallenge {
		// A TLS-ALPN-01 validation ends with its handshake (RFC 8737
		// section 3).
		return gnet.Close, true
	}
	t.sh.rmode, t.sh.wmode = shimLoop, shimLoop
	t.sh.out, t.sh.spare = nil, nil
	if t.sh.inOff == len(t.sh.in) {
		t.sh.in, t.sh.inOff = nil, 0
	}
	t.wc.LastActive = time.Now().UnixNano()
	// Application data may already sit in the shim or in crypto/tls's
	// buffer: the request path reads it now.
	return gnet.None, false
}

// CheckHandshake runs from the sweep while the handshake is not done and
// reports whether the connection must be closed.
func (t *Conn) CheckHandshake(now int64) bool {
	if t.phase == tlsFailed {
		if !t.shut && t.wc.OutboundBuffered() == 0 {
			t.shut = true
			t.wc.ShutdownWrite() // the alert is out: the client sees the end
		}
		return now-t.failedAt > int64(wire.LingerTime)
	}
	set := t.ln.cur.Load()
	if now-t.timeoutFrom() > set.timeout || (!t.helloDone && now-t.start > set.hello) {
		t.wc.Loop.Stats.TimedOut.Add(1)
		t.fail(ReasonTimeout)
		return true
	}
	if t.phase != tlsWaiting || !t.claimed {
		return false
	}
	// A queued connection: slots added by a reload are handed out here,
	// and a grant whose wake-up has not run yet starts now.
	if g := t.ln.gate; g.waiting.Load() > 0 && g.active.Load() < set.max {
		g.pump(set.max)
	}
	if t.slot.Load() {
		t.startHandshake()
		t.flushHandshake()
	}
	return false
}

// timeoutFrom is when handshake_timeout counts from: the accept while
// the connection waits for its ClientHello or a slot, and the grant of
// the slot once the handshake runs. A connection that waited for its slot
// behind stalling handshakes then has the whole timeout for its own,
// rather than what its wait left of it, which would depend on when it
// arrived.
func (t *Conn) timeoutFrom() int64 {
	if t.phase == tlsHandshaking {
		return t.hsStart
	}
	return t.start
}

// Release runs when the connection closed: a handshake in progress ends,
// and one that waited for its slot leaves the gate.
func (t *Conn) Release() {
	if t.phase == tlsHandshaking && !t.sh.orphaned() {
		t.countAtClose() // the handshake ended: count it as it ended
	}
	if t.phase == tlsHandshaking {
		t.sh.Close()
	} else {
		t.countAtClose()
	}
	if t.claimed {
		t.ln.gate.leave(t, t.ln.cur.Load().max)
	}
	if l := t.lp; l.lent == t {
		l.lent = nil
	}
	t.plain, t.lent = nil, false
}

// Plaintext is decrypted into one buffer per loop (Loop.in), lent to the
// connection being served: its plain is a prefix of it. A connection
// keeps what it did not consume there until another connection needs
// the buffer; then the unconsumed bytes (part of a request that has not
// fully arrived) are copied into memory of its own. So an idle TLS
// connection holds no plaintext buffer, and a kept-alive request copies
// nothing.

// borrow lends the loop's buffer to t, with t's unconsumed bytes at its
// start.
func (t *Conn) borrow() {
	l := t.lp
	if l.lent == t {
		return
	}
	if o := l.lent; o != nil {
		o.keep()
	}
	if cap(l.in) < len(t.plain)+minPlainRead {
		l.in = make([]byte, 0, max(2*cap(l.in), len(t.plain)+minPlainRead, 32<<10))
	}
	t.plain = append(l.in[:0], t.plain...)
	t.lent = true
	l.lent = t
}

// keep gives t's unconsumed bytes memory of their own, before the loop's
// buffer is lent to another connection.
func (t *Conn) keep() {
	l := t.lp
	l.lent = nil
	t.lent = false
	if len(t.plain) == 0 {
		t.plain = nil
		return
	}
	t.plain = append([]byte(nil), t.plain...)
}

// Inbound decrypts what arrived and returns the plaintext not yet
// consumed. The slice is valid until consume or the next inbound.
func (t *Conn) Inbound() []byte {
	if t.phase != tlsOpen {
		return nil
	}
	if t.dupc != nil {
		t.reclaim()
	}
	t.borrow()
	l := t.lp
	for !t.eof {
		if cap(t.plain)-len(t.plain) < minPlainRead {
			np := make([]byte, len(t.plain), 2*cap(t.plain)+minPlainRead)
			copy(np, t.plain)
			t.plain = np
			l.in = np[:0]
		}
		room := cap(t.plain) - len(t.plain)
		n, err := t.tc.Read(t.plain[len(t.plain):cap(t.plain)])
		t.plain = t.plain[:len(t.plain)+n]
		if err == nil {
			if n < room && !t.sh.moreInput() {
				break // crypto/tls holds no further record (see hand)
			}
			continue
		}
		if err == errWouldBlock {
			break
		}
		t.eof = true
		if err != io.EOF {
			t.fatal = true // a bad record: crypto/tls sent an alert
		}
	}
	t.flushOut() // alerts and post-handshake messages
	return t.plain
}

// Consume drops the first n plaintext bytes (all when n < 0).
func (t *Conn) Consume(n int) {
	if n < 0 || n >= len(t.plain) {
		switch l := t.lp; {
		case !t.lent:
			t.plain = nil // owned memory is not kept
		case cap(l.in) > keepPlain:
			l.in, l.lent = nil, nil
			t.plain, t.lent = nil, false
		default:
			t.plain = t.plain[:0]
		}
		return
	}
	m := copy(t.plain, t.plain[n:])
	t.plain = t.plain[:m]
}

// Send encrypts b into records and hands them to gnet with one Write.
func (t *Conn) Send(b []byte) {
	if t.phase != tlsOpen {
		return
	}
	if t.dupc != nil {
		t.reclaim()
	}
	_, _ = t.tc.Write(b)
	t.flushOut()
}

// Sendv encrypts bs in order and hands the records to gnet with one Write.
func (t *Conn) Sendv(bs [][]byte) {
	if t.phase != tlsOpen {
		return
	}
	if t.dupc != nil {
		t.reclaim()
	}
	for _, b := range bs {
		if len(b) > 0 {
			_, _ = t.tc.Write(b)
		}
	}
	t.flushOut()
}

// flushOut hands the records written on the loop to gnet.
func (t *Conn) flushOut() {
	l := t.lp
	if len(l.out) == 0 {
		return
	}
	t.wc.WriteRaw(l.out)
	if cap(l.out) > 4<<20 {
		l.out = nil
	} else {
		l.out = l.out[:0]
	}
}

// CloseNotify sends close_notify once, after the last response.
func (t *Conn) CloseNotify() {
	if t.phase != tlsOpen || t.fatal || t.wc.Dead {
		return
	}
	if t.dupc != nil {
		t.reclaim()
		if t.dupc != nil {
			return // a goroutine still writes
		}
	}
	_ = t.tc.CloseWrite()
	t.flushOut()
}

// CloseWrite ends the output: close_notify, then a TCP half-close once it
// left gnet's buffer.
func (t *Conn) CloseWrite() {
	t.CloseNotify()
	if t.wc.Dead {
		return
	}
	if t.wc.C.OutboundBuffered() == 0 {
		_ = unix.Shutdown(t.wc.C.Fd(), unix.SHUT_WR)
	}
}

// Failed reports whether the handshake failed; the connection closes
// once the alert left (CheckHandshake).
func (t *Conn) Failed() bool { return t.phase == tlsFailed }

// Ended reports whether no more application data will come (eof: the
// client sent close_notify, or a record was bad) and whether the session
// failed with an alert (fatal).
func (t *Conn) Ended() (eof, fatal bool) { return t.eof, t.fatal }

// Unconsumed is how many decrypted bytes wait to be consumed: part of a
// request that has not fully arrived.
func (t *Conn) Unconsumed() int { return len(t.plain) }

// ConnectionState returns the state of the TLS session (ALPN, version,
// cipher suite), once the handshake is done.
func (t *Conn) ConnectionState() tls.ConnectionState { return t.tc.ConnectionState() }

// InputTaken reports whether the connection took in bytes of its
// handshake: it buffered them or started the handshake. Tests use it to
// wait for connections to reach the gate; it runs on the loop.
func (t *Conn) InputTaken() bool {
	t.sh.mu.Lock()
	defer t.sh.mu.Unlock()
	return t.phase != tlsWaiting || len(t.sh.in) > 0
}
