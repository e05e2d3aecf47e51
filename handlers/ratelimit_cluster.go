package handlers

import (
	"math/bits"
	"sync"
	"time"
)

// LimitStore is the shared store of cluster-scoped rate limits: the GCRA
// state of every key, kept for all instances by one server (Redis; the
// cluster package implements it).
type LimitStore interface {
	// Lease queues req for the store's own goroutine and returns at once,
	// false when its queue is full (the caller asks again later). The
	// answer comes through req.Sink.Leased on that goroutine. Safe for
	// concurrent use; it allocates nothing.
	Lease(req LeaseRequest) bool
	// Up reports whether the store answered its latest call. Safe for
	// concurrent use.
	Up() bool
	// Instances is how many instances share the store (configured or
	// last seen), at least 1. Safe for concurrent use.
	Instances() int
}

// LeaseRequest asks the store for up to Want requests of one key.
type LeaseRequest struct {
	Sink     LeaseSink
	Route    string // the route's label: part of the key's name in the store
	Key      uint64 // the key's hash, the same on every instance
	Slot     uint64 // the key's hash in the asking table (opaque to the store)
	Interval int64  // nanoseconds one request costs
	Tau      int64  // burst * interval
	Want     int
}

// LeaseSink takes the store's answers.
type LeaseSink interface {
	// Leased reports that the store granted granted (0..req.Want)
	// requests of req's key, and when fewer than asked, how long until
	// one more fits; err is the store's failure (nothing granted). Called
	// on the store's goroutine.
	Leased(req *LeaseRequest, granted int, wait time.Duration, err error)
}

// clusterLimit is a route's rate limit with scope cluster. The GCRA state
// of each key lives in the store, which every instance asks for leases:
// a lease of n requests moves the key's TAT there by n intervals at once
// (granted only as far as the limit allows), and the instance then spends
// them locally, one per request, without waiting on the store. When a
// key's lease falls to half of leaseSize a new one is asked for in the
// background, so a key under the limit never finds its lease empty on an
// instance it uses steadily.
//
// A key an instance has never leased (its first request there) is judged
// by the instance's share of the limit (rate/N, the local fallback) while
// its first lease is on the way; what it admits so is owed (the lease's
// tokens go negative) and asked for with the lease, so the store counts
// it.
//
// Error bound: every request admitted under a lease was counted by the
// store before it was spent, so over any time the instances together
// admit at most what one limiter would, plus what instances admitted on
// their share while a new key's first lease was on the way and the store
// then refused (at most burst/N+1 plus rate/N per round trip, per
// instance and key). They admit less than one limiter by at most the
// tokens leased but not yet spent: leaseSize per instance and key. With
// the default lease of a tenth of a second's worth (at most burst+1), a
// 50/s limit over three instances is off by at most 15 requests.
//
// While the store is unreachable (LimitStore.Up false), on_store_failure
// decides: local applies rate/N with the route's local table, allow lets
// every request pass, deny answers 429.
type clusterLimit struct {
	l       *limiter
	store   LimitStore
	route   string
	lease   int32 // leaseSize
	onFail  byte  // 'l', 'a' or 'd'
	shards  []clusterShard
	bucketM uint64
}

// clusterShard is one lock and its part of the key table.
type clusterShard struct {
	mu    sync.Mutex
	slots []clusterSlot
	_     [64 - 8 - 24]byte
}

// clusterSlot is one key's lease on this instance.
type clusterSlot struct {
	key     uint64 // the limiter's hash; 0 with last 0 = empty
	stable  uint64 // the hash every instance computes alike
	last    int64  // last use (limiter.now), for eviction
	retryAt int64  // with an empty lease: when the store may grant again
	tokens  int32  // requests leased and not spent; negative = owed
	leased  bool   // the store has answered for this key at least once
	pending bool   // a lease request is on the way
}

// leaseTime is how much of the rate one lease holds.
const leaseTime = 100 * time.Millisecond

func newClusterLimit(l *limiter, store LimitStore, route string) *clusterLimit {
	rl := l.conf
	n := max(1, min(int64(rl.Burst)+1, int64(leaseTime)/int64(rl.Interval)))
	c := &clusterLimit{l: l, store: store, route: route, lease: int32(n), onFail: rl.OnFailure[0]}
	slots := 1 << bits.Len(uint(max(rl.MaxKeys, limitShards*limitWays)-1))
	perShard := slots / limitShards
	c.shards = make([]clusterShard, limitShards)
	for i := range c.shards {
		c.shards[i].slots = make([]clusterSlot, perShard)
	}
	c.bucketM = uint64(perShard/limitWays - 1)
	return c
}

// bucket returns key's shard and the slots of its bucket.
func (c *clusterLimit) bucket(key uint64) (*clusterShard, int) {
	sh := &c.shards[key&(limitShards-1)]
	b := int(((key >> c.l.bucketSh) & c.bucketM) * limitWays)
	return sh, b
}

// allow takes one request of key at now. stable is the key's hash on
// every instance. Safe for concurrent use; allocates nothing; never waits
// on the store.
func (c *clusterLimit) allow(key, stable uint64, now int64) (bool, time.Duration) {
	if !c.store.Up() {
		return c.fallback(key, now)
	}
	sh, b := c.bucket(key)
	sh.mu.Lock()
	s := c.slot(sh.slots[b:b+limitWays:b+limitWays], key, stable)
	s.last = now
	switch {
	case s.tokens > 0:
		s.tokens--
		if s.tokens <= c.lease/2 && !s.pending {
			c.ask(s)
		}
		sh.mu.Unlock()
		return true, 0
	case !s.leased:
		ok, wait := c.l.allowAt(key, now, c.l.interval*int64(c.store.Instances()), c.l.tau)
		if ok {
			s.tokens--
		}
		if !s.pending {
			c.ask(s)
		}
		sh.mu.Unlock()
		return ok, wait
	}
	if !s.pending && now >= s.retryAt {
		c.ask(s)
	}
	wait := max(s.retryAt-now, c.l.interval)
	sh.mu.Unlock()
	return false, time.Duration(wait)
}

// slot finds key's slot in a bucket, or takes the least recently used
// one for it.
func (c *clusterLimit) slot(slots []clusterSlot, key, stable uint64) *clusterSlot {
	victim := 0
	for i := range slots {
		if slots[i].last != 0 && slots[i].key == key && slots[i].stable == stable {
			return &slots[i]
		}
		if slots[i].last < slots[victim].last {
			victim = i
		}
	}
	slots[victim] = clusterSlot{key: key, stable: stable}
	return &slots[victim]
}

// ask queues a lease request topping s up to a full lease. Called with
// s's shard locked.
func (c *clusterLimit) ask(s *clusterSlot) {
	s.pending = c.store.Lease(LeaseRequest{
		Sink: c, Route: c.route, Key: s.stable, Slot: s.key,
		Interval: c.l.interval, Tau: c.l.tau, Want: int(c.lease - s.tokens),
	})
}

// Leased implements LeaseSink.
func (c *clusterLimit) Leased(req *LeaseRequest, granted int, wait time.Duration, err error) {
	now := c.l.now()
	sh, b := c.bucket(req.Slot)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	slots := sh.slots[b : b+limitWays : b+limitWays]
	for i := range slots {
		s := &slots[i]
		if s.last == 0 || s.key != req.Slot || s.stable != req.Key {
			continue
		}
		s.pending = false
		if err != nil {
			s.retryAt = now
			return
		}
		s.leased = true
		s.tokens += int32(granted)
		s.retryAt = 0
		if granted < req.Want {
			s.retryAt = now + int64(wait)
		}
		return
	}
}

// fallback applies on_store_failure while the store is unreachable.
func (c *clusterLimit) fallback(key uint64, now int64) (bool, time.Duration) {
	switch c.onFail {
	case 'a':
		return true, 0
	case 'd':
		return false, time.Second
	}
	return c.l.allowAt(key, now, c.l.interval*int64(c.store.Instances()), c.l.tau)
}

// WithLimitStore gives Build the shared store of rate limits with scope
// cluster. Without it a config with such a limit fails to build.
func WithLimitStore(s LimitStore) Option {
	return func(o *buildOptions) { o.limits = s }
}

// OfflineLimitStore is a stand-in for the shared store where none is
// reached (gale validate, gale route): it grants nothing and is never up,
// so cluster-scoped limits apply their on_store_failure with instances
// as N.
func OfflineLimitStore(instances int) LimitStore { return offlineStore(max(1, instances)) }

type offlineStore int

func (offlineStore) Lease(LeaseRequest) bool { return false }
func (offlineStore) Up() bool                { return false }
func (s offlineStore) Instances() int        { return int(s) }
