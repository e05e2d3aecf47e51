package upstream

import "math/bits"

// Policy is how a request's server is chosen among a route's servers
// (load_balancing).
type Policy uint8

const (
	RoundRobin Policy = iota // the next server in turn (the default)
	LeastConn                // the fewest requests in flight on the loop, ties in turn
	RandomTwo                // the less loaded of two chosen at random
	IPHash                   // by the client address, the next in service if that one is out
)

// PolicyOf returns the policy named as in the configuration
// ("least-connections", "random-two", "client-ip-hash"); anything else
// is round-robin.
func PolicyOf(name string) Policy {
	switch name {
	case "least-connections":
		return LeastConn
	case "random-two":
		return RandomTwo
	case "client-ip-hash":
		return IPHash
	}
	return RoundRobin
}

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
	Hash uint64          // the client address's hash (IPHash)
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
	case IPHash:
		return nextIn(avail, n, int(c.Hash%uint64(n)))
	}
	return nextIn(avail, n, c.turn(n))
}

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
