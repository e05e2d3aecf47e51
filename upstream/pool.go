package upstream

import (
	"sync/atomic"
	"time"

	"gale/fds"
)

// Waiter is an exchange waiting for a connection of a full pool
// (max_conns). Dequeued hands it an idle connection, busy and ready for a
// request (c != nil), or room to dial one (c == nil). It runs on the loop.
type Waiter interface {
	Dequeued(c *Conn)
}

// Limits are what a pool's current user configures: they may change
// between requests (a reload, another route naming the same address), and
// the pool follows the latest.
type Limits struct {
	MaxIdle        int           // idle connections kept at most; 0 keeps none
	MaxConns       int           // connections open or dialing at most on this loop; 0 = no bound
	IdleTimeout    time.Duration // an idle connection older than this closes
	ConnectTimeout time.Duration // a dial that takes longer fails

	// Budget counts the descriptors of the connections dialed (the
	// server's one budget); nil counts nothing.
	Budget *fds.Budget

	// Retired is set once the configuring user (a route) is retired by a
	// reload or a stop: unless a later user configured the pool again,
	// it keeps no connection idle. nil: never.
	Retired *atomic.Bool
}

// retired reports whether the pool's latest user retired.
func (l *Limits) retired() bool { return l.Retired != nil && l.Retired.Load() }

// Pool is one loop's connections to one address: a LIFO stack of idle
// connections (the most recently used is the most likely alive), the
// exchanges waiting for one, and counts. It belongs to its loop.
type Pool struct {
	lp      *Loop
	network string
	address string
	lim     Limits

	idle    []*Conn  // oldest first
	waiting []Waiter // first come first served
	conns   int      // connections open or dialing

	// Active counts the exchanges on this loop using the address, for
	// least-connections balancing; the kinds keep it.
	Active int
}

// Network returns the network the pool dials: "tcp" or "unix".
func (p *Pool) Network() string { return p.network }

// Address returns the address the pool dials.
func (p *Pool) Address() string { return p.address }

// Conns returns how many connections are open or dialing.
func (p *Pool) Conns() int { return p.conns }

// Idle returns how many connections are idle.
func (p *Pool) Idle() int { return len(p.idle) }

// Configure sets the pool's limits (see Limits).
func (p *Pool) Configure(l Limits) { p.lim = l }

// Full reports whether the pool may open no further connection now.
func (p *Pool) Full() bool { return p.lim.MaxConns > 0 && p.conns >= p.lim.MaxConns }

// Take pops the most recently used idle connection, busy for the caller,
// or nil.
func (p *Pool) Take() *Conn {
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	c := p.idle[n-1]
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	c.state = stateBusy
	return c
}

// Wait puts w in the queue for the next connection freed.
func (p *Pool) Wait(w Waiter) { p.waiting = append(p.waiting, w) }

// Unwait removes w from the queue (it ended or timed out).
func (p *Pool) Unwait(w Waiter) {
	for i, x := range p.waiting {
		if x == w {
			copy(p.waiting[i:], p.waiting[i+1:])
			p.waiting[len(p.waiting)-1] = nil
			p.waiting = p.waiting[:len(p.waiting)-1]
			return
		}
	}
}

// Dial starts a new connection for u, counted in count. It returns nil,
// dialing nothing, when the descriptor budget is spent.
func (p *Pool) Dial(u User, count *Counters) *Conn {
	b := p.lim.Budget
	if b != nil && !b.Acquire(dialFDs) {
		return nil
	}
	c := &Conn{pool: p, user: u, count: count, budget: b, state: stateDialing}
	p.conns++
	count.Dials.Add(1)
	p.lp.dial(c)
	return c
}

// put keeps c (busy, just freed) for reuse: the first waiter takes it, or
// the idle stack does while it has room. It reports false when c must
// close.
func (p *Pool) put(c *Conn, now int64) bool {
	if len(p.waiting) > 0 {
		w := p.next()
		c.state = stateBusy
		w.Dequeued(c)
		return true
	}
	if len(p.idle) >= p.lim.MaxIdle || p.lim.retired() {
		c.state = stateClosed
		return false
	}
	c.state = stateIdle
	c.idleSince = now
	p.idle = append(p.idle, c)
	return true
}

// next pops the first waiter.
func (p *Pool) next() Waiter {
	w := p.waiting[0]
	copy(p.waiting, p.waiting[1:])
	p.waiting[len(p.waiting)-1] = nil
	p.waiting = p.waiting[:len(p.waiting)-1]
	return w
}

// serveWaiting hands idle connections, or room for new ones, to the
// waiters in order. It runs whenever a connection closed or failed to
// dial.
func (p *Pool) serveWaiting() {
	for len(p.waiting) > 0 && (len(p.idle) > 0 || !p.Full()) {
		w := p.next()
		w.Dequeued(p.Take())
	}
}

// remove drops c from the idle stack (it closed).
func (p *Pool) remove(c *Conn) {
	for i, x := range p.idle {
		if x == c {
			copy(p.idle[i:], p.idle[i+1:])
			p.idle[len(p.idle)-1] = nil
			p.idle = p.idle[:len(p.idle)-1]
			return
		}
	}
}

// reap closes idle connections older than the idle timeout, those beyond
// MaxIdle (which a new user may have lowered), and all of them once the
// latest user retired.
func (p *Pool) reap(now int64) {
	retired := p.lim.retired()
	for len(p.idle) > 0 {
		c := p.idle[0]
		if !retired && len(p.idle) <= p.lim.MaxIdle && now-c.idleSince <= int64(p.lim.IdleTimeout) {
			return
		}
		copy(p.idle, p.idle[1:])
		p.idle[len(p.idle)-1] = nil
		p.idle = p.idle[:len(p.idle)-1]
		c.Close()
	}
}

func nanotime() int64 { return time.Now().UnixNano() }
