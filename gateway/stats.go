package gateway

import "sync/atomic"

// Stats are one loop's counters of a FastCGI route. Only the owning loop
// writes them; any goroutine may read them. Sum them with Handler.Stats.
type Stats struct {
	Requests atomic.Uint64 // requests sent to a FastCGI server
	Reused   atomic.Uint64 // requests sent on a pooled connection
	Queued   atomic.Uint64 // requests that waited for a connection (max_conns)
	Errors   atomic.Uint64 // 5xx answered by the gateway itself (502, 503, 504)
	OffLoop  atomic.Uint64 // responses whose connection left the loop for a slow client
}

// StatsSnapshot is a plain copy of summed Stats.
type StatsSnapshot struct {
	Requests, Dials, Reused, Queued, Errors, OffLoop uint64
	Open                                             int64
}

// Stats adds the route's counters, over every loop, to d. Safe for
// concurrent use.
func (h *Handler) Stats(d *StatsSnapshot) {
	for _, lp := range h.loops.All() {
		s := &lp.stats
		d.Requests += s.Requests.Load()
		d.Dials += lp.conns.Dials.Load()
		d.Reused += s.Reused.Load()
		d.Queued += s.Queued.Load()
		d.Errors += s.Errors.Load()
		d.OffLoop += s.OffLoop.Load()
		d.Open += lp.conns.Open.Load()
	}
}

// ServerStatus is one FastCGI server of a route: whether it is in
// service and its connections.
type ServerStatus struct {
	Address string // as configured
	Healthy bool   // no passive cooldown running
	Open    int64  // connections to the address open or dialing, over every loop and every route naming it
	Idle    int64  // of them, idle in this route's pools
}

// Servers returns the route's servers in configured order, as at now
// (unix ns). Safe for concurrent use.
func (h *Handler) Servers(now int64) []ServerStatus {
	out := make([]ServerStatus, len(h.servers))
	for i, s := range h.servers {
		out[i] = ServerStatus{Address: s.raw, Healthy: s.passive.Healthy(now)}
	}
	for _, lp := range h.loops.All() {
		for i, p := range lp.pools { // set before the loop's state is published
			out[i].Idle += int64(p.IdleCount())
			out[i].Open = max(out[i].Open, p.AddressConns())
		}
	}
	return out
}
