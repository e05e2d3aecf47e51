package tlsconn

import (
	"net/netip"
	"sync"
	"sync/atomic"

	"gale/app/wire"
)

// Admission of TLS handshakes on one listener. A connection whose whole
// ClientHello has arrived asks for one of max_handshakes slots:
//
//   - each client address (an IPv4 address, or an IPv6 /64, which is what
//     one subscriber usually gets) may hold or wait for at most
//     max_handshakes_per_address of them; beyond that share the
//     connection is refused (closed), so one address cannot take the
//     listener's capacity;
//   - when all slots are taken the connection waits in a FIFO queue, by
//     its own handshake_timeout, and a slot that is freed goes straight
//     to the first waiter, whose loop is woken at once (not at the next
//     sweep).
//
// None of this is on the request path: it runs once when a handshake
// starts and once when it ends. The shares sit in a wire.AddrCounts
// (sharded maps, a lock per shard held for a map update); the queue's
// lock is taken only while the listener is at capacity.

// Outcomes of handshakeGate.admit.
const (
	admitGranted = iota // a slot is the connection's: start the handshake
	admitQueued         // waiting for a slot; the loop is woken when granted
	admitRefused        // the address holds its share: close the connection
)

// handshakeGate is the slot state of one listener. Its methods are safe
// for concurrent use.
type handshakeGate struct {
	active  atomic.Int64 // slots taken: handshakes running or granted
	waiting atomic.Int64 // connections in the queue

	mu         sync.Mutex // guards head, tail and the queue fields of the waiting tlsConns
	head, tail *Conn

	claims *wire.AddrCounts // per client address: slots held plus waits
}

func newHandshakeGate() *handshakeGate {
	return &handshakeGate{claims: wire.NewAddrCounts()}
}

// take takes a free slot, if there is one below max.
func (g *handshakeGate) take(max int64) bool {
	for {
		n := g.active.Load()
		if n >= max {
			return false
		}
		if g.active.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// admit asks for a slot for t, whose ClientHello is complete. It runs on
// t's loop. On admitGranted or admitQueued t holds a claim of its
// address, which release or leave gives back.
func (g *handshakeGate) admit(t *Conn, max, share int64) int {
	if !g.claims.Acquire(t.key, share) {
		return admitRefused
	}
	t.claimed = true
	// Nobody waits: take a slot without the queue's lock. Otherwise
	// queue behind the waiters, then pump, since the slot that would have
	// been ours may have been freed while the queue looked empty to its
	// releaser.
	if g.waiting.Load() == 0 && g.take(max) {
		t.slot.Store(true)
		return admitGranted
	}
	g.mu.Lock()
	g.pushNolock(t)
	g.mu.Unlock()
	g.pump(max)
	if t.slot.Load() {
		return admitGranted
	}
	return admitQueued
}

// pump grants free slots to the waiters, first come first served, and
// wakes their loops. Safe from any goroutine.
func (g *handshakeGate) pump(max int64) {
	for {
		g.mu.Lock()
		w := g.head
		if w == nil || !g.take(max) {
			g.mu.Unlock()
			return
		}
		g.unlinkNolock(w)
		w.slot.Store(true)
		g.mu.Unlock()
		w.wc.Wake() // a no-op once the connection closed (leave then frees the slot)
	}
}

// release gives back the slot and the claim of a handshake that ran (or
// was granted), and hands the slot on to the first waiter. Safe from any
// goroutine.
func (g *handshakeGate) release(key netip.Addr, max int64) {
	g.claims.Release(key)
	g.active.Add(-1)
	if g.waiting.Load() > 0 {
		g.pump(max)
	}
}

// leave runs on the loop when a connection that was admitted closes
// before its handshake started: out of the queue, or the slot granted to
// it passed on.
func (g *handshakeGate) leave(t *Conn, max int64) {
	g.mu.Lock()
	queued := t.queued
	if queued {
		g.unlinkNolock(t)
	}
	g.mu.Unlock()
	t.claimed = false
	if queued {
		g.claims.Release(t.key)
		return
	}
	// Not queued: pump granted the slot (t.slot is set under mu).
	g.release(t.key, max)
}

// pushNolock appends t to the queue. The caller holds g.mu.
func (g *handshakeGate) pushNolock(t *Conn) {
	t.queued = true
	t.qprev, t.qnext = g.tail, nil
	if g.tail != nil {
		g.tail.qnext = t
	} else {
		g.head = t
	}
	g.tail = t
	g.waiting.Add(1)
}

// unlinkNolock removes t from the queue. The caller holds g.mu.
func (g *handshakeGate) unlinkNolock(t *Conn) {
	if t.qprev != nil {
		t.qprev.qnext = t.qnext
	} else {
		g.head = t.qnext
	}
	if t.qnext != nil {
		t.qnext.qprev = t.qprev
	} else {
		g.tail = t.qprev
	}
	t.qprev, t.qnext, t.queued = nil, nil, false
	g.waiting.Add(-1)
}

// HandshakeCounts are a listener's handshake admission figures.
type HandshakeCounts struct {
	Active  int64 // slots taken: handshakes running or granted
	Waiting int64 // connections queued for a slot
	Claims  int   // client addresses holding or waiting for slots
}

// Handshakes returns the listener's admission figures. Safe for
// concurrent use.
func (l *Listener) Handshakes() HandshakeCounts {
	g := l.gate
	c := HandshakeCounts{Active: g.active.Load(), Waiting: g.waiting.Load(), Claims: g.claims.Keys()}
	return c
}
