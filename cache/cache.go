package cache

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"gale/config"
	"gale/fds"
)

// Sentinel errors.
var (
	// ErrPending says the file is being loaded off the calling goroutine;
	// Request.Done will be called with the result.
	ErrPending = errors.New("cache: load pending")
	// ErrBusy says the worker queue is full: serve the file without the
	// cache this time.
	ErrBusy = errors.New("cache: workers busy")
	// ErrClosed says the cache was closed.
	ErrClosed = errors.New("cache: closed")
)

// Options configure a Cache. Zero fields take the defaults documented on
// each field.
type Options struct {
	MaxBytes     int64         // byte budget over everything held; 0 = 256 MiB; < 0 = cache nothing
	MaxFileBytes int64         // largest file kept in memory; 0 = 1 MiB
	Revalidate   time.Duration // stat a cached path at most this often; 0 = 1s; < 0 = on every lookup
	NegativeTTL  time.Duration // how long a negative result is kept; 0 = 1s; < 0 = not kept
	Workers      int           // loader and compressor goroutines; 0 = GOMAXPROCS/2, at least 1, at most 4 (each holds about 20 MiB of compressor state while compressing)
	QueueLen     int           // pending jobs per queue (loads, compression) before ErrBusy; 0 = 1024
	Budget       *fds.Budget   // counts the files kept open while their load waits in the queue; nil counts nothing

	// Now returns a monotonic clock in nanoseconds. nil: the process's
	// monotonic clock (no system call on Linux, via the vDSO). Tests set it.
	Now func() int64

	loadHook func() // tests: runs at the start of every worker load
}

// FromConfig returns Options for the configured cache.
func FromConfig(c config.Cache) Options {
	return Options{
		MaxBytes:     c.MaxBytes,
		MaxFileBytes: c.MaxFileBytes,
		Revalidate:   c.Revalidate,
		NegativeTTL:  c.NegativeTTL,
	}
}

// Stats are counters of a Cache, summed when read.
type Stats struct {
	Entries       int                  // live slots (files, directories, negative results)
	Bytes         int64                // bytes charged to the budget, including retired versions still pinned; may pass MaxBytes for the moment an insertion takes to evict
	PinnedRetired int64                // of Bytes, those of retired versions still pinned
	MaxBytes      int64                // the budget
	Loads         uint64               // files read from disk (and directory or negative results recorded)
	Evictions     uint64               // slots evicted to stay within the budget
	Revalidations uint64               // stats done because revalidation was due
	Changes       uint64               // revalidations that found a changed, deleted or replaced file
	Sidecars      uint64               // precompressed sidecars read
	Compressions  [numEncodings]uint64 // bodies compressed on the fly, per encoding
	Uncached      uint64               // loads served without being kept (larger than the budget, unstable while read)
	Pending       int64                // jobs (loads, compressions) queued or running; 0 once the workers are idle
}

// node is a cache slot: one key, its current Entry, and its place in the
// SIEVE queue. Views keep pointers to nodes (not to entries), so a new
// version is seen by every view at once through cur.
type node struct {
	c       *Cache
	key     string
	cur     atomic.Pointer[Entry] // the current version; nil once the slot is removed
	visited atomic.Bool           // SIEVE's bit: set by hits, cleared by the hand
	prev    *node                 // toward the head (newer); guarded by Cache.mu
	next    *node                 // toward the tail (older); guarded by Cache.mu
}

// flight is a load in progress for one key; later loads of the key wait
// for it instead of reading the file again.
type flight struct {
	waiters []Done
}

// Cache is the shared part of the file cache: slots, the byte budget,
// eviction, in-flight loads and the worker pool. It is safe for concurrent
// use. Event loops look entries up through a View each; see the package
// documentation.
type Cache struct {
	maxBytes   int64
	maxFile    int64
	revalEvery int64 // ns
	negTTL     int64 // ns
	clock      func() int64
	loadHook   func()

	mu      sync.Mutex
	nodes   map[string]*node
	head    *node // newest
	tail    *node // oldest
	hand    *node // SIEVE hand; nil = start at the tail
	flights map[string]*flight
	closed  bool

	used          atomic.Int64 // bytes charged (live slots + pinned retired versions)
	pinnedRetired atomic.Int64
	live          atomic.Int64 // slots

	loads, evictions, revalidations, changes, sidecars, uncached atomic.Uint64
	compressions                                                 [numEncodings]atomic.Uint64

	budget  *fds.Budget // descriptors of the files queued loads hold
	loadq   chan *loadJob
	varq    chan *Entry
	quit    chan struct{}
	wg      sync.WaitGroup
	pending atomic.Int64 // jobs submitted and not finished
}

var monoBase = time.Now()

func monotonic() int64 { return int64(time.Since(monoBase)) }

// New starts a Cache with its worker goroutines. Close stops them.
func New(o Options) *Cache {
	if o.MaxBytes == 0 {
		o.MaxBytes = 256 << 20
	}
	if o.MaxBytes < 0 {
		o.MaxBytes = 0
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 1 << 20
	}
	if o.Revalidate == 0 {
		o.Revalidate = time.Second
	}
	if o.NegativeTTL == 0 {
		o.NegativeTTL = time.Second
	}
	if o.Workers <= 0 {
		o.Workers = min(4, max(1, runtime.GOMAXPROCS(0)/2))
	}
	if o.QueueLen <= 0 {
		o.QueueLen = 1024
	}
	if o.Now == nil {
		o.Now = monotonic
	}
	c := &Cache{
		maxBytes:   o.MaxBytes,
		maxFile:    o.MaxFileBytes,
		revalEvery: max(int64(o.Revalidate), 0),
		negTTL:     max(int64(o.NegativeTTL), 0),
		clock:      o.Now,
		loadHook:   o.loadHook,
		budget:     o.Budget,
		nodes:      make(map[string]*node),
		flights:    make(map[string]*flight),
		loadq:      make(chan *loadJob, o.QueueLen),
		varq:       make(chan *Entry, o.QueueLen),
		quit:       make(chan struct{}),
	}
	c.wg.Add(o.Workers)
	for range o.Workers {
		go c.work()
	}
	return c
}

// Close stops the workers. Loads still queued finish with ErrClosed
// (their Done is called); later loads return ErrClosed. Entries already
// handed out stay valid. Close waits for running jobs to finish.
func (c *Cache) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	close(c.quit)
	c.wg.Wait()
	for {
		select {
		case j := <-c.loadq:
			c.dropFile(j)
			c.finish(j.key, nil, ErrClosed, -1)
			c.pending.Add(-1)
		case <-c.varq:
			c.pending.Add(-1)
		default:
			return
		}
	}
}

// Purge removes every slot, as if all were evicted: entries already handed
// out stay valid (and pinned ones stay counted until released). Call it
// when the profiles entries were rendered with change (a config reload),
// since a slot keeps the profile it was loaded with. Safe for concurrent
// use; views notice on their next lookup of each key.
func (c *Cache) Purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n := c.tail; n != nil; {
		prev := n.prev
		c.removeNolock(n)
		n = prev
	}
	c.hand = nil
}

// PurgeIf removes the slots whose key match accepts, as Purge does for
// all, and returns how many it removed. match runs under the cache's
// lock: it must be quick and must not call into the cache. Safe for
// concurrent use.
func (c *Cache) PurgeIf(match func(key string) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for s := c.tail; s != nil; {
		prev := s.prev
		if match(s.key) {
			c.removeNolock(s)
			n++
		}
		s = prev
	}
	return n
}

// Stats returns the cache's counters. Safe for concurrent use.
func (c *Cache) Stats() Stats {
	s := Stats{
		Entries:       int(c.live.Load()),
		Bytes:         c.used.Load(),
		PinnedRetired: c.pinnedRetired.Load(),
		MaxBytes:      c.maxBytes,
		Loads:         c.loads.Load(),
		Evictions:     c.evictions.Load(),
		Revalidations: c.revalidations.Load(),
		Changes:       c.changes.Load(),
		Sidecars:      c.sidecars.Load(),
		Uncached:      c.uncached.Load(),
		Pending:       c.pending.Load(),
	}
	for i := range s.Compressions {
		s.Compressions[i] = c.compressions[i].Load()
	}
	return s
}

func (c *Cache) now() int64 { return c.clock() }

// lookupNode returns the slot for key, or nil. It takes the lock: views
// call it only when their own index has no live slot for the key.
func (c *Cache) lookupNode(key []byte) *node {
	c.mu.Lock()
	n := c.nodes[string(key)]
	c.mu.Unlock()
	return n
}

// install makes e the current version of key, retiring the previous one,
// and evicts other slots until the budget holds. It returns the slot, or
// nil when e cannot be kept (then e is detached).
func (c *Cache) install(key string, e *Entry) *node {
	charge := e.charge.Load()
	if charge > c.maxBytes {
		c.mu.Lock()
		if n := c.nodes[key]; n != nil {
			c.removeNolock(n) // its version is stale: do not keep serving it
		}
		c.mu.Unlock()
		c.detach(e)
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[key]
	if n == nil {
		n = &node{c: c, key: key}
		c.nodes[key] = n
		c.pushHeadNolock(n)
		c.live.Add(1)
	}
	e.node = n
	c.used.Add(charge)
	if old := n.cur.Swap(e); old != nil {
		c.retireNolock(old)
	}
	if !c.evictNolock(n) {
		// Pinned retired versions hold the budget: this one cannot stay.
		c.removeNolock(n)
		c.uncached.Add(1)
		return nil
	}
	return n
}

// detach marks e as never counted: Pin and Release cost nothing.
func (c *Cache) detach(e *Entry) {
	e.node = nil
	e.pins.Or(retiredBit)
	e.acct.Store(acctFreed)
	c.uncached.Add(1)
}

// replaceIfCurrent installs e in n when n still holds old, and reports
// whether it did.
func (c *Cache) replaceIfCurrent(n *node, old, e *Entry) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n.cur.Load() != old {
		return false
	}
	e.node = n
	c.used.Add(e.charge.Load())
	n.cur.Store(e)
	c.retireNolock(old)
	if !c.evictNolock(n) {
		c.removeNolock(n)
	}
	return true
}

// evictNolock evicts slots other than keep until the budget holds. It
// reports whether it does.
func (c *Cache) evictNolock(keep *node) bool {
	for c.used.Load() > c.maxBytes {
		if !c.evictOneNolock(keep) {
			return false
		}
	}
	return true
}

// evictOneNolock runs SIEVE's hand: from the oldest slot toward the
// newest, a visited slot loses its bit and survives, the first unvisited
// one is evicted. The hand stays where it stopped.
func (c *Cache) evictOneNolock(keep *node) bool {
	o := c.hand
	for steps := 2*c.live.Load() + 2; steps > 0; steps-- {
		if o == nil {
			o = c.tail
			if o == nil {
				return false
			}
		}
		if o == keep {
			o = o.prev
			continue
		}
		if o.visited.Load() {
			o.visited.Store(false)
			o = o.prev
			continue
		}
		c.hand = o.prev
		c.removeNolock(o)
		c.evictions.Add(1)
		return true
	}
	return false
}

// removeNolock unlinks n and retires its version.
func (c *Cache) removeNolock(n *node) {
	if c.nodes[n.key] != n {
		return
	}
	delete(c.nodes, n.key)
	if c.hand == n {
		c.hand = n.prev
	}
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		c.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		c.tail = n.prev
	}
	n.prev, n.next = nil, nil
	c.live.Add(-1)
	if old := n.cur.Swap(nil); old != nil {
		c.retireNolock(old)
	}
}

func (c *Cache) pushHeadNolock(n *node) {
	n.next = c.head
	if c.head != nil {
		c.head.prev = n
	}
	c.head = n
	if c.tail == nil {
		c.tail = n
	}
}

// retireNolock takes e out of service. Its charge leaves the budget now if
// nobody pins it, else when the last pin is released. Exactly one of this
// function and freeRetired gives the charge back (the acct CAS decides).
func (c *Cache) retireNolock(e *Entry) {
	old := e.pins.Or(retiredBit)
	if old&retiredBit != 0 {
		return
	}
	ch := e.charge.Load()
	if old>>1 == 0 {
		if e.acct.CompareAndSwap(acctLive, acctFreed) {
			c.used.Add(-ch)
		}
		return
	}
	if e.acct.CompareAndSwap(acctLive, acctPinned) {
		c.pinnedRetired.Add(ch)
	}
}

// freeRetired runs when the last pin of a retired entry is released.
func (c *Cache) freeRetired(e *Entry) {
	ch := e.charge.Load()
	if e.acct.CompareAndSwap(acctLive, acctFreed) {
		// Retirement is under way and saw a pin: it will not record one.
		c.used.Add(-ch)
		return
	}
	if e.acct.CompareAndSwap(acctPinned, acctFreed) {
		c.used.Add(-ch)
		c.pinnedRetired.Add(-ch)
	}
}

// markStale records that revalidation found e's file changed: every view
// misses on it from now on, until a load installs the new version.
func (c *Cache) markStale(e *Entry) { e.checkAt.Store(staleMark) }

// staleMark is a checkAt value that is always due and says "changed".
const staleMark = -1 << 63
