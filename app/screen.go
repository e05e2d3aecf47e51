package app

import (
	"hash/maphash"
	"net/netip"
	"sync"
)

// Screening at accept: a listener's deny list and its per-address
// connection limit (max_conns_per_address, nginx's limit_conn), applied
// before a connection's first byte is read, or, on a proxy_protocol
// listener, right after the PROXY header named the client. A refused
// connection is closed unanswered and counted.

// screen reports whether the connection from ap may go on, and holds its
// place in the per-address count when the listener limits it.
func (s *Server) screen(cs *conn, ap netip.AddrPort) bool {
	li := cs.li
	if li == nil || len(li.deny) == 0 && li.maxPerAddr == 0 {
		return true
	}
	a := ap.Addr().Unmap()
	for _, p := range li.deny {
		if p.Contains(a) {
			cs.loop.Stats.Screened.Add(1)
			return false
		}
	}
	if li.maxPerAddr > 0 {
		key := addrKey(a)
		if !s.perAddr.acquire(key, li.maxPerAddr) {
			cs.loop.Stats.Screened.Add(1)
			return false
		}
		cs.addrKey, cs.addrHeld = key, true
	}
	return true
}

// unscreen gives back a closed connection's place in the per-address
// count.
func (s *Server) unscreen(cs *conn) {
	if cs.addrHeld {
		cs.addrHeld = false
		s.perAddr.release(cs.addrKey)
	}
}

// addrKey is what the per-address limits count by: an IPv4 address (also
// as an IPv4-mapped IPv6 address, which a dual-stack listener reports),
// or an IPv6 address's /64 (one host can hold a whole /64).
func addrKey(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// addrCounts counts the connections open per address, shared by the
// loops (SO_REUSEPORT spreads one client's connections over them) in
// shards with a lock each; an address leaves its shard's map with its
// last connection, so the maps hold at most the open connections.
type addrCounts struct {
	seed   maphash.Seed
	shards [addrShards]addrShard
}

const addrShards = 32

type addrShard struct {
	mu sync.Mutex
	n  map[netip.Addr]int32
	_  [40]byte // a cache line of its own
}

func newAddrCounts() *addrCounts {
	ac := &addrCounts{seed: maphash.MakeSeed()}
	for i := range ac.shards {
		ac.shards[i].n = map[netip.Addr]int32{}
	}
	return ac
}

func (ac *addrCounts) shard(a netip.Addr) *addrShard {
	b := a.As16()
	return &ac.shards[maphash.Bytes(ac.seed, b[:])%addrShards]
}

// acquire counts one more connection of a, unless it holds max already.
func (ac *addrCounts) acquire(a netip.Addr, max int) bool {
	s := ac.shard(a)
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(s.n[a]) >= max {
		return false
	}
	s.n[a]++
	return true
}

// release counts one connection of a fewer.
func (ac *addrCounts) release(a netip.Addr) {
	s := ac.shard(a)
	s.mu.Lock()
	if s.n[a] <= 1 {
		delete(s.n, a)
	} else {
		s.n[a]--
	}
	s.mu.Unlock()
}
