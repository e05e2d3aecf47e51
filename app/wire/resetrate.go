package wire

import (
	"net/netip"
)

// Rapid Reset (CVE-2023-44487) spread over connections: an HTTP/2
// connection's own reset budget (package h2) is escaped by opening a new
// connection before it is spent. The streams a client resets are charged
// as well to its address (AddrKey) and to the event loop, in budgets that
// outlive the connections and refill with time only, never with completed
// streams: a burst, then a sustained rate (GCRA, one theoretical arrival
// time per key). A connection whose reset finds either budget spent is
// closed (GOAWAY ENHANCE_YOUR_CALM), and an address whose budget cannot
// hold the resets of one connection's streams gets no new HTTP/2
// connection until it has refilled that far: otherwise each new
// connection would have its streams dispatched (an upstream request each)
// before its resets are charged, at the rate the budget refills one reset.

// The budgets. A browser resets streams when a page is left or an image
// scrolls out of view: tens a minute, far under the address's rate.
const (
	AddrResetBurst = 1000  // resets an address may make at once
	AddrResetRate  = 100   // resets a second an address may sustain
	LoopResetBurst = 20000 // resets the clients of one loop may make at once
	LoopResetRate  = 5000  // resets a second they may sustain
	maxRateKeys    = 1024  // addresses a shard remembers (spent or refilling)
)

// Rate is one GCRA budget: a burst and a sustained rate, as the time at
// which the budget would be full again (tat). The zero Rate is full. It
// is not safe for concurrent use; a loop's own is touched only on the
// loop.
type Rate struct{ tat int64 }

// rateOf is a budget's shape: nanoseconds per unit, and the burst in
// nanoseconds.
type rateOf struct{ per, burst int64 }

func newRateOf(perSecond, burst int64) rateOf {
	per := int64(1e9) / perSecond
	return rateOf{per: per, burst: burst * per}
}

// take charges n units at now, and reports whether the budget held them;
// a charge it cannot hold spends the budget whole.
func (r *Rate) take(o rateOf, n, now int64) bool {
	tat := max(r.tat, now)
	if next := tat + n*o.per; next-now <= o.burst {
		r.tat = next
		return true
	}
	r.tat = now + o.burst
	return false
}

// room is how many units the budget can hold at now.
func (r *Rate) room(o rateOf, now int64) int64 { return (o.burst - max(r.tat-now, 0)) / o.per }

// full reports whether the budget refilled whole by now (a key in that
// state needs no memory).
func (r *Rate) full(now int64) bool { return r.tat <= now }

var loopResets = newRateOf(LoopResetRate, LoopResetBurst)

// TakeResets charges n resets to the loop's budget at now, and reports
// whether it held them.
func (r *Rate) TakeResets(n, now int64) bool { return r.take(loopResets, n, now) }

// ResetRates are the reset budgets of client addresses, shared by the
// loops (SO_REUSEPORT spreads one client's connections over them) in
// shards with a lock each, held for a map update; only the resets of a
// read batch take it, never a request. A shard remembers at most
// maxRateKeys addresses: a new one past that, after the full ones are
// forgotten, is refused. Safe for concurrent use.
type ResetRates struct {
	addrMap[Rate] // each address's theoretical arrival time
	o             rateOf
}

// NewResetRates returns the budgets, all full, of AddrResetBurst resets
// refilled at AddrResetRate a second.
func NewResetRates() *ResetRates {
	r := &ResetRates{o: newRateOf(AddrResetRate, AddrResetBurst)}
	r.init()
	return r
}

// Take charges n resets to key's budget at now (unix ns), and reports
// whether it held them.
func (r *ResetRates) Take(key netip.Addr, n, now int64) bool {
	s := r.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, ok := s.m[key]
	if !ok && len(s.m) >= maxRateKeys && !forgetFull(s, now) {
		return false
	}
	held := rt.take(r.o, n, now)
	s.m[key] = rt
	return held
}

// Room is how many resets key's budget can hold at now.
func (r *ResetRates) Room(key netip.Addr, now int64) int64 {
	s := r.shard(key)
	s.mu.Lock()
	rt := s.m[key]
	s.mu.Unlock()
	return rt.room(r.o, now)
}

// forgetFull drops the addresses of s whose budget is full again, and
// reports whether that made room.
func forgetFull(s *addrShard[Rate], now int64) bool {
	for k, rt := range s.m {
		if rt.full(now) {
			delete(s.m, k)
		}
	}
	return len(s.m) < maxRateKeys
}
