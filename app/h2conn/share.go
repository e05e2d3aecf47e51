package h2conn

import "gale/app/wire"

// Upstream shares per client address. A stream of a forwarding route may
// cost an upstream connection (descriptors of the process's budget) for
// as long as the upstream takes to answer. While more than half the
// budget is held, a client address that holds its share on the loop
// (fds.Budget.Share: a 32nd of the budget) of streams forwarded and not
// ended gets 503 for its next one, so that one address (many
// connections, each with its streams waiting on a slow upstream) cannot
// take the descriptors the other clients need. Counting is the loop's
// own (wire.AddrLoad): no lock, and nothing at all to pay but a map
// update while the budget is not pressed.

// takeShare counts ex's stream against its address's share, and reports
// whether the address may have it forwarded.
func (h *Conn) takeShare(ex *exchange) bool {
	lp := h.wc.Loop
	key := wire.AddrKey(h.wc.Remote.Addr())
	if b := lp.Shared.Budget; b.Pressed() && lp.Forward.Of(key) >= b.Share() {
		lp.Stats.OverShare.Add(1)
		return false
	}
	lp.Forward.Hold(key)
	ex.shareKey, ex.shareHeld = key, true
	return true
}

// dropShare gives back the share ex's stream held.
func (ex *exchange) dropShare() {
	if ex.shareHeld {
		ex.shareHeld = false
		ex.h.wc.Loop.Forward.Drop(ex.shareKey)
	}
}
