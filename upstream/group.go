package upstream

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"
)

// Group is the process-wide side of the core: per address, the bound on
// connections over every loop (max_conns), and the loops' pools of that
// address, so that a connection freed on one loop wakes a request waiting
// for one on another. The zero value is ready to use; it is safe for
// concurrent use.
//
// The bound is what an application server with a fixed number of workers
// needs: PHP-FPM gives each open connection a worker until it closes, so
// max_conns connections over all loops must never become max_conns per
// loop. A loop whose pool is empty while other loops hold every
// connection idle asks one of them to close an idle one (shed), and is
// woken when the connection's place is free.
type Group struct {
	mu    sync.Mutex
	slots map[Key]*Slots
}

// slotsFor returns the bound of address k, made on first use (when a
// loop first makes its pool for k, never per request).
func (g *Group) slotsFor(k Key) *Slots {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.slots == nil {
		g.slots = map[Key]*Slots{}
	}
	s := g.slots[k]
	if s == nil {
		s = &Slots{}
		s.pools.Store(&[]*Pool{})
		g.slots[k] = s
	}
	return s
}

// Slots bounds the connections to one address over every loop.
type Slots struct {
	limit atomic.Int64 // 0: no bound
	used  atomic.Int64 // connections open or dialing, every loop

	starved atomic.Int32 // pools waiting for a place: a freed connection goes instead of idling

	mu    sync.Mutex              // serialises registration
	pools atomic.Pointer[[]*Pool] // every loop's pool of the address
}

// add registers p, a loop's pool of the address.
func (s *Slots) add(p *Pool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := append(append([]*Pool(nil), *s.pools.Load()...), p)
	s.pools.Store(&list)
}

// acquire takes a place for a new connection; false when every place is
// taken.
func (s *Slots) acquire() bool {
	for {
		used, limit := s.used.Load(), s.limit.Load()
		if limit > 0 && used >= limit {
			return false
		}
		if s.used.CompareAndSwap(used, used+1) {
			return true
		}
	}
}

// full reports whether every place is taken now.
func (s *Slots) full() bool {
	limit := s.limit.Load()
	return limit > 0 && s.used.Load() >= limit
}

// release gives a place back and wakes the loops whose pools wait for
// one. Safe from any loop.
func (s *Slots) release() {
	s.used.Add(-1)
	for _, p := range *s.pools.Load() {
		if p.starved.Load() {
			p.post(p.wakeFn)
		}
	}
}

// shed asks another loop that keeps a connection of the address idle to
// close one, for pool p that waits with every place taken. At most one
// request per loop is in flight.
func (s *Slots) shed(p *Pool) {
	for _, q := range *s.pools.Load() {
		if q != p && q.idleN.Load() > 0 && !q.shedding.Swap(true) {
			q.post(q.shedFn)
			return
		}
	}
}

// post runs f on the pool's loop (no loop in tests driving connections by
// hand: then at once).
func (p *Pool) post(f gnet.Runnable) {
	if el := p.lp.el; el != nil {
		_ = el.Execute(context.Background(), f)
		return
	}
	_ = f.Run(context.Background())
}
