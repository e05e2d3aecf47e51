package upstream

import (
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"

	"gale/fds"
)

// User is what an exchange implements to use a Conn: the connection's
// events while it is attached. Every method runs on the connection's loop.
type User interface {
	// Connected runs when the connection dialed for the user is open
	// (c: a dial made for tests may open before Dial returned it).
	Connected(c *Conn)
	// Traffic runs when the upstream sent bytes.
	Traffic() gnet.Action
	// Lost runs when the connection closed while attached (err is gnet's
	// reason, or nil).
	Lost(err error)
	// DialFailed runs when connecting failed.
	DialFailed(err error)
}

// Counters are the connection counts of whoever dials: a route on one
// loop. The dialing loop writes them; any goroutine may read them.
type Counters struct {
	Dials     atomic.Uint64 // connections dialed
	DialFails atomic.Uint64 // dials refused, failed or timed out
	Open      atomic.Int64  // connections open now (pooled or in use)
}

// Conn is one connection to an upstream and its gnet context. It belongs
// to one loop; its methods run on that loop.
type Conn struct {
	pool      *Pool
	gc        gnet.Conn // nil until OnOpen
	user      User
	count     *Counters
	budget    *fds.Budget // what the dial acquired from; nil: nothing
	state     uint8
	reused    bool     // it served an exchange before: closing before answering means it went stale
	idleSince int64    // unix ns, while idle
	unheard   bool     // open for its first exchange, and nothing came back yet (Pool.unheard)
	tls       *tlsConn // the TLS session (tls.go); nil: plain. Set by the dial goroutine before Enroll
}

const (
	stateDialing uint8 = iota // connect in progress
	stateIdle                 // in the pool
	stateBusy                 // used by an exchange
	stateClosed               // closed, or taken out of gnet for an off-loop read
)

// Gnet returns the gnet connection (nil while dialing).
func (c *Conn) Gnet() gnet.Conn { return c.gc }

// Pool returns the pool the connection belongs to.
func (c *Conn) Pool() *Pool { return c.pool }

// Reused reports whether the connection served an exchange before.
func (c *Conn) Reused() bool { return c.reused }

// Busy reports whether the connection is open and in use.
func (c *Conn) Busy() bool { return c.state == stateBusy }

// Dialing reports whether the connection is still being dialed.
func (c *Conn) Dialing() bool { return c.state == stateDialing }

// Closed reports whether the connection is closed (or left gnet).
func (c *Conn) Closed() bool { return c.state == stateClosed }

// Attach makes u the connection's user.
func (c *Conn) Attach(u User) {
	c.user = u
}

// Detach removes u as the connection's user (a connection still dialing
// then joins the pool once open).
func (c *Conn) Detach(u User) {
	if c.user == u {
		c.user = nil
	}
}

// Abandon detaches u and, when closeIt is set, closes the connection,
// unless it is still dialing: then it joins the pool once open.
func (c *Conn) Abandon(u User, closeIt bool) {
	c.Detach(u)
	if closeIt && !c.Dialing() {
		c.Close()
	}
}

// Close closes a connection no user uses; OnClose follows (possibly at
// once).
func (c *Conn) Close() {
	if c.state == stateClosed {
		return
	}
	c.state = stateClosed
	c.user = nil
	if c.gc != nil && c.pool.lp.el != nil {
		_ = c.pool.lp.el.Close(c.gc)
	}
}

// Drop marks the connection closed for a user that closes it itself (by
// returning gnet.Close from Traffic) or takes it out of gnet (an off-loop
// read of a duplicate); OnClose follows.
func (c *Conn) Drop() {
	c.state = stateClosed
	c.user = nil
}

// Release gives back a connection whose exchange ended cleanly: the first
// waiter of the pool takes it, or the pool keeps it. It reports false
// when the connection must close instead (the pool keeps no more); the
// caller closes it (Close, or gnet.Close from Traffic after Drop).
func (c *Conn) Release(now int64) bool {
	c.heard()
	c.user = nil
	c.reused = true
	if c.state != stateBusy {
		return false
	}
	return c.pool.put(c, now)
}

// OnOpen runs on the loop when the connection is established and
// enrolled: its user goes on, or the pool takes it.
func (c *Conn) OnOpen(gc gnet.Conn) {
	c.gc = gc
	if c.tls != nil {
		c.tls.open(gc)
	}
	c.count.Open.Add(1)
	if c.state == stateClosed {
		// Given up while connecting: close.
		c.state = stateDialing
		c.Close()
		return
	}
	c.state = stateBusy
	if u := c.user; u != nil {
		c.unheard = true
		c.pool.unheard++
		u.Connected(c)
		return
	}
	if !c.pool.put(c, nanotime()) {
		c.Close()
	}
}

// dialFailed reports on the loop that connecting failed.
func (c *Conn) dialFailed(err error) {
	p := c.pool
	c.count.DialFails.Add(1)
	c.release(1) // the connection's descriptor, acquired with the dial
	p.dropped()
	if c.state != stateClosed {
		c.state = stateClosed
		if u := c.user; u != nil {
			c.user = nil
			u.DialFailed(err)
		}
	}
	p.serveWaiting()
}

// OnTraffic runs on the loop when the upstream sent bytes.
func (c *Conn) OnTraffic(gc gnet.Conn) gnet.Action {
	c.heard()
	if u := c.user; u != nil {
		return u.Traffic()
	}
	if gc.InboundBuffered() == 0 {
		return gnet.None // a Wake that came after its exchange ended
	}
	if c.tls != nil && len(c.tls.inbound()) == 0 && !c.tls.eof {
		return gnet.None // a session ticket, or another handshake message
	}
	// Bytes on an idle connection: nothing was asked; the connection
	// cannot be trusted with a request.
	if c.state == stateIdle {
		c.pool.remove(c)
	}
	c.state = stateClosed
	return gnet.Close
}

// OnClose runs on the loop when the connection closed (by the upstream,
// an error, or gale).
func (c *Conn) OnClose(_ gnet.Conn, err error) {
	p := c.pool
	c.heard()
	c.count.Open.Add(-1)
	c.release(1) // the connection's descriptor
	prev := c.state
	c.state = stateClosed
	if prev == stateIdle {
		p.remove(c)
	}
	p.dropped()
	if u := c.user; u != nil {
		c.user = nil
		u.Lost(err)
	}
	p.serveWaiting()
}

// release gives n descriptors back to the budget the dial took them from.
func (c *Conn) release(n int64) {
	if c.budget != nil {
		c.budget.Release(n)
	}
}

// heard ends the wait for the first answer on a new connection.
func (c *Conn) heard() {
	if c.unheard {
		c.unheard = false
		c.pool.unheard--
	}
}
