package proxy

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/codec"
	"gale/handlers"
	"gale/upstream"
)

// Loop is the proxy state of one event loop: its upstream connection
// pools, its exchanges in flight, and scratch buffers. Everything in it is
// touched only on its loop, except Stats (atomics, readable anywhere).
type Loop struct {
	el  gnet.EventLoop
	idx int
	log *slog.Logger

	exchanges upstream.Exchanges[*exchange] // in flight, for the sweep, and kept for reuse
	auths     upstream.Exchanges[*authCall] // forward_auth subrequests in flight, and kept for reuse (forwardauth.go)
	extra     map[*Upstream]*upstream.Pool  // pools of upstreams whose per-loop slots do not reach this loop
	rr        map[*Handler]*rrSlot          // likewise for round-robin counters

	buf   []byte            // rendering of upstream request heads and re-framed request bodies on their way out
	vbuf  []byte            // header values built for a request (X-Forwarded-For)
	hdrs  []codec.Header    // header list of a request or response being rewritten
	conns [][]byte          // values of Connection fields, for hop-by-hop removal
	req   codec.Request     // carries hdrs through the route's request rules
	resp  handlers.Response // carries hdrs through the route's response rules
	rng   uint64

	budgetLogAt int64 // when the spent budget was last logged (budget.go)

	up *upstream.Loop // the upstream core's state of the loop: its pools by address

	sweepFn gnet.Runnable
	Stats   Stats
}

// Stats are one loop's proxy counters. Only the owning loop (or a
// goroutine it started, for transfers) writes them; any goroutine may
// read them. Sum the loops' with Add.
type Stats struct {
	upstream.Counters               // connections dialed (Dials), failed to (DialFails) and open now (Open)
	Requests          atomic.Uint64 // requests forwarded (pending responses started)
	Reused            atomic.Uint64 // requests sent on a pooled connection
	Retries           atomic.Uint64 // further attempts after a failed one
	Errors            atomic.Uint64 // 502 and 504 answered by the proxy
	Timeouts          atomic.Uint64 // connect, response-header or body-read timeouts
	Truncated         atomic.Uint64 // responses cut short after they started (client closed)
	Handoffs          atomic.Uint64 // response bodies copied off the loop
	Paced             atomic.Uint64 // response bodies read off the loop at a shared client connection's pace (paced.go)
	Queued            atomic.Uint64 // requests that waited for a connection under max_conns (queue.go)
	Tunnels           atomic.Uint64 // upgraded connections tunnelled
	Reenrolls         atomic.Uint64 // connections returned to a pool after an off-loop copy
	Held              atomic.Uint64 // responses whose relaying waited for a client that fell behind in the loop
	Cut               atomic.Uint64 // held responses cut off: the upstream ran MaxHeldResponse ahead
	Refused           atomic.Uint64 // requests answered 503 because no descriptor was left for a new upstream connection
	Deferred          atomic.Uint64 // off-loop copies put off because no descriptor was left for the duplicates
	Load              atomic.Int64  // requests counted in their upstream's load now (what least-connections compares)
	Auths             atomic.Uint64 // forward_auth subrequests asked (forwardauth.go)
	AuthFailures      atomic.Uint64 // forward_auth subrequests that got no answer (502, 503, 504)
}

// StatsSnapshot is a plain copy of summed Stats.
type StatsSnapshot struct {
	Requests, Dials, DialFails, Reused, Retries, Errors, Timeouts, Truncated, Handoffs, Paced, Queued, Tunnels, Reenrolls, Held, Cut, Refused, Deferred, Auths, AuthFailures uint64
	Open, Load                                                                                                                                                               int64
}

// Add adds s to d. Safe for concurrent use with the loop writing s.
func (s *Stats) Add(d *StatsSnapshot) {
	d.Requests += s.Requests.Load()
	d.Dials += s.Dials.Load()
	d.DialFails += s.DialFails.Load()
	d.Reused += s.Reused.Load()
	d.Retries += s.Retries.Load()
	d.Errors += s.Errors.Load()
	d.Timeouts += s.Timeouts.Load()
	d.Truncated += s.Truncated.Load()
	d.Handoffs += s.Handoffs.Load()
	d.Paced += s.Paced.Load()
	d.Queued += s.Queued.Load()
	d.Tunnels += s.Tunnels.Load()
	d.Reenrolls += s.Reenrolls.Load()
	d.Held += s.Held.Load()
	d.Cut += s.Cut.Load()
	d.Refused += s.Refused.Load()
	d.Deferred += s.Deferred.Load()
	d.Auths += s.Auths.Load()
	d.AuthFailures += s.AuthFailures.Load()
	d.Open += s.Open.Load()
	d.Load += s.Load.Load()
}

// NewLoop returns the proxy state of event loop el (nil in tests that
// drive connections by hand), which is the idx-th loop of the server
// (from 0; per-route state is kept per index). log receives connection
// errors at debug level.
func NewLoop(el gnet.EventLoop, idx int, log *slog.Logger, g *upstream.Group) *Loop {
	lp := &Loop{
		el:    el,
		idx:   idx,
		log:   log,
		extra: map[*Upstream]*upstream.Pool{},
		rr:    map[*Handler]*rrSlot{},
		buf:   make([]byte, 0, 4<<10),
		vbuf:  make([]byte, 0, 256),
		hdrs:  make([]codec.Header, 0, 32),
		rng:   uint64(time.Now().UnixNano())*2 + uint64(idx)*0x9e3779b97f4a7c15 + 1,
	}
	lp.resp.Headers = make([]codec.Header, 0, 32)
	lp.exchanges.New = func() *exchange {
		ex := &exchange{lp: lp}
		ex.resp.ContentLength = -1
		return ex
	}
	lp.auths.New = func() *authCall {
		ac := &authCall{lp: lp}
		ac.resp.ContentLength = -1
		return ac
	}
	lp.up = upstream.NewLoop(el, g)
	lp.sweepFn = gnet.RunnableFunc(func(context.Context) error {
		lp.Sweep(time.Now().UnixNano())
		return nil
	})
	return lp
}

// Upstreams returns the upstream core's state of the loop.
func (lp *Loop) Upstreams() *upstream.Loop { return lp.up }

// EventLoop returns the event loop the state belongs to.
func (lp *Loop) EventLoop() gnet.EventLoop { return lp.el }

// SweepRunnable returns the runnable that sweeps this loop (timeouts,
// idle connections, off-loop copies waiting to start), to be posted to its
// event loop every tick with EventLoop.Execute. It does not allocate.
func (lp *Loop) SweepRunnable() gnet.Runnable { return lp.sweepFn }

// SetDial replaces how the loop makes new upstream connections, for tests
// that drive connections by hand: f must eventually lead either to c's
// OnOpen (on this loop) or to DialFailed.
func (lp *Loop) SetDial(f func(c *upstream.Conn)) { lp.up.SetDial(f) }

// rand is xorshift64*: cheap, per loop, good enough to pick two upstreams.
func (lp *Loop) rand() uint64 {
	x := lp.rng
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	lp.rng = x
	return x * 2685821657736338717
}

// pool returns the loop's pool of connections to u's address (the
// upstream core's, shared with every route naming the address), cached
// in u's slot of this loop, and configured with u's route's limits.
func (lp *Loop) pool(u *Upstream) *upstream.Pool {
	var p *upstream.Pool
	if lp.idx < len(u.pools) {
		p = u.pools[lp.idx].Load()
	} else {
		p = lp.extra[u]
	}
	if p == nil {
		p = lp.up.Pool(upstream.Key{Proto: "http/1.1", Network: u.network, Address: u.address, TLS: u.tlsID})
		if lp.idx < len(u.pools) {
			u.pools[lp.idx].Store(p)
		} else {
			lp.extra[u] = p
		}
	}
	l := *u.lim
	l.TLS = u.tls
	p.Configure(l)
	return p
}

func (lp *Loop) getExchange() *exchange { return lp.exchanges.Get() }

// putExchange removes ex from the exchanges in flight and keeps it for
// reuse, unless a goroutine still holds it (an off-loop copy that was
// abandoned).
func (lp *Loop) putExchange(ex *exchange) {
	lp.exchanges.Remove(ex)
	if hx := ex.hx; hx != nil {
		ex.hx = nil
		hx.stop() // its goroutine wakes the client's exchange no more
	}
	ex.release()
	if ex.x != nil && ex.x.running() {
		return // the goroutine still references it; the GC takes it
	}
	ex.reset()
	lp.exchanges.Keep(ex)
}

// Sweep runs on the loop every tick: it enforces the exchanges' timeouts,
// starts off-loop copies whose client output drained, and closes pooled
// connections idle for longer than their route's idle timeout.
func (lp *Loop) Sweep(now int64) {
	lp.up.Sweep(now)
	lp.exchanges.Sweep(now, (*exchange).check)
	lp.auths.Sweep(now, (*authCall).check)
	for h := range lp.rr {
		if h.closed.Load() {
			delete(lp.rr, h)
		}
	}
	for u := range lp.extra {
		if u.h.closed.Load() || u.gone.Load() {
			delete(lp.extra, u)
		}
	}
}
