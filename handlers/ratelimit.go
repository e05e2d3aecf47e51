package handlers

import (
	"hash/maphash"
	"math/bits"
	"strconv"
	"sync"
	"time"

	"gale/config"
)

// limiter is a route's rate limit: the generic cell rate algorithm (GCRA,
// the virtual-scheduling form of ITU-T I.371's leaky bucket), which keeps
// one number per key, the theoretical arrival time (TAT) of its next
// request. A request at time now is allowed when TAT - now <= tau, and
// then moves TAT to max(TAT, now) + interval; so Burst+1 requests pass at
// once and then one per interval, nginx's limit_req with burst and nodelay.
// Nothing is delayed: a request over the limit is answered 429 at once.
//
// Keys (a hash of the client address or of a header value) live in a table
// of fixed size, split into shards with a lock each, so that the event
// loops (SO_REUSEPORT spreads one client's connections over all of them)
// share one limit without a lock common to every request: two requests
// contend only when their keys fall into the same shard. Each shard is
// set-associative: a key's slot is one of limitWays in its bucket. When
// the bucket is full, the slot whose TAT is earliest is taken, which
// loses nothing when that TAT has passed (such a key is back at a full
// burst anyway) and otherwise forgets the key nearest to that state.
//
// A limiter is safe for concurrent use and allocates nothing per request.
type limiter struct {
	interval int64 // nanoseconds one request costs
	tau      int64 // burst * interval: how far TAT may run ahead of now
	header   []byte
	v6bits   int
	seed     maphash.Seed
	shards   []limitShard
	shardMsk uint64
	bucketSh uint   // bits of the hash above the shard index
	bucketMk uint64 // buckets per shard - 1
	epoch    time.Time
	conf     *config.RateLimit
	cluster  *clusterLimit // scope cluster: the shared limit; nil = local
}

// limitWays is the associativity of a shard's buckets.
const limitWays = 8

// limitShards is the number of shards: enough that loops on many cores
// rarely meet on one lock, few enough that a small table keeps whole
// buckets per shard.
const limitShards = 64

// limitShard is one lock and its part of the table, padded so that two
// shards' locks never share a cache line.
type limitShard struct {
	mu    sync.Mutex
	slots []limitSlot
	_     [64 - 8 - 24]byte
}

// limitSlot is a key's hash and its TAT (0: empty).
type limitSlot struct {
	key uint64
	tat int64
}

func newLimiter(rl *config.RateLimit) *limiter {
	l := &limiter{
		interval: int64(rl.Interval),
		tau:      int64(rl.Interval) * int64(rl.Burst),
		v6bits:   rl.IPv6Prefix,
		seed:     maphash.MakeSeed(),
		epoch:    time.Now(),
		conf:     rl,
	}
	if rl.Header != "" {
		l.header = []byte(rl.Header)
	}
	slots := 1 << bits.Len(uint(max(rl.MaxKeys, limitShards*limitWays)-1)) // a power of two
	perShard := slots / limitShards
	l.shards = make([]limitShard, limitShards)
	for i := range l.shards {
		l.shards[i].slots = make([]limitSlot, perShard)
	}
	l.shardMsk = limitShards - 1
	l.bucketSh = uint(bits.TrailingZeros(limitShards))
	l.bucketMk = uint64(perShard/limitWays - 1)
	return l
}

// now is the limiter's clock: monotonic nanoseconds, never 0.
func (l *limiter) now() int64 { return int64(time.Since(l.epoch)) + 1 }

// key returns the hash of the request's key: the value of the configured
// header when the request sends it, else the client address (an IPv6
// address masked to the configured prefix).
func (l *limiter) key(c *Ctx) uint64 {
	var buf [17]byte
	b, header := l.keyBytes(c, &buf)
	if header {
		return maphash.Bytes(l.seed, b) ^ headerKeySpace
	}
	return maphash.Bytes(l.seed, b)
}

// keys returns key(c) and the key's stable hash: the same on every
// instance (FNV-1a, with the header and address spaces apart), for the
// key's name in a shared store.
func (l *limiter) keys(c *Ctx) (uint64, uint64) {
	var buf [17]byte
	b, header := l.keyBytes(c, &buf)
	h := uint64(14695981039346656037)
	if header {
		h ^= 'h'
		h *= 1099511628211
	}
	for _, x := range b {
		h ^= uint64(x)
		h *= 1099511628211
	}
	if header {
		return maphash.Bytes(l.seed, b) ^ headerKeySpace, h
	}
	return maphash.Bytes(l.seed, b), h
}

// keyBytes returns the bytes a request is keyed by: the configured
// header's value (aliasing the request; header true), or the client
// address's, tagged with its family, in buf.
func (l *limiter) keyBytes(c *Ctx, buf *[17]byte) ([]byte, bool) {
	if l.header != nil {
		if v, ok := firstHeader(c.Req, l.header); ok {
			return v, true
		}
	}
	a := ClientAddr(c)
	b := buf[:1]
	switch {
	case a.Is4():
		b[0] = '4'
		a4 := a.As4()
		b = append(b, a4[:]...)
	case a.Is6():
		b[0] = '6'
		if p, err := a.Prefix(l.v6bits); err == nil {
			a = p.Addr()
		}
		a16 := a.As16()
		b = append(b, a16[:]...)
	default:
		b[0] = '?'
	}
	return b, false
}

// allow takes one request of key at time now (limiter.now). It reports
// whether the request may pass, and when it may not, how long until one
// would.
func (l *limiter) allow(key uint64, now int64) (bool, time.Duration) {
	return l.allowAt(key, now, l.interval, l.tau)
}

// allowAt is allow with another interval and tau: a share of the limit
// (clusterLimit's local fallback).
func (l *limiter) allowAt(key uint64, now, interval, tau int64) (bool, time.Duration) {
	sh := &l.shards[key&l.shardMsk]
	b := int(((key >> l.bucketSh) & l.bucketMk) * limitWays)
	sh.mu.Lock()
	slots := sh.slots[b : b+limitWays : b+limitWays]
	at, victim := -1, 0
	for i := range slots {
		if slots[i].tat != 0 && slots[i].key == key {
			at = i
			break
		}
		if slots[i].tat < slots[victim].tat {
			victim = i
		}
	}
	if at < 0 {
		at = victim
		slots[at] = limitSlot{key: key}
	}
	tat := max(slots[at].tat, now)
	if tat-now > tau {
		sh.mu.Unlock()
		return false, time.Duration(tat - now - tau)
	}
	slots[at].tat = tat + interval
	sh.mu.Unlock()
	return true, 0
}

// headerKeySpace sets header keys apart from address keys, whose hashed
// bytes start with a tag of their own.
const headerKeySpace = 0x9e3779b97f4a7c15

// limit answers 429 with Retry-After and reports false when c's request
// is over the limit.
func (l *limiter) limit(c *Ctx) bool {
	var ok bool
	var wait time.Duration
	if l.cluster != nil {
		key, stable := l.keys(c)
		ok, wait = l.cluster.allow(key, stable, l.now())
	} else {
		ok, wait = l.allow(l.key(c), l.now())
	}
	if ok {
		return true
	}
	c.Error(429)
	secs := int64((wait + time.Second - 1) / time.Second)
	mark := len(c.Scratch)
	c.Scratch = strconv.AppendInt(c.Scratch, max(secs, 1), 10)
	c.Resp.Add(hdrRetryAfter, c.scratchSince(mark))
	return false
}

var hdrRetryAfter = []byte("Retry-After")
