package h2conn

import (
	"gale/app/wire"
	"gale/h2"
)

// The streams a connection resets (by the client, or because the client
// made it: h2.Conn.Resets) are charged after every read batch to the
// client's address and to the loop (wire.ResetRates, wire.Rate), whose
// budgets outlive the connection: a Rapid Reset spread over many
// connections, each under its own budget, spends the address's. A batch
// that finds either budget spent closes the connection with GOAWAY
// ENHANCE_YOUR_CALM before the streams it brought are dispatched, and an
// address whose budget cannot hold one connection's streams gets no HTTP/2
// connection until it refilled that far. One lock is taken per read batch that reset streams, none
// for a batch that did not.

// refuseSpent closes a new connection whose client address's reset
// budget cannot hold the resets of all the streams the connection may
// open at once: it reports whether it did.
func (h *Conn) refuseSpent() bool {
	rr := h.wc.Loop.Shared.Resets
	if rr == nil {
		return false
	}
	if rr.Room(wire.AddrKey(h.wc.Remote.Addr()), h.now) >= h.streamsToRefill() {
		return false
	}
	h.calm()
	return true
}

// streamsToRefill is how many resets an address's budget must hold for
// it to get a new HTTP/2 connection: the streams the connection may open
// at once, but at most a quarter of the burst (max_concurrent_streams may
// be larger than the budget).
func (h *Conn) streamsToRefill() int64 {
	streams := int64(h.cfg.MaxConcurrentStreams)
	if streams == 0 {
		streams = h2.DefaultMaxConcurrentStreams
	}
	return min(streams, wire.AddrResetBurst/4)
}

// chargeResets charges the resets of the batch just fed, and closes the
// connection when a budget is spent.
func (h *Conn) chargeResets() {
	n := h.core.Resets()
	d := int64(n - h.resetsCharged)
	if d == 0 {
		return
	}
	h.resetsCharged = n
	lp := h.wc.Loop
	held := lp.Resets.TakeResets(d, h.now)
	if rr := lp.Shared.Resets; rr != nil {
		held = rr.Take(wire.AddrKey(h.wc.Remote.Addr()), d, h.now) && held
	}
	if !held && h.core.Err() == nil {
		h.calm()
	}
}

// calm closes the connection as a flood: GOAWAY ENHANCE_YOUR_CALM, every
// open stream reset.
func (h *Conn) calm() {
	h.wc.Loop.Stats.ResetFloods.Add(1)
	h.core.GoAway(h2.EnhanceYourCalm)
	h.goingAway = true
}
