package wire

import (
	"hash/maphash"
	"net/netip"
	"sync"
)

// AddrKey is what per-address limits count a client by: an IPv4 address
// (also as an IPv4-mapped IPv6 address, which a dual-stack listener
// reports), or an IPv6 address's /64 (one host can hold a whole /64).
func AddrKey(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// AddrCounts counts what each address key holds (connections, handshake
// claims), shared by the loops (SO_REUSEPORT spreads one client's
// connections over them) in shards with a lock each, held for a map
// update. A key leaves its shard's map with its last count, so the maps
// hold at most what is held. Safe for concurrent use.
type AddrCounts struct {
	addrMap[int64]
}

// NewAddrCounts returns empty counts.
func NewAddrCounts() *AddrCounts {
	c := &AddrCounts{}
	c.init()
	return c
}

// addrMap is a map by address key shared by the loops, in shards with a
// lock each, held for a map update.
type addrMap[V any] struct {
	seed   maphash.Seed
	shards [addrShards]addrShard[V]
}

const addrShards = 64

type addrShard[V any] struct {
	mu sync.Mutex
	m  map[netip.Addr]V
	_  [48]byte // a shard per cache line
}

func (a *addrMap[V]) init() {
	a.seed = maphash.MakeSeed()
	for i := range a.shards {
		a.shards[i].m = map[netip.Addr]V{}
	}
}

// shard returns the shard of key; lock it to use its map.
func (a *addrMap[V]) shard(key netip.Addr) *addrShard[V] {
	b := key.As16()
	return &a.shards[maphash.Bytes(a.seed, b[:])%addrShards]
}

// Acquire counts one more for key, unless it holds max already.
func (c *AddrCounts) Acquire(key netip.Addr, max int64) bool {
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[key] >= max {
		return false
	}
	s.m[key]++
	return true
}

// Release counts one fewer for key.
func (c *AddrCounts) Release(key netip.Addr) {
	s := c.shard(key)
	s.mu.Lock()
	if s.m[key] <= 1 {
		delete(s.m, key)
	} else {
		s.m[key]--
	}
	s.mu.Unlock()
}

// Keys is how many keys hold something.
func (c *AddrCounts) Keys() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
