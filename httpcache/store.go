package httpcache

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// slot is one key's place in the store: its stored variants (one per
// combination of the fields Vary names), swapped whole.
type slot struct {
	key     string
	cur     atomic.Pointer[[]*Entry] // nil once removed
	visited atomic.Bool
	size    int64 // bytes the variants hold; under Store.mu
}

// Store is one route's cache. Safe for concurrent use; see the package
// doc for who takes its lock.
type Store struct {
	max     int64
	mu      sync.Mutex
	m       map[string]*slot
	ring    []*slot // insertion order, for SIEVE
	hand    int
	bytes   int64
	flights map[string]*Flight
	slots   atomic.Int64 // len(m), for views deciding when to sweep
	views   []*View      // every loop's view, for Stats

	evictions atomic.Uint64
	stored    atomic.Uint64
}

// Outcome is what became of a request the cache saw, counted per view
// (Stats).
type Outcome uint8

// The outcomes, named by OutcomeNames.
const (
	Hit         Outcome = iota // answered from the store, fresh
	Miss                       // nothing usable stored: forwarded
	Revalidated                // stale: validated upstream (a 304 refreshed it, or a new response came)
	StaleError                 // stale, served in place of an upstream error (stale-if-error)
	Collapsed                  // waited for another request's fetch of its key
	Bypass                     // forwarded without a lookup: the client asked for validation, or an unsafe method
	Stale                      // stale, served while another request revalidates it (stale-while-revalidate)
	numOutcomes
)

// OutcomeNames are the outcomes' metric labels.
var OutcomeNames = [numOutcomes]string{"hit", "miss", "revalidated", "stale_error", "collapsed", "bypass", "stale"}

// Stats are a store's counters, summed over its views.
type Stats struct {
	Requests  [numOutcomes]uint64
	Bytes     int64 // held now
	Entries   int64 // keys held now
	Stored    uint64
	Evictions uint64
}

// Stats sums the store's counters. Safe for concurrent use.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Bytes: s.bytes, Entries: int64(len(s.m)), Stored: s.stored.Load(), Evictions: s.evictions.Load()}
	for _, v := range s.views {
		for i := range v.counts {
			st.Requests[i] += v.counts[i].Load()
		}
	}
	return st
}

// maxVariants bounds the variants kept under one key (a Vary on a field
// with many values, such as User-Agent): past it the oldest go.
const maxVariants = 16

// NewStore returns a store that holds at most maxBytes.
func NewStore(maxBytes int64) *Store {
	return &Store{max: maxBytes, m: map[string]*slot{}, flights: map[string]*Flight{}}
}

// Bytes returns what the store holds now.
func (s *Store) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// Put stores e under key, replacing the variant Vary selects the same
// way (same request values), and evicts past the budget.
func (s *Store) Put(key []byte, e *Entry) {
	if e.size > s.max {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.m[string(key)]
	if sl == nil {
		sl = &slot{key: string(key)}
		s.m[sl.key] = sl
		s.slots.Store(int64(len(s.m)))
		s.ring = append(s.ring, sl)
	}
	var old []*Entry
	if p := sl.cur.Load(); p != nil {
		old = *p
	}
	next := make([]*Entry, 0, len(old)+1)
	next = append(next, e)
	size := e.size
	for _, o := range old {
		if !sameVariant(o, e) && len(next) < maxVariants {
			next = append(next, o)
			size += o.size
		}
	}
	s.bytes += size - sl.size
	sl.size = size
	sl.cur.Store(&next)
	s.stored.Add(1)
	for s.bytes > s.max && len(s.ring) > 1 {
		s.evict(sl)
	}
}

// sameVariant reports whether a and b were fetched with the same values
// of the same Vary fields.
func sameVariant(a, b *Entry) bool {
	if len(a.vary) != len(b.vary) {
		return false
	}
	for i := range a.vary {
		if string(a.vary[i]) != string(b.vary[i]) || string(a.varyVals[i]) != string(b.varyVals[i]) {
			return false
		}
	}
	return true
}

// evict removes one slot other than keep by SIEVE. Under s.mu.
func (s *Store) evict(keep *slot) {
	for {
		if s.hand >= len(s.ring) {
			s.hand = 0
		}
		sl := s.ring[s.hand]
		if sl != keep && !sl.visited.Load() {
			s.removeAt(s.hand)
			s.evictions.Add(1)
			return
		}
		sl.visited.Store(false)
		s.hand++
	}
}

// removeAt drops the slot at ring index i. Under s.mu.
func (s *Store) removeAt(i int) {
	sl := s.ring[i]
	copy(s.ring[i:], s.ring[i+1:])
	s.ring[len(s.ring)-1] = nil
	s.ring = s.ring[:len(s.ring)-1]
	delete(s.m, sl.key)
	s.slots.Store(int64(len(s.m)))
	sl.cur.Store(nil)
	s.bytes -= sl.size
}

// Invalidate removes every variant stored under key (RFC 9111 section
// 4.4).
func (s *Store) Invalidate(key []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl := s.m[string(key)]; sl != nil {
		for i, x := range s.ring {
			if x == sl {
				s.removeAt(i)
				if s.hand > i {
					s.hand--
				}
				return
			}
		}
	}
}

// PurgeIf removes the keys for which drop reports true and returns how
// many it removed. Responses being sent keep what they hold.
func (s *Store) PurgeIf(drop func(key string) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i := 0; i < len(s.ring); {
		if drop(s.ring[i].key) {
			s.removeAt(i)
			if s.hand > i {
				s.hand--
			}
			n++
			continue
		}
		i++
	}
	return n
}

// KeyPath returns the request path of a key made by the cache (host,
// space, path, then "?" and the query), without the query.
func KeyPath(key string) string {
	_, p, _ := strings.Cut(key, " ")
	p, _, _ = strings.Cut(p, "?")
	return p
}

// lookupSlot finds key's slot under the lock (a view's first meeting).
func (s *Store) lookupSlot(key []byte) *slot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[string(key)]
}

// View is one event loop's index over a Store: not safe for concurrent
// use.
type View struct {
	s      *Store
	m      map[string]*slot
	counts [numOutcomes]atomic.Uint64 // written by the owner only, read by Stats
}

// NewView returns an empty view over s.
func (s *Store) NewView() *View {
	v := &View{s: s, m: map[string]*slot{}}
	s.mu.Lock()
	s.views = append(s.views, v)
	s.mu.Unlock()
	return v
}

// Count counts outcome o. Owner only: it neither locks nor writes memory
// another loop writes.
func (v *View) Count(o Outcome) { v.counts[o].Store(v.counts[o].Load() + 1) }

// Lookup returns the variants stored under key (nil when none). A key
// the view knows costs a map read and an atomic load and allocates
// nothing; the returned slice is immutable.
func (v *View) Lookup(key []byte) []*Entry {
	sl := v.m[string(key)]
	if sl != nil {
		if p := sl.cur.Load(); p != nil {
			if !sl.visited.Load() {
				sl.visited.Store(true)
			}
			return *p
		}
		delete(v.m, sl.key)
	}
	if sl = v.s.lookupSlot(key); sl == nil {
		return nil
	}
	p := sl.cur.Load()
	if p == nil {
		return nil
	}
	if int64(len(v.m)) > 4*v.s.slots.Load()+1024 { // drop removed slots now and then
		for k, x := range v.m {
			if x.cur.Load() == nil {
				delete(v.m, k)
			}
		}
	}
	v.m[sl.key] = sl
	return *p
}

// Flight is one fetch of a key in progress, which other requests for
// the key wait for instead of going upstream (collapsing).
type Flight struct {
	key     string
	started time.Time
	mu      sync.Mutex
	done    bool
	waiters []func()
}

// Join returns the flight of key in progress, if it started less than
// timeout ago, with wake registered to run when it ends (leader false);
// otherwise it starts a new flight and returns it with leader true.
func (s *Store) Join(key []byte, timeout time.Duration, wake func()) (f *Flight, leader bool) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if f = s.flights[string(key)]; f != nil && now.Sub(f.started) < timeout {
		f.mu.Lock()
		f.waiters = append(f.waiters, wake)
		f.mu.Unlock()
		return f, false
	}
	f = &Flight{key: string(key), started: now}
	s.flights[f.key] = f
	return f, true
}

// Waiting returns how many requests wait for fetches in flight now.
func (s *Store) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.flights {
		f.mu.Lock()
		n += len(f.waiters)
		f.mu.Unlock()
	}
	return n
}

// Land ends flight f (its response was stored, or it failed): waiters
// are woken to look the key up again. Safe to call more than once.
func (s *Store) Land(f *Flight) {
	s.mu.Lock()
	if s.flights[f.key] == f {
		delete(s.flights, f.key)
	}
	s.mu.Unlock()
	f.mu.Lock()
	ws := f.waiters
	f.waiters, f.done = nil, true
	f.mu.Unlock()
	for _, w := range ws {
		w()
	}
}

// Done reports whether f ended.
func (f *Flight) Done() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done
}
