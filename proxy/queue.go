package proxy

// max_conns: a route may bound the connections to each upstream (shared
// equally by the loops). A request that finds no idle connection while its
// loop's share is open or being dialed waits in the pool's list, first
// come first served, and takes the next connection put back (or dials
// when one closed), so that a burst of requests, such as the streams of
// HTTP/2 clients, reuses a few kept-alive connections instead of dialing
// one each. A request that waits longer than the connect timeout is
// answered 504; it reached no upstream.

// full reports whether the pool may open no further connection now.
func (p *pool) full() bool { return p.limit > 0 && p.conns >= p.limit }

// queue makes ex wait for a connection of its pool.
func (ex *exchange) queue(now int64) {
	p := ex.pool
	ex.queued = true
	p.waiting = append(p.waiting, ex)
	ex.deadline, ex.dkind = now+ex.h.connectTimeout, dlQueue
	ex.lp.Stats.Queued.Add(1)
}

// unqueue removes ex from the waiting list (it ended or timed out).
func (p *pool) unqueue(ex *exchange) {
	ex.queued = false
	for i, w := range p.waiting {
		if w == ex {
			copy(p.waiting[i:], p.waiting[i+1:])
			p.waiting[len(p.waiting)-1] = nil
			p.waiting = p.waiting[:len(p.waiting)-1]
			return
		}
	}
}

// serveWaiting hands idle connections, or room for new ones, to the
// waiting exchanges in order. It runs on the loop whenever a connection
// of the pool was put back or closed.
func (p *pool) serveWaiting() {
	for len(p.waiting) > 0 && (len(p.idle) > 0 || !p.full()) {
		ex := p.waiting[0]
		copy(p.waiting, p.waiting[1:])
		p.waiting[len(p.waiting)-1] = nil
		p.waiting = p.waiting[:len(p.waiting)-1]
		ex.queued = false
		ex.dequeued()
	}
}

// dequeued sends a waiting exchange's request on an idle connection of its
// pool, or dials a new one.
func (ex *exchange) dequeued() {
	ex.now = nanotime()
	ex.deadline, ex.dkind = 0, dlNone
	p := ex.pool
	uc := p.take()
	if uc == nil {
		ex.dialNew(ex.now)
		ex.settle()
		return
	}
	if !ex.sendPooled(uc, true) {
		if !ex.safe {
			ex.fault, ex.why = 502, "pooled connection closed as the request was written"
		} else {
			ex.retrying()
			ex.dialNew(ex.now)
		}
	}
	ex.settle()
}
