package upstream

import "math/bits"

// Policy is how a request's server is chosen among a route's servers
// (load_balancing).
type Policy uint8

const (
	RoundRobin Policy = iota // the next server in turn (the default)
	LeastConn                // the fewest requests in flight on the loop, ties in turn
	RandomTwo                // the less loaded of two chosen at random
	IPHash                   // by the client address, rendezvous hashing (Choice.Hash)
	HeaderHash               // by a request field's value, rendezvous hashing
	CookieHash               // by a cookie's value, rendezvous hashing
)

// PolicyOf returns the policy named as in the configuration
// ("least-connections", "random-two", "client-ip-hash", "header-hash",
// "cookie-hash"); anything else is round-robin.
func PolicyOf(name string) Policy {
	switch name {
	case "least-connections":
		return LeastConn
	case "random-two":
		return RandomTwo
	case "client-ip-hash":
		return IPHash
	case "header-hash":
		return HeaderHash
	case "cookie-hash":
		return CookieHash
	}
	return RoundRobin
}

// Hashing reports whether p chooses by a hash of the request (Choice.Hash).
func (p Policy) Hashing() bool { return p >= IPHash }

// Candidates returns the servers a request may try, as a bit mask over
// n servers (at most 64): those in service (inService) not tried yet
// (tried) or, when none is left, every untried one regardless of health
// (a request should rather try than fail outright). 0 when every server
// was tried.
func Candidates(n int, inService, tried uint64) uint64 {
	if avail := inService &^ tried; avail != 0 {
		return avail
	}
	if n == 64 {
		return ^tried
	}
	return ^tried & (1<<n - 1)
}

// Choice is what a policy weighs to choose among candidates: each is
// the caller's, per route and event loop, so nothing in it is shared
// between loops.
type Choice struct {
	Turn *uint32         // the round-robin position, advanced by the policies that take turns
	Load func(i int) int // requests in flight to server i on the loop
	Rand func() uint64   // a random source
	Hash uint64          // the request's key, hashed (the hashing policies)
	IDs  []uint64        // the servers' identities (HashString of their addresses), for rendezvous hashing; nil: their positions
}

// Choose returns the server policy p picks among the candidates avail
// (a bit mask over n servers), or -1 when avail is empty.
func (p Policy) Choose(avail uint64, n int, c Choice) int {
	if avail == 0 {
		return -1
	}
	switch p {
	case LeastConn:
		start := c.turn(n)
		best, bestN := -1, 0
		for k := 0; k < n; k++ {
			i := (start + k) % n
			if avail&(1<<i) == 0 {
				continue
			}
			if l := c.Load(i); best < 0 || l < bestN {
				best, bestN = i, l
			}
		}
		return best
	case RandomTwo:
		cnt := bits.OnesCount64(avail)
		a := nthBit(avail, int(c.Rand()%uint64(cnt)))
		if cnt == 1 {
			return a
		}
		b := nthBit(avail&^(1<<a), int(c.Rand()%uint64(cnt-1)))
		if c.Load(b) < c.Load(a) {
			return b
		}
		return a
	case IPHash, HeaderHash, CookieHash:
		return Rendezvous(avail, n, c.IDs, c.Hash)
	}
	return nextIn(avail, n, c.turn(n))
}

// Rendezvous returns the server among the candidates avail (a bit mask
// over n servers; not empty) that key ranks first: highest random weight
// hashing, where each server's weight for a key is a hash of the server's
// identity (ids[i]; its position when ids is nil) and the key. Everyone
// who knows the same identities picks the same server for a key, with no
// state and no seed; a server that leaves moves only the keys it held
// (each to its next-ranked server), and one that joins takes only those
// it now ranks first, about 1/n of them.
func Rendezvous(avail uint64, n int, ids []uint64, key uint64) int {
	k := mix64(key)
	best, bestW := -1, uint64(0)
	for i := 0; i < n; i++ {
		if avail&(1<<i) == 0 {
			continue
		}
		id := uint64(i) * 0x9e3779b97f4a7c15
		if ids != nil {
			id = ids[i]
		}
		if w := mix64(id ^ k); best < 0 || w > bestW {
			best, bestW = i, w
		}
	}
	return best
}

// mix64 is SplitMix64's finaliser: every input bit flips about half the
// output bits, which rendezvous weights need.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// HashString is 64-bit FNV-1a of s: a server's identity for Rendezvous
// (of its address as dialed), the same in every process.
func HashString(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// HashBytes is HashString of b, without converting it.
func HashBytes(b []byte) uint64 {
	h := uint64(fnvOffset)
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// turn returns the round-robin position among n servers and advances it.
func (c Choice) turn(n int) int {
	start := int(*c.Turn % uint32(n))
	*c.Turn++
	return start
}

// nextIn returns the first server of avail at or after start, in turn.
func nextIn(avail uint64, n, start int) int {
	for k := 0; k < n; k++ {
		if i := (start + k) % n; avail&(1<<i) != 0 {
			return i
		}
	}
	return -1
}

// nthBit returns the index of the k-th (from 0) set bit of x.
func nthBit(x uint64, k int) int {
	for i := 0; i < 64; i++ {
		if x&(1<<i) != 0 {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return 0
}
