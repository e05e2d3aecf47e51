package handlers

import (
	"math"
	"sync"
	"time"

	"gale/cache"
)

// CacheAccess is what static routes ask of the exchange a request belongs
// to (Ctx.Cache): the event loop's view of the file cache, and a way to
// wait for a file that is being read off the loop. It is the exchange's
// view, not the connection's: each protocol engine implements it (the
// HTTP/1.1 connection for its one exchange at a time, an HTTP/2 engine per
// stream), and every method runs on the event loop that owns the exchange.
//
// Waiting is the exchange's continuation (see Pending): when a load is
// pending (cache.ErrPending), the static handler answers with a Pending
// whose Resume, once CacheReady says the load finished, serves the request
// again; that time the handler finds the file in the cache, or, for an
// entry the cache did not keep, takes the stored result with CacheLoaded.
type CacheAccess interface {
	// CacheView returns the event loop's view over c, or nil when the
	// loop has none for that cache (then the handler uses a shared view
	// under a lock).
	CacheView(c *cache.Cache) *cache.View

	// CacheDone returns the exchange's completion callback for a load of
	// key (copied) that may return cache.ErrPending: it stores the
	// result and wakes the exchange. It may run on any goroutine. The
	// same function value is returned every time.
	CacheDone(key []byte) cache.Done

	// CacheReady reports whether the CacheDone callback has stored a
	// result that CacheLoaded has not taken yet.
	CacheReady() bool

	// CacheLoaded returns the result stored by the CacheDone callback if
	// it is the result of a load of key (ok true), and forgets it.
	CacheLoaded(key []byte) (e *cache.Entry, err error, ok bool)
}

// sharedView is a static route's view of the cache for requests whose
// Ctx.Cache is nil (tests and tools outside the server): one
// view under a mutex, with loads done synchronously.
type sharedView struct {
	mu sync.Mutex
	v  *cache.View
}

// load looks key up and loads it on a miss, waiting for a load in flight
// elsewhere. It blocks: never call it on an event loop.
func (s *sharedView) load(c *cache.Cache, r *cache.Request) (*cache.Entry, error) {
	s.mu.Lock()
	if s.v == nil || s.v.Cache() != c {
		s.v = c.NewView()
	}
	if e, ok := s.v.Lookup(r.Key); ok {
		s.mu.Unlock()
		return e, nil
	}
	type result struct {
		e   *cache.Entry
		err error
	}
	ch := make(chan result, 1)
	r.SyncMax = math.MaxInt64
	r.Done = func(e *cache.Entry, err error) { ch <- result{e, err} }
	e, err := s.v.Load(r)
	s.mu.Unlock()
	if err == cache.ErrPending {
		select {
		case res := <-ch:
			return res.e, res.err
		case <-time.After(30 * time.Second):
			return nil, cache.ErrBusy
		}
	}
	return e, err
}
