package proxy

import (
	"errors"
	"net"
	"time"

	"gale/fds"
)

// The proxy's share of the server's descriptor budget (package fds).
// Each upstream connection holds one descriptor from the moment it is
// dialed until its OnClose (or DialFailed); dialing and enrolling hold one
// more until gnet closed the dialed descriptor it duplicated. An off-loop
// copy holds one for each duplicate (client and upstream), given back
// when each is closed (fds.Conn); a copy that ends cleanly hands its
// upstream descriptor to the connection enrolled again. A tunnel also
// takes over the client's place under the connection cap, and leaves it
// when both directions ended. A pooled connection reused by a kept-alive
// request acquires nothing.

// errBudget is why an upstream connection or an off-loop copy was
// refused: the descriptor budget is spent.
var errBudget = errors.New("proxy: no descriptor left in the budget")

// budgetLogEvery limits the warning about a spent budget to one line per
// loop per period, so that a flood of refusals does not flood the log.
const budgetLogEvery = int64(time.Second)

// refused counts and logs a request answered 503 because no descriptor
// was left for a new upstream connection.
func (ex *exchange) refused() {
	lp := ex.lp
	lp.Stats.Refused.Add(1)
	now := nanotime()
	if lp.log == nil || now-lp.budgetLogAt < budgetLogEvery {
		return
	}
	lp.budgetLogAt = now
	snap := ex.h.budget.Snapshot()
	lp.log.Warn("proxy: descriptor budget spent; answering 503 instead of dialing",
		"route", ex.h.route.Conf.Path, "upstream", ex.up.raw, "descriptors", snap.Used, "budget", snap.Limit)
}

// track counts c as one descriptor acquired from b: its first Close gives
// it back.
func track(b *fds.Budget, c net.Conn) net.Conn { return fds.Track(b, c) }

// handBack returns the connection under a tracked one with its descriptor
// still counted (for a connection enrolled again), or false when it was
// closed meanwhile.
func handBack(c net.Conn) (net.Conn, bool) {
	if tc, ok := c.(*fds.Conn); ok {
		return tc.Hand()
	}
	return c, true
}
