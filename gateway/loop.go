package gateway

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/upstream"
)

// loop is a route's state on one event loop: the pool of each server
// (the loop's pools of the upstream core, shared with every route naming
// the same address), the exchanges in flight, and scratch memory.
// Touched only on its loop, but live (read by the route's ticker) and
// stats.
type loop struct {
	h         *Handler
	el        gnet.EventLoop
	up        *upstream.Loop
	pools     []*upstream.Pool              // per server, by index
	exchanges upstream.Exchanges[*exchange] // in flight, and kept for reuse
	rr        uint32                        // round-robin position
	pairs     []byte                        // the FCGI_PARAMS stream being built
	live      atomic.Bool                   // exchanges exist: the route's ticker must go on
	stats     Stats                         // written by the loop only, read anywhere
	conns     upstream.Counters             // the connections this route dialed on the loop
	sweepFn   gnet.Runnable
}

// limits are the route's settings for its servers' pools: max_conns
// connections to a server over every loop (PHP-FPM gives each connection
// a worker of its own until it closes, so connections beyond its workers
// would wait in its backlog behind kept ones), each kept alive until the
// idle timeout; requests beyond wait in their loop's queue, in order, for
// the next connection free on any loop.
func (h *Handler) limits() upstream.Limits {
	idle := h.conf.MaxConns
	if !h.conf.KeepAlive {
		idle = 0 // each connection closes after its request
	}
	return upstream.Limits{
		MaxIdle:        idle,
		MaxTotal:       h.conf.MaxConns,
		IdleTimeout:    time.Duration(h.idleTimeout),
		ConnectTimeout: time.Duration(h.connectTimeout),
		Budget:         h.budget,
		WorkerPerConn:  true,
		Retired:        &h.closed,
	}
}

func newLoop(h *Handler, up *upstream.Loop) *loop {
	lp := &loop{h: h, el: up.EventLoop(), up: up, pairs: make([]byte, 0, 4<<10)}
	lp.exchanges.New = func() *exchange { return newExchange(lp) }
	for _, srv := range h.servers {
		lp.pools = append(lp.pools, up.Pool(upstream.Key{Proto: "fastcgi", Network: srv.network, Address: srv.address}))
	}
	lp.sweepFn = gnet.RunnableFunc(func(context.Context) error {
		lp.sweep(time.Now().UnixNano())
		return nil
	})
	return lp
}

// pool returns the pool of server srv, configured with the route's
// limits (another route naming the same address may have set its own).
func (lp *loop) pool(srv int) *upstream.Pool {
	p := lp.pools[srv]
	p.Configure(lp.h.limits())
	return p
}

func (lp *loop) getExchange() *exchange {
	lp.live.Store(true)
	return lp.exchanges.Get()
}

// putExchange removes ex from the exchanges in flight and keeps it for
// reuse, unless an off-loop reader still holds it.
func (lp *loop) putExchange(ex *exchange) {
	lp.exchanges.Remove(ex)
	ex.release()
	if ex.off != nil {
		ex.off.stop()
		return // a goroutine may still reference it; the GC takes it
	}
	ex.reset()
	lp.exchanges.Keep(ex)
}

// sweep enforces the exchanges' deadlines and resumes held ones whose
// client caught up. Idle connections are the upstream core's: its loop
// sweep closes them.
func (lp *loop) sweep(now int64) {
	lp.exchanges.Sweep(now, (*exchange).check)
	lp.live.Store(lp.exchanges.Len() > 0)
}
