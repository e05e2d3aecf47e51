// Package fds keeps the descriptor budget of a gale process: every
// descriptor the server holds for a while (client and upstream
// connections, the duplicates that off-loop copies and tunnels use, files
// opened for streaming or queued for loading, the root directories of
// static routes) is counted against one limit, the process's
// RLIMIT_NOFILE minus a headroom that the server sizes for what it cannot
// count one by one (an accept burst, the runtime, listeners, log files).
//
// The budget exists because gnet v2.9.7 ends the whole engine when
// accept(2) fails with EMFILE (acceptor_unix.go returns ErrAcceptSocket,
// which netpoll.Polling hands back to the loop, whose exit calls
// engine.shutdown). A server that keeps its held descriptors under the
// budget never lets accept meet EMFILE; when the budget is spent, new
// work is refused instead.
//
// Acquiring costs one atomic add on a counter shared by all loops (and
// one more when refused); a kept-alive request acquires nothing.
package fds

import "sync/atomic"

// Budget counts descriptors held against a limit, and client connections
// against their own cap. The zero value refuses everything; a nil
// *Budget grants everything (for code driven without a server). Safe for
// concurrent use.
type Budget struct {
	limit    atomic.Int64  // descriptors that may be held
	maxConns int64         // client connections that may be open; 0 = no cap but the descriptors
	used     atomic.Int64  // descriptors held now
	conns    atomic.Int64  // client connections open now, tunnels included
	refused  atomic.Uint64 // acquisitions refused for want of descriptors
	full     atomic.Uint64 // client connections refused by the connection cap
}

// New returns a budget of limit descriptors and at most maxConns client
// connections (0: as many as the descriptors allow).
func New(limit, maxConns int64) *Budget {
	b := &Budget{maxConns: maxConns}
	b.limit.Store(limit)
	return b
}

// SetLimit changes how many descriptors may be held. Descriptors already
// held above a lowered limit stay held; acquisitions fail until enough of
// them are released.
func (b *Budget) SetLimit(limit int64) { b.limit.Store(limit) }

// Acquire reserves n descriptors and reports whether the budget had room
// for them. Each successful Acquire must be matched by Release of the
// same count once the descriptors are closed.
func (b *Budget) Acquire(n int64) bool {
	if b == nil {
		return true
	}
	if b.used.Add(n) > b.limit.Load() {
		b.used.Add(-n)
		b.refused.Add(1)
		return false
	}
	return true
}

// Room reports whether n more descriptors fit in the budget now. It
// reserves nothing and counts no refusal: it is a hint for work that
// waits for room (another acquirer may take it first), not a promise.
func (b *Budget) Room(n int64) bool {
	return b == nil || b.used.Load()+n <= b.limit.Load()
}

// Release gives back n descriptors reserved by Acquire.
func (b *Budget) Release(n int64) {
	if b == nil {
		return
	}
	if b.used.Add(-n) < 0 {
		panic("bug: fds: more descriptors released than acquired")
	}
}

// Join takes a client connection's place under the connection cap and
// reports whether there was one. The connection's descriptor is acquired
// separately. Each successful Join must be matched by one Leave, when the
// connection (or the tunnel it became) ends.
func (b *Budget) Join() bool {
	if b == nil {
		return true
	}
	n := b.conns.Add(1)
	if b.maxConns > 0 && n > b.maxConns {
		b.conns.Add(-1)
		b.full.Add(1)
		return false
	}
	return true
}

// Rejoin takes a place back regardless of the cap, for a connection
// whose place was given back too early (a tunnel that took over a client
// connection gnet had already closed); the matching Leave follows.
func (b *Budget) Rejoin() {
	if b != nil {
		b.conns.Add(1)
	}
}

// Leave gives back a place taken by Join.
func (b *Budget) Leave() {
	if b == nil {
		return
	}
	if b.conns.Add(-1) < 0 {
		panic("bug: fds: more client connections left than joined")
	}
}

// Snapshot is a plain copy of a budget's counters.
type Snapshot struct {
	Limit    int64  // descriptors that may be held
	Used     int64  // descriptors held now
	Refused  uint64 // acquisitions refused for want of descriptors
	MaxConns int64  // the client connection cap (0 = none of its own)
	Conns    int64  // client connections open now, tunnels included
	Full     uint64 // client connections refused by the cap
}

// Snapshot reads the counters; nil reads as zeros.
func (b *Budget) Snapshot() Snapshot {
	if b == nil {
		return Snapshot{}
	}
	return Snapshot{
		Limit:    b.limit.Load(),
		Used:     b.used.Load(),
		Refused:  b.refused.Load(),
		MaxConns: b.maxConns,
		Conns:    b.conns.Load(),
		Full:     b.full.Load(),
	}
}
