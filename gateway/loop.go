package gateway

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// loop is a route's state on one event loop: a pool of connections per
// server, the exchanges in flight, and scratch memory. Touched only on
// its loop, but live (read by the route's ticker) and stats.
type loop struct {
	h       *Handler
	el      gnet.EventLoop
	pools   []pool      // per server, by index
	active  []*exchange // exchanges in flight; exchange.idx is the position
	free    []*exchange // recycled
	victims []*exchange // scratch for the sweep
	rr      uint32      // round-robin position
	pairs   []byte      // the FCGI_PARAMS stream being built
	live    atomic.Bool // connections or exchanges exist: the route's ticker must go on
	stats   Stats       // written by the loop only, read anywhere
	sweepFn gnet.Runnable
}

// pool is one loop's connections to one server: idle ones (most recently
// used last), the exchanges waiting for one, and counts. A loop keeps at
// most Handler.perLoop connections to a server, every one alive after its
// request (PHP-FPM gives each connection a worker of its own until it
// closes, so connections beyond the pool's workers would wait in its
// backlog behind kept ones forever); requests beyond wait here, in
// order, for the next connection free.
type pool struct {
	idle    []*Conn
	waiting []*exchange // FIFO
	active  int         // exchanges on this loop using the server (least-connections)
	conns   int         // connections open or being dialed
}

func newLoop(h *Handler, el gnet.EventLoop) *loop {
	lp := &loop{h: h, el: el, pools: make([]pool, len(h.servers)), pairs: make([]byte, 0, 4<<10)}
	lp.sweepFn = gnet.RunnableFunc(func(context.Context) error {
		lp.sweep(time.Now().UnixNano())
		return nil
	})
	return lp
}

func (lp *loop) getExchange() *exchange {
	var ex *exchange
	if n := len(lp.free); n > 0 {
		ex = lp.free[n-1]
		lp.free[n-1] = nil
		lp.free = lp.free[:n-1]
	} else {
		ex = newExchange(lp)
	}
	ex.idx = len(lp.active)
	lp.active = append(lp.active, ex)
	lp.live.Store(true)
	return ex
}

// putExchange removes ex from the active list and recycles it, unless an
// off-loop reader still holds it.
func (lp *loop) putExchange(ex *exchange) {
	if i := ex.idx; i >= 0 && i < len(lp.active) && lp.active[i] == ex {
		last := len(lp.active) - 1
		lp.active[i] = lp.active[last]
		lp.active[i].idx = i
		lp.active[last] = nil
		lp.active = lp.active[:last]
	}
	ex.idx = -1
	ex.release()
	if ex.off != nil {
		ex.off.stop()
		return // a goroutine may still reference it; the GC takes it
	}
	ex.reset()
	lp.free = append(lp.free, ex)
}

// sweep enforces the exchanges' deadlines, resumes held ones whose client
// caught up, and closes idle connections past the idle timeout (all of
// them once the route retired).
func (lp *loop) sweep(now int64) {
	lp.victims = append(lp.victims[:0], lp.active...)
	for i, ex := range lp.victims {
		lp.victims[i] = nil
		if ex.idx >= 0 {
			ex.check(now)
		}
	}
	retired := lp.h.closed.Load()
	open := false
	for i := range lp.pools {
		p := &lp.pools[i]
		for len(p.idle) > 0 && (retired || now-p.idle[0].idleSince > lp.h.idleTimeout) {
			c := p.idle[0]
			copy(p.idle, p.idle[1:])
			p.idle[len(p.idle)-1] = nil
			p.idle = p.idle[:len(p.idle)-1]
			c.close()
		}
		open = open || p.conns > 0
	}
	lp.live.Store(open || len(lp.active) > 0)
}

// take pops the most recently used idle connection of server i, or nil.
func (p *pool) take() *Conn {
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	c := p.idle[n-1]
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	c.state = connBusy
	return c
}

// put keeps c for reuse; false when the route retired.
func (lp *loop) put(c *Conn, now int64) bool {
	p := &lp.pools[c.srv]
	if lp.h.closed.Load() {
		return false
	}
	c.state = connIdle
	c.idleSince = now
	c.reused = true
	p.idle = append(p.idle, c)
	return true
}

// full reports whether the loop may open no further connection to the
// pool's server.
func (lp *loop) full(p *pool) bool { return p.conns >= lp.h.perLoop }

// unwait removes ex from the pool's waiting list.
func (p *pool) unwait(ex *exchange) {
	for i, w := range p.waiting {
		if w == ex {
			copy(p.waiting[i:], p.waiting[i+1:])
			p.waiting[len(p.waiting)-1] = nil
			p.waiting = p.waiting[:len(p.waiting)-1]
			return
		}
	}
}

// nextWaiting pops the first exchange waiting for a connection, or nil.
func (p *pool) nextWaiting() *exchange {
	if len(p.waiting) == 0 {
		return nil
	}
	ex := p.waiting[0]
	copy(p.waiting, p.waiting[1:])
	p.waiting[len(p.waiting)-1] = nil
	p.waiting = p.waiting[:len(p.waiting)-1]
	ex.waiting = false
	return ex
}

// freed runs when connection c finished a request cleanly (outside any
// exchange): the first waiting exchange takes it, else the pool keeps it.
// It reports false when c must be closed.
func (lp *loop) freed(c *Conn, now int64) bool {
	if lp.h.closed.Load() {
		return false
	}
	if w := lp.pools[c.srv].nextWaiting(); w != nil {
		c.state = connBusy
		w.takeConn(c)
		return true
	}
	return lp.put(c, now)
}

// slotFreed runs when a connection of server srv closed or failed to
// dial: the first waiting exchange dials a new one.
func (lp *loop) slotFreed(srv int) {
	p := &lp.pools[srv]
	if lp.full(p) {
		return
	}
	if w := p.nextWaiting(); w != nil {
		w.now = nanotime()
		w.dialNew()
		if w.fault != 0 {
			w.settle()
		}
	}
}

func (p *pool) remove(c *Conn) {
	for i, x := range p.idle {
		if x == c {
			copy(p.idle[i:], p.idle[i+1:])
			p.idle[len(p.idle)-1] = nil
			p.idle = p.idle[:len(p.idle)-1]
			return
		}
	}
}

// Conn is one connection to a FastCGI server and its gnet context (set
// through gnet.NewContext before OnOpen, so the server's event handler
// tells it from a client by type). It belongs to one loop; its methods
// run on that loop.
type Conn struct {
	lp        *loop
	srv       int
	c         gnet.Conn // nil until OnOpen
	ex        *exchange // the exchange using it; nil when idle
	state     uint8
	reused    bool  // it served a request before: closing before answering means it went stale
	idleSince int64 // unix ns, while idle
}

const (
	connDialing uint8 = iota
	connIdle
	connBusy
	connClosed // closed, or taken out of gnet for an off-loop read
)

// close closes a connection no exchange uses; OnClose follows.
func (c *Conn) close() {
	if c.state == connClosed {
		return
	}
	c.state = connClosed
	c.ex = nil
	if c.c != nil && c.lp.el != nil {
		_ = c.lp.el.Close(c.c)
	}
}

// OnOpen runs on the loop when the connection is established and
// enrolled: the waiting request goes out, or the connection is pooled.
func (c *Conn) OnOpen(gc gnet.Conn) {
	c.c = gc
	c.lp.stats.Open.Add(1)
	if c.state == connClosed {
		c.state = connDialing
		c.close()
		return
	}
	if ex := c.ex; ex != nil {
		c.state = connBusy
		ex.connected()
		return
	}
	if !c.lp.freed(c, time.Now().UnixNano()) {
		c.close()
	}
}

// dialFailed reports on the loop that connecting c failed.
func (c *Conn) dialFailed(err error) {
	c.lp.h.budget.Release(1)
	if c.state == connClosed {
		return
	}
	c.state = connClosed
	c.lp.pools[c.srv].conns--
	c.lp.h.servers[c.srv].failed(time.Now().UnixNano(), "connect: "+err.Error())
	if ex := c.ex; ex != nil {
		c.ex = nil
		ex.dialFailed(err)
	}
	c.lp.slotFreed(c.srv)
}

// OnTraffic runs on the loop when the server sent bytes.
func (c *Conn) OnTraffic(gc gnet.Conn) gnet.Action {
	if ex := c.ex; ex != nil {
		return ex.appData()
	}
	if gc.InboundBuffered() == 0 {
		return gnet.None // a Wake after its exchange ended
	}
	// Bytes on an idle connection: nothing was asked.
	c.lp.pools[c.srv].remove(c)
	c.state = connClosed
	return gnet.Close
}

// OnClose runs on the loop when the connection closed.
func (c *Conn) OnClose(_ gnet.Conn, err error) {
	c.lp.h.budget.Release(1)
	c.lp.stats.Open.Add(-1)
	prev := c.state
	c.state = connClosed
	p := &c.lp.pools[c.srv]
	if prev == connIdle {
		p.remove(c)
	}
	if prev != connDialing || c.c != nil {
		p.conns--
	}
	if ex := c.ex; ex != nil {
		c.ex = nil
		ex.connClosed(err)
	}
	c.lp.slotFreed(c.srv)
}

// dialFDs is what a new connection takes from the descriptor budget: its
// own, and the duplicate Enroll makes before closing the dialed one.
const dialFDs = 2

// dial starts a connection to server srv for ex (nil: none waits); false
// when the descriptor budget is spent.
func (lp *loop) dial(srv int, ex *exchange) *Conn {
	if !lp.h.budget.Acquire(dialFDs) {
		return nil
	}
	c := &Conn{lp: lp, srv: srv, state: connDialing, ex: ex}
	lp.pools[srv].conns++
	lp.stats.Dials.Add(1)
	if f := lp.h.dialHook; f != nil {
		b := lp.h.budget
		b.Release(1)
		f(c)
		return c
	}
	s := lp.h.servers[srv]
	timeout := time.Duration(lp.h.connectTimeout)
	el, b := lp.el, lp.h.budget
	go func() {
		d := net.Dialer{Timeout: timeout}
		nc, err := d.Dial(s.network, s.address)
		if err == nil {
			var ch <-chan gnet.RegisteredResult
			ch, err = el.Enroll(gnet.NewContext(context.Background(), c), nc)
			if err != nil {
				_ = nc.Close()
			} else if res, ok := <-ch; ok && res.Err != nil {
				err = res.Err
			}
		}
		b.Release(1)
		if err != nil {
			_ = el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
				c.dialFailed(err)
				return nil
			}))
		}
	}()
	return c
}
