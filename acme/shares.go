package acme

import (
	"net/netip"
	"sync"
)

// shares bounds work in flight that clients start: at most total pieces
// at once, and at most per of them for one client address, so that one
// client cannot take them all. Safe for concurrent use; never used on an
// event loop's hot path (HTTP-01 lookups, on-demand questions).
type shares struct {
	total, per int

	mu sync.Mutex
	n  int                // in flight
	by map[netip.Addr]int // in flight per key
}

func newShares(total, per int) *shares {
	return &shares{total: total, per: per, by: map[netip.Addr]int{}}
}

// claim takes one for key, within the bounds; a true return must be
// paired with release(key).
func (s *shares) claim(key netip.Addr) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n >= s.total || s.by[key] >= s.per {
		return false
	}
	s.n++
	s.by[key]++
	return true
}

// release gives back one claimed for key.
func (s *shares) release(key netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n--
	if s.by[key]--; s.by[key] == 0 {
		delete(s.by, key)
	}
}
