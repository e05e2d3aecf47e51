package wire

import "net/netip"

// AddrLoad counts what each client address (AddrKey) holds on one event
// loop now: the requests it had forwarded upstream that have not ended.
// It is the loop's own, so it takes no lock; an address's connections
// spread over the loops hold a share on each. A key leaves the map with
// its last count, so the map holds at most the addresses that hold
// something.
type AddrLoad struct{ n map[netip.Addr]int32 }

// Of is what key holds now.
func (l *AddrLoad) Of(key netip.Addr) int64 { return int64(l.n[key]) }

// Hold counts one more for key.
func (l *AddrLoad) Hold(key netip.Addr) {
	if l.n == nil {
		l.n = map[netip.Addr]int32{}
	}
	l.n[key]++
}

// Drop counts one fewer for key.
func (l *AddrLoad) Drop(key netip.Addr) {
	if n := l.n[key]; n > 1 {
		l.n[key] = n - 1
	} else {
		delete(l.n, key)
	}
}
