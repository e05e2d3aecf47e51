package cache

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// viewSweepMin is the view size below which dead slots are only dropped
// when looked up.
const viewSweepMin = 1024

// View is one event loop's index over the shared cache: a plain map from
// key to slot, owned by that loop. A hit reads only this map and atomics
// of the slot and entry, so loops never contend on a lock; slots and
// entries are shared, and a new version installed by any goroutine is seen
// by every view at once through the slot.
//
// A View is not safe for concurrent use: each event loop (or goroutine)
// creates its own with Cache.NewView and uses it only from there.
type View struct {
	c       *Cache
	m       map[string]*node // key -> slot; may hold removed slots until swept
	sweepAt int              // sweep removed slots when the map reaches this size
	hits    uint64           // lookups that found an entry (negative ones included)
	misses  uint64           // lookups that found nothing, or found it changed or expired
}

// NewView returns an empty view over c for one event loop.
func (c *Cache) NewView() *View {
	return &View{c: c, m: make(map[string]*node), sweepAt: viewSweepMin}
}

// Cache returns the cache v looks into.
func (v *View) Cache() *Cache { return v.c }

// Stats returns the view's hit and miss counts. Owner only.
func (v *View) Stats() (hits, misses uint64) { return v.hits, v.misses }

// Lookup returns the current entry for key and true, or nil and false on a
// miss: not cached, expired (negative entries), or found changed by a due
// revalidation. On a miss, call Load. key is not retained.
//
// A hit allocates nothing, makes no system call and takes no lock shared
// with other views (the first lookup of a key in a view takes the store's
// lock once). When revalidation is due (at most once per
// Options.Revalidate per entry, across all views), the one caller that
// claims it stats the file on its own goroutine (one stat, two small
// allocations); other callers meanwhile get the current version. A
// deleted file turns into a KindNotFound entry right away; a changed one
// makes Lookup miss, in every view, until the new version is loaded. If
// the entry's compression could not be queued earlier (full queue), a hit
// retries with a non-blocking channel send.
//
// The entry is immutable and may be kept after the call (its bytes stay
// valid); pin it if it leaves the goroutine for long (Entry.Pin).
func (v *View) Lookup(key []byte) (*Entry, bool) {
	n := v.m[string(key)]
	var e *Entry
	if n != nil {
		e = n.cur.Load()
	}
	if e == nil {
		if n != nil {
			delete(v.m, n.key) // the slot was removed
		}
		if n = v.c.lookupNode(key); n == nil {
			v.misses++
			return nil, false
		}
		if e = n.cur.Load(); e == nil {
			v.misses++
			return nil, false
		}
		v.add(n)
	}
	if !n.visited.Load() {
		n.visited.Store(true)
	}
	if now := v.c.now(); now >= e.checkAt.Load() {
		var ok bool
		if e, ok = v.c.revalidate(n, e, now); !ok {
			v.misses++
			return nil, false
		}
	}
	if e.varWork.Load() == varIdle {
		v.c.requestVariants(e)
	}
	v.hits++
	return e, true
}

// Load reads what key's path holds now and caches it (see Cache.Load),
// and remembers the slot in this view. Call it after Lookup missed.
func (v *View) Load(r *Request) (*Entry, error) {
	e, n, err := v.c.load(r)
	if n != nil {
		v.add(n)
	}
	return e, err
}

func (v *View) add(n *node) {
	if len(v.m) >= v.sweepAt {
		for k, x := range v.m {
			if x.cur.Load() == nil {
				delete(v.m, k)
			}
		}
		v.sweepAt = max(viewSweepMin, 2*len(v.m))
	}
	v.m[n.key] = n
}

// revalidate handles a due entry: a negative one has expired; a file or
// directory is stat'ed by the one caller whose CAS on checkAt wins.
func (c *Cache) revalidate(n *node, e *Entry, now int64) (*Entry, bool) {
	due := e.checkAt.Load()
	if due == staleMark || e.Kind.Negative() {
		return nil, false
	}
	if now < due || !e.checkAt.CompareAndSwap(due, now+c.revalEvery) {
		return e, true // another caller revalidated, or is doing it: serve this version meanwhile
	}
	c.revalidations.Add(1)
	fi, err := os.Stat(e.Path)
	if err == nil {
		if fileIDOf(fi) == e.id {
			return e, true
		}
		c.changes.Add(1)
		c.markStale(e)
		return nil, false
	}
	c.changes.Add(1)
	kind := negativeKind(err)
	if kind == 0 {
		c.markStale(e) // an I/O error: let Load report it
		return nil, false
	}
	neg := c.newNegative(n.key, e.Path, kind, now)
	if c.negTTL > 0 && c.replaceIfCurrent(n, e, neg) {
		return neg, true
	}
	c.markStale(e)
	return neg, true
}

// negativeKind maps an open or stat error to the negative entry that
// records it, or 0 when the error is not about the path itself.
func negativeKind(err error) Kind {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR),
		errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.ELOOP):
		return KindNotFound
	case errors.Is(err, fs.ErrPermission):
		return KindDenied
	}
	return 0
}
