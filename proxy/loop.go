package proxy

import (
	"context"
	"log/slog"
	"net"
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
	el   gnet.EventLoop
	idx  int
	log  *slog.Logger
	dial func(uc *UpstreamConn) // starts a connection; the default dials and enrolls (SetDial replaces it in tests)

	active  []*exchange          // exchanges in flight, for the sweep; exchange.idx is the position
	free    []*exchange          // recycled exchanges
	pools   []*pool              // every pool of this loop, for the sweep
	extra   map[*Upstream]*pool  // pools of upstreams whose per-loop slots do not reach this loop
	rr      map[*Handler]*rrSlot // likewise for round-robin counters
	victims []*exchange          // scratch for the sweep

	buf   []byte            // rendering of upstream request heads and re-framed request bodies on their way out
	vbuf  []byte            // header values built for a request (X-Forwarded-For)
	hdrs  []codec.Header    // header list of a request or response being rewritten
	conns [][]byte          // values of Connection fields, for hop-by-hop removal
	req   codec.Request     // carries hdrs through the route's request rules
	resp  handlers.Response // carries hdrs through the route's response rules
	rng   uint64

	budgetLogAt int64 // when the spent budget was last logged (budget.go)

	up *upstream.Loop // the upstream core's state of the loop (gateway's pools)

	sweepFn gnet.Runnable
	Stats   Stats
}

// Stats are one loop's proxy counters. Only the owning loop (or a
// goroutine it started, for transfers) writes them; any goroutine may
// read them. Sum the loops' with Add.
type Stats struct {
	Requests  atomic.Uint64 // requests forwarded (pending responses started)
	Dials     atomic.Uint64 // upstream connections dialed
	DialFails atomic.Uint64 // dials refused, failed or timed out
	Reused    atomic.Uint64 // requests sent on a pooled connection
	Retries   atomic.Uint64 // further attempts after a failed one
	Errors    atomic.Uint64 // 502 and 504 answered by the proxy
	Timeouts  atomic.Uint64 // connect, response-header or body-read timeouts
	Truncated atomic.Uint64 // responses cut short after they started (client closed)
	Handoffs  atomic.Uint64 // response bodies copied off the loop
	Paced     atomic.Uint64 // response bodies read off the loop at a shared client connection's pace (paced.go)
	Queued    atomic.Uint64 // requests that waited for a connection under max_conns (queue.go)
	Tunnels   atomic.Uint64 // upgraded connections tunnelled
	Reenrolls atomic.Uint64 // connections returned to a pool after an off-loop copy
	Held      atomic.Uint64 // responses whose relaying waited for a client that fell behind in the loop
	Cut       atomic.Uint64 // held responses cut off: the upstream ran MaxHeldResponse ahead
	Refused   atomic.Uint64 // requests answered 503 because no descriptor was left for a new upstream connection
	Deferred  atomic.Uint64 // off-loop copies put off because no descriptor was left for the duplicates
	Open      atomic.Int64  // upstream connections open in gnet now (pooled or in use)
	Load      atomic.Int64  // requests counted in their upstream's load now (what least-connections compares)
}

// StatsSnapshot is a plain copy of summed Stats.
type StatsSnapshot struct {
	Requests, Dials, DialFails, Reused, Retries, Errors, Timeouts, Truncated, Handoffs, Paced, Queued, Tunnels, Reenrolls, Held, Cut, Refused, Deferred uint64
	Open, Load                                                                                                                                          int64
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
		extra: map[*Upstream]*pool{},
		rr:    map[*Handler]*rrSlot{},
		buf:   make([]byte, 0, 4<<10),
		vbuf:  make([]byte, 0, 256),
		hdrs:  make([]codec.Header, 0, 32),
		rng:   uint64(time.Now().UnixNano())*2 + uint64(idx)*0x9e3779b97f4a7c15 + 1,
	}
	lp.resp.Headers = make([]codec.Header, 0, 32)
	lp.up = upstream.NewLoop(el, g)
	lp.dial = lp.netDial
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
// that drive connections by hand: f must eventually lead either to uc's
// OnOpen (on this loop) or to DialFailed. Such tests run without a
// descriptor budget (netDial gives back one of the two descriptors a dial
// acquires).
func (lp *Loop) SetDial(f func(uc *UpstreamConn)) { lp.dial = f }

// rand is xorshift64*: cheap, per loop, good enough to pick two upstreams.
func (lp *Loop) rand() uint64 {
	x := lp.rng
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	lp.rng = x
	return x * 2685821657736338717
}

// pool returns the loop's pool of connections to u, creating it on first
// use.
func (lp *Loop) pool(u *Upstream) *pool {
	if lp.idx < len(u.pools) {
		if p := u.pools[lp.idx]; p != nil {
			return p
		}
	} else if p := lp.extra[u]; p != nil {
		return p
	}
	p := &pool{up: u, lp: lp, max: u.h.conf.MaxIdlePerUpstream, limit: u.h.perLoop, st: u.statsFor(lp)}
	if lp.idx < len(u.pools) {
		u.pools[lp.idx] = p
	} else {
		lp.extra[u] = p
	}
	lp.pools = append(lp.pools, p)
	return p
}

func (lp *Loop) getExchange() *exchange {
	var ex *exchange
	if n := len(lp.free); n > 0 {
		ex = lp.free[n-1]
		lp.free[n-1] = nil
		lp.free = lp.free[:n-1]
	} else {
		ex = &exchange{lp: lp}
		ex.resp.ContentLength = -1
	}
	ex.idx = len(lp.active)
	lp.active = append(lp.active, ex)
	return ex
}

// putExchange removes ex from the active list and recycles it, unless a
// goroutine still holds it (an off-loop copy that was abandoned).
func (lp *Loop) putExchange(ex *exchange) {
	if i := ex.idx; i >= 0 && i < len(lp.active) && lp.active[i] == ex {
		last := len(lp.active) - 1
		lp.active[i] = lp.active[last]
		lp.active[i].idx = i
		lp.active[last] = nil
		lp.active = lp.active[:last]
	}
	ex.idx = -1
	ex.release()
	if ex.x != nil && ex.x.running() {
		return // the goroutine still references it; the GC takes it
	}
	ex.reset()
	lp.free = append(lp.free, ex)
}

// Sweep runs on the loop every tick: it enforces the exchanges' timeouts,
// starts off-loop copies whose client output drained, and closes pooled
// connections idle for longer than their route's idle timeout.
func (lp *Loop) Sweep(now int64) {
	lp.up.Sweep(now)
	lp.victims = append(lp.victims[:0], lp.active...)
	for i, ex := range lp.victims {
		lp.victims[i] = nil
		if ex.idx >= 0 {
			ex.check(now)
		}
	}
	for h := range lp.rr {
		if h.closed.Load() {
			delete(lp.rr, h)
		}
	}
	for i := 0; i < len(lp.pools); i++ {
		p := lp.pools[i]
		p.reap(now)
		if p.conns == 0 && p.up.h.closed.Load() {
			// A route retired by a reload: forget its empty pool.
			if lp.idx < len(p.up.pools) {
				p.up.pools[lp.idx] = nil
			} else {
				delete(lp.extra, p.up)
			}
			lp.pools[i] = lp.pools[len(lp.pools)-1]
			lp.pools[len(lp.pools)-1] = nil
			lp.pools = lp.pools[:len(lp.pools)-1]
			i--
		}
	}
}

// pool holds one loop's connections to one upstream: a LIFO stack of idle
// keep-alive connections (the most recently used is the most likely to be
// alive), and counts for least-connections balancing.
type pool struct {
	up     *Upstream
	lp     *Loop
	max    int             // idle connections kept at most
	idle   []*UpstreamConn // oldest first
	active int             // exchanges on this loop using the upstream (balancing)
	conns  int             // connections open or being dialed
	st     *UpstreamStats  // the upstream's counters of this loop

	limit   int         // connections at once (max_conns' share of this loop); 0 = no limit
	waiting []*exchange // exchanges waiting for a connection under limit, first come first served (queue.go)
}

// take pops the most recently used idle connection, or nil.
func (p *pool) take() *UpstreamConn {
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	uc := p.idle[n-1]
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	p.idleChanged()
	uc.state = ucBusy
	return uc
}

// put keeps uc for reuse, or closes it when the pool is full or its route
// retired. It reports whether uc was kept. The caller must not be inside
// uc's own OnTraffic when uc is closed here; use the returned value.
func (p *pool) put(uc *UpstreamConn, now int64) bool {
	if len(p.idle) >= p.max || p.up.h.closed.Load() {
		return false
	}
	uc.state = ucIdle
	uc.idleSince = now
	uc.reused = true
	p.idle = append(p.idle, uc)
	p.idleChanged()
	return true
}

// remove drops uc from the idle stack (it closed).
func (p *pool) remove(uc *UpstreamConn) {
	for i, c := range p.idle {
		if c == uc {
			copy(p.idle[i:], p.idle[i+1:])
			p.idle[len(p.idle)-1] = nil
			p.idle = p.idle[:len(p.idle)-1]
			p.idleChanged()
			return
		}
	}
}

// reap closes idle connections older than the route's idle timeout (all
// of them once the route retired).
func (p *pool) reap(now int64) {
	limit := p.up.h.idleTimeout
	retired := p.up.h.closed.Load()
	for len(p.idle) > 0 {
		uc := p.idle[0]
		if !retired && now-uc.idleSince <= limit {
			return
		}
		copy(p.idle, p.idle[1:])
		p.idle[len(p.idle)-1] = nil
		p.idle = p.idle[:len(p.idle)-1]
		p.idleChanged()
		uc.close()
	}
}

// UpstreamConn is the state of one upstream connection and its gnet
// context (set through gnet.NewContext before OnOpen, so the server tells
// upstream connections from clients by type). It belongs to one loop; its
// methods must be called on that loop.
type UpstreamConn struct {
	lp        *Loop
	pool      *pool
	c         gnet.Conn // nil until OnOpen
	ex        *exchange // the exchange using it; nil when idle
	state     uint8
	reused    bool  // it served an exchange before: closing before answering means it went stale
	idleSince int64 // unix ns, while idle
}

const (
	ucDialing uint8 = iota // connect in progress
	ucIdle                 // in the pool
	ucBusy                 // used by an exchange
	ucClosed               // closed, or taken out of gnet for an off-loop copy
)

// Upstream returns the upstream the connection goes to.
func (uc *UpstreamConn) Upstream() *Upstream { return uc.pool.up }

// Network returns the network the connection dials: "tcp" or "unix".
func (uc *UpstreamConn) Network() string { return uc.pool.up.network }

// Address returns the address the connection dials.
func (uc *UpstreamConn) Address() string { return uc.pool.up.address }

// close closes an open connection that no exchange uses. OnClose follows
// (possibly at once).
func (uc *UpstreamConn) close() {
	if uc.state == ucClosed {
		return
	}
	uc.state = ucClosed
	uc.ex = nil
	if uc.c != nil && uc.lp.el != nil {
		_ = uc.lp.el.Close(uc.c)
	}
}

// OnOpen runs on the loop when the connection is established and
// enrolled: it sends the waiting request, or pools the connection when no
// request waits for it any more.
func (uc *UpstreamConn) OnOpen(c gnet.Conn) {
	uc.c = c
	uc.lp.Stats.Open.Add(1)
	if uc.state == ucClosed {
		// Given up while connecting and already discounted: close.
		uc.state = ucDialing
		uc.close()
		return
	}
	if ex := uc.ex; ex != nil {
		uc.state = ucBusy
		ex.connected()
		return
	}
	if !uc.pool.put(uc, time.Now().UnixNano()) {
		uc.close()
	}
	uc.pool.serveWaiting()
}

// DialFailed reports on the loop that connecting uc failed with err.
func (uc *UpstreamConn) DialFailed(err error) {
	lp := uc.lp
	lp.Stats.DialFails.Add(1)
	uc.pool.up.h.budget.Release(1) // the connection's descriptor, acquired with the dial
	if uc.state == ucClosed {
		return
	}
	uc.state = ucClosed
	uc.pool.conns--
	uc.pool.up.failed(time.Now().UnixNano(), "connect: "+err.Error())
	if ex := uc.ex; ex != nil {
		uc.ex = nil
		ex.fail(dialFailKind(err))
		ex.dialFailed(err)
	} else if lp.log != nil && lp.log.Enabled(context.Background(), slog.LevelDebug) {
		lp.log.Debug("upstream connect failed", "upstream", uc.pool.up.raw, "err", err)
	}
	uc.pool.serveWaiting()
}

// OnTraffic runs on the loop when the upstream sent bytes.
func (uc *UpstreamConn) OnTraffic(c gnet.Conn) gnet.Action {
	if ex := uc.ex; ex != nil {
		return ex.upstreamData()
	}
	if c.InboundBuffered() == 0 {
		return gnet.None // a Wake that came after its exchange ended
	}
	// Bytes on an idle connection: the upstream answered nothing we
	// asked for; the connection cannot be trusted with a request.
	uc.pool.remove(uc)
	uc.state = ucClosed
	return gnet.Close
}

// OnClose runs on the loop when the connection closed (by the upstream,
// an error, or us).
func (uc *UpstreamConn) OnClose(c gnet.Conn, err error) {
	uc.lp.Stats.Open.Add(-1)
	uc.pool.up.h.budget.Release(1) // the connection's descriptor, acquired with the dial
	prev := uc.state
	uc.state = ucClosed
	if prev == ucIdle {
		uc.pool.remove(uc)
	}
	if prev != ucDialing || uc.c != nil {
		uc.pool.conns--
	}
	if ex := uc.ex; ex != nil {
		uc.ex = nil
		ex.upstreamClosed(uc, err)
	}
	uc.pool.serveWaiting()
}

// netDial connects in a goroutine with the route's connect timeout and
// enrolls the connection into the loop, with uc as its context. A failure
// comes back to the loop as DialFailed. Of the two descriptors dialNew
// acquired (dialFDs), netDial gives back the one that lives while gnet's
// Enroll holds both the dialed descriptor and its duplicate, once Enroll
// closed the dialed one; the other is the connection's.
func (lp *Loop) netDial(uc *UpstreamConn) {
	u := uc.pool.up
	timeout := time.Duration(u.h.connectTimeout)
	el := lp.el
	b := u.h.budget
	go func() {
		d := net.Dialer{Timeout: timeout}
		nc, err := d.Dial(u.network, u.address)
		if err == nil {
			var ch <-chan gnet.RegisteredResult
			ch, err = el.Enroll(gnet.NewContext(context.Background(), uc), nc)
			if err != nil {
				_ = nc.Close()
			} else if res, ok := <-ch; ok && res.Err != nil {
				err = res.Err
			}
		}
		b.Release(1) // Enroll has closed nc by the time its result arrives
		if err != nil {
			_ = el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
				uc.DialFailed(err)
				return nil
			}))
		}
	}()
}
