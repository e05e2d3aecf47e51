package proxy

import "gale/upstream"

// max_conns: a route may bound the connections to each upstream over
// every loop together (the upstream core's bound of the address). A
// request that finds no idle connection while every place is open or
// being dialed waits in its loop's pool, first come first served, and
// takes the next connection put back there, or dials when a place frees
// on any loop, so that a burst of requests, such as the streams of HTTP/2
// clients, reuses a few kept-alive connections instead of dialing one
// each. A request that waits longer than the connect timeout is answered
// 504; it reached no upstream.

// queue makes ex wait for a connection of its pool.
func (ex *exchange) queue(now int64) {
	ex.queued = true
	ex.deadline, ex.dkind = now+ex.h.connectTimeout, dlQueue
	ex.lp.Stats.Queued.Add(1)
	ex.pool.Wait(ex)
}

// Dequeued implements upstream.Waiter: it sends a waiting exchange's
// request on uc, an idle connection of its pool, or dials a new one (uc
// nil).
func (ex *exchange) Dequeued(uc *upstream.Conn) {
	ex.queued = false
	ex.now = nanotime()
	ex.deadline, ex.dkind = 0, dlNone
	if uc == nil {
		ex.dialNew(ex.now)
		ex.settle()
		return
	}
	if !ex.sendPooled(uc, true) {
		if !ex.safe {
			ex.Fault, ex.Why = 502, "pooled connection closed as the request was written"
		} else {
			ex.retrying()
			ex.dialNew(ex.now)
		}
	}
	ex.settle()
}
