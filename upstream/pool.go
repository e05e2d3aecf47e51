package upstream

import (
	"crypto/tls"
	"errors"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

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
	MaxTotal       int           // connections open or dialing at most over every loop (Group); 0 = no bound
	IdleTimeout    time.Duration // an idle connection older than this closes
	ConnectTimeout time.Duration // a dial that takes longer fails

	// TLS is how new connections speak TLS to the address (the handshake
	// runs in the dial goroutine); nil: plain. The pool's Key names its
	// identity, so every user of a pool configures an equal one.
	TLS *tls.Config

	// Budget counts the descriptors of the connections dialed (the
	// server's one budget); nil counts nothing.
	Budget *fds.Budget

	// WorkerPerConn says the application gives each open connection a
	// worker of its own until it closes (PHP-FPM): while a new connection
	// waits for its first answer, freed ones close instead of idling
	// (put).
	WorkerPerConn bool

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
	unheard int      // new connections whose first exchange has no answer yet

	// The address's bound over every loop, and what other loops read:
	// whether this pool waits for a place (starved), how many it keeps
	// idle, and whether it was asked to close one (shedding).
	slots    *Slots
	starved  atomic.Bool
	shedding atomic.Bool
	idleN    atomic.Int32
	wakeFn   gnet.Runnable
	shedFn   gnet.Runnable

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

// IdleCount is Idle for any goroutine (the metrics).
func (p *Pool) IdleCount() int { return int(p.idleN.Load()) }

// AddressConns returns how many connections to the pool's address are
// open or dialing over every loop, or -1 when the pool has no Group.
// Safe for concurrent use.
func (p *Pool) AddressConns() int64 {
	if p.slots == nil {
		return -1
	}
	return p.slots.used.Load()
}

// Configure sets the pool's limits (see Limits).
func (p *Pool) Configure(l Limits) {
	p.lim = l
	if p.slots != nil && p.slots.limit.Load() != int64(l.MaxTotal) {
		p.slots.limit.Store(int64(l.MaxTotal))
	}
}

// Full reports whether the pool may open no further connection now: its
// loop's bound, or the address's over every loop, is reached.
func (p *Pool) Full() bool {
	return p.lim.MaxConns > 0 && p.conns >= p.lim.MaxConns || p.slots != nil && p.slots.full()
}

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
	p.idleN.Store(int32(len(p.idle)))
	c.state = stateBusy
	return c
}

// Wait puts w in the queue for the next connection freed. A pool that
// holds a connection serves its queue in turn as they free; one that
// holds none while other loops hold every place of the address is marked
// as waiting for one (a release anywhere wakes it), and a loop keeping
// one idle is asked to close it.
func (p *Pool) Wait(w Waiter) {
	p.waiting = append(p.waiting, w)
	if p.slots == nil || p.conns > 0 {
		return // a connection of this loop frees for it
	}
	p.setStarved(true)
	if !p.slots.full() {
		p.post(p.wakeFn) // a place freed before the mark was seen
		return
	}
	p.slots.shed(p)
}

// ErrFull and ErrBudget are why Dial made no connection.
var (
	ErrFull   = errors.New("upstream: every connection the address may have is in use")
	ErrBudget = errors.New("upstream: no descriptor left for a connection")
)

// Unwait removes w from the queue (it ended or timed out).
func (p *Pool) Unwait(w Waiter) {
	for i, x := range p.waiting {
		if x == w {
			copy(p.waiting[i:], p.waiting[i+1:])
			p.waiting[len(p.waiting)-1] = nil
			p.waiting = p.waiting[:len(p.waiting)-1]
			if len(p.waiting) == 0 {
				p.setStarved(false)
			}
			return
		}
	}
}

// Dial starts a new connection for u, counted in count. It dials nothing
// and returns ErrFull when the address's places over every loop are
// taken (wait for one), ErrBudget when the descriptor budget is spent.
func (p *Pool) Dial(u User, count *Counters) (*Conn, error) {
	if p.slots != nil && !p.slots.acquire() {
		return nil, ErrFull
	}
	b := p.lim.Budget
	if b != nil && !b.Acquire(dialFDs) {
		p.releaseSlot()
		return nil, ErrBudget
	}
	c := &Conn{pool: p, user: u, count: count, budget: b, state: stateDialing}
	p.conns++
	count.Dials.Add(1)
	p.lp.dial(c)
	return c, nil
}

// dropped counts a connection's end (closed, or its dial failed) before
// its user hears of it, so that a retry finds its place free; the place
// goes to a waiter (serveWaiting) after.
func (p *Pool) dropped() {
	p.conns--
	p.releaseSlot()
}

func (p *Pool) releaseSlot() {
	if p.slots != nil {
		p.slots.release()
	}
}

// put keeps c (busy, just freed) for reuse: the first waiter takes it, or
// the idle stack does while it has room. It reports false when c must
// close.
//
// With WorkerPerConn, while a new connection of the pool waits for its
// first answer, a freed one is closed rather than kept: an application that gives each
// connection a worker until it closes (PHP-FPM) may have more connections
// than workers (max_conns set above pm.max_children), and the new one
// then waits in its backlog for the worker the kept one would hold. The
// price of that misconfiguration is a connection, not a request that
// hangs. Likewise while another loop waits for a place of the address:
// the place this one would keep idle goes to it.
func (p *Pool) put(c *Conn, now int64) bool {
	if len(p.waiting) > 0 {
		w := p.next()
		c.state = stateBusy
		w.Dequeued(c)
		return true
	}
	if len(p.idle) >= p.lim.MaxIdle || p.lim.retired() || p.lim.WorkerPerConn && p.unheard > 0 || p.slots != nil && p.slots.starved.Load() > 0 {
		c.state = stateClosed
		return false
	}
	c.state = stateIdle
	c.idleSince = now
	p.idle = append(p.idle, c)
	p.idleN.Store(int32(len(p.idle)))
	return true
}

// next pops the first waiter.
func (p *Pool) next() Waiter {
	w := p.waiting[0]
	copy(p.waiting, p.waiting[1:])
	p.waiting[len(p.waiting)-1] = nil
	p.waiting = p.waiting[:len(p.waiting)-1]
	if len(p.waiting) == 0 {
		p.setStarved(false)
	}
	return w
}

// serveWaiting hands idle connections, or room for new ones, to the
// waiters in order. It runs whenever a connection closed or failed to
// dial, and when another loop freed a place of the address.
func (p *Pool) serveWaiting() {
	for len(p.waiting) > 0 && (len(p.idle) > 0 || !p.Full()) {
		w := p.next()
		w.Dequeued(p.Take())
	}
	if len(p.waiting) == 0 {
		p.setStarved(false)
	}
}

// setStarved marks whether the pool waits for a place of the address
// that other loops hold, and counts it in the address's Slots.
func (p *Pool) setStarved(on bool) {
	if p.slots == nil {
		return
	}
	if p.starved.CompareAndSwap(!on, on) {
		if on {
			p.slots.starved.Add(1)
		} else {
			p.slots.starved.Add(-1)
		}
	}
}

// shedOne closes the oldest idle connection, asked by a loop that waits
// for a place of the address.
func (p *Pool) shedOne() {
	p.shedding.Store(false)
	if len(p.idle) == 0 || len(p.waiting) > 0 {
		return
	}
	c := p.idle[0]
	copy(p.idle, p.idle[1:])
	p.idle[len(p.idle)-1] = nil
	p.idle = p.idle[:len(p.idle)-1]
	p.idleN.Store(int32(len(p.idle)))
	c.Close()
}

// remove drops c from the idle stack (it closed).
func (p *Pool) remove(c *Conn) {
	for i, x := range p.idle {
		if x == c {
			copy(p.idle[i:], p.idle[i+1:])
			p.idle[len(p.idle)-1] = nil
			p.idle = p.idle[:len(p.idle)-1]
			p.idleN.Store(int32(len(p.idle)))
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
		p.idleN.Store(int32(len(p.idle)))
		c.Close()
	}
}

func nanotime() int64 { return time.Now().UnixNano() }
