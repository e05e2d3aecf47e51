package upstream

import (
	"context"
	"net"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/fds"
)

// dialFDs is what a new connection takes from the descriptor budget: its
// own, and the duplicate gnet's Enroll holds before it closes the dialed
// one (given back once Enroll is done).
const dialFDs = 2

// Key names a pool of a loop: what it dials, the protocol its
// connections speak ("http/1.1", "fastcgi"), and over TLS the identity of
// the TLS settings ("" for plain connections), which connections of one
// pool all share: plain and TLS connections to one address, or TLS ones
// with other settings, never mix.
type Key struct {
	Proto, Network, Address string
	TLS                     string
}

// Loop is the core's state on one event loop: its pools by address. It
// is touched on its loop only.
type Loop struct {
	el     gnet.EventLoop
	group  *Group // the process-wide bounds; nil: none (tests)
	pools  map[Key]*Pool
	list   []*Pool
	dialFn func(c *Conn) // nil: dial and enroll (SetDial replaces it in tests)
}

// NewLoop returns the core's state for event loop el (nil in tests that
// drive connections by hand), one of the loops of g (the server's; nil:
// no bound over loops).
func NewLoop(el gnet.EventLoop, g *Group) *Loop {
	return &Loop{el: el, group: g, pools: map[Key]*Pool{}}
}

// EventLoop returns the loop's event loop.
func (lp *Loop) EventLoop() gnet.EventLoop { return lp.el }

// SetDial replaces how the loop makes new connections, for tests that
// drive connections by hand: f must lead to c's OnOpen on this loop, or
// to DialFailed. Such dials hold one descriptor, not two.
func (lp *Loop) SetDial(f func(c *Conn)) { lp.dialFn = f }

// Pool returns the loop's pool for k, made on first use.
func (lp *Loop) Pool(k Key) *Pool {
	if p := lp.pools[k]; p != nil {
		return p
	}
	p := &Pool{lp: lp, network: k.Network, address: k.Address}
	p.wakeFn = gnet.RunnableFunc(func(context.Context) error {
		p.serveWaiting()
		return nil
	})
	p.shedFn = gnet.RunnableFunc(func(context.Context) error {
		p.shedOne()
		return nil
	})
	if lp.group != nil {
		p.slots = lp.group.slotsFor(k)
		p.slots.add(p)
	}
	lp.pools[k] = p
	lp.list = append(lp.list, p)
	return p
}

// Sweep closes idle connections past their pool's idle timeout. It runs
// on the loop every tick.
func (lp *Loop) Sweep(now int64) {
	for _, p := range lp.list {
		p.reap(now)
	}
}

// Conns returns how many connections of the loop are open or dialing.
func (lp *Loop) Conns() int {
	n := 0
	for _, p := range lp.list {
		n += p.conns
	}
	return n
}

// dial connects c in a goroutine with its pool's connect timeout and
// enrolls it into the loop, with c as its context. A failure comes back
// to the loop as dialFailed. Of the two descriptors Dial acquired, the
// one for Enroll's duplicate goes back once Enroll closed the dialed
// one.
func (lp *Loop) dial(c *Conn) {
	if lp.dialFn != nil {
		c.release(1)
		lp.dialFn(c)
		return
	}
	p := c.pool
	el, network, address, timeout, cfg := lp.el, p.network, p.address, p.lim.ConnectTimeout, p.lim.TLS
	go func() {
		deadline := time.Now().Add(timeout)
		d := net.Dialer{Deadline: deadline}
		nc, err := d.Dial(network, address)
		if err == nil && cfg != nil {
			// The handshake runs here, off the loop, within the connect
			// timeout; the session then joins the loop with the socket.
			if c.tls, err = clientHandshake(nc, cfg, deadline); err != nil {
				_ = nc.Close()
			}
		}
		if err == nil {
			var ch <-chan gnet.RegisteredResult
			ch, err = el.Enroll(gnet.NewContext(context.Background(), c), nc)
			if err != nil {
				_ = nc.Close()
			} else if res, ok := <-ch; ok && res.Err != nil {
				err = res.Err
			}
		}
		c.release(1) // Enroll has closed nc by the time its result arrives
		if err != nil {
			_ = el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
				c.dialFailed(err)
				return nil
			}))
		}
	}()
}

// DialFailed reports on the loop that connecting c failed, for dial
// functions set with SetDial.
func (c *Conn) DialFailed(err error) { c.dialFailed(err) }

// Adopt enrolls nc, a connection of the pool's address that served an
// exchange off the loop and ended cleanly, back into the loop and the
// pool (through OnOpen, as a new connection that was reused). nc's own
// descriptor is already counted in budget; Enroll's duplicate takes one
// more until gnet closed nc. Without a place or a descriptor nc is
// closed (and its descriptor given back). It runs on the loop.
func (p *Pool) Adopt(nc net.Conn, count *Counters, budget *fds.Budget) {
	fail := func() {
		_ = nc.Close()
		if budget != nil {
			budget.Release(1)
		}
	}
	if p.lp.el == nil || p.lim.retired() {
		fail()
		return
	}
	if p.slots != nil && !p.slots.acquire() {
		fail()
		return
	}
	if budget != nil && !budget.Acquire(1) {
		p.releaseSlot()
		fail()
		return
	}
	c := &Conn{pool: p, count: count, budget: budget, state: stateDialing, reused: true}
	p.conns++
	el := p.lp.el
	ch, err := el.Enroll(gnet.NewContext(context.Background(), c), nc)
	if err != nil {
		_ = nc.Close()
		p.conns--
		p.releaseSlot()
		c.release(2)
		return
	}
	go func() {
		res, ok := <-ch
		c.release(1) // Enroll has closed nc
		if ok && res.Err != nil {
			_ = el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
				c.dialFailed(res.Err)
				return nil
			}))
		}
	}()
}
