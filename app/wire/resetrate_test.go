package wire

import (
	"net/netip"
	"testing"
)

// TestResetRatesBurstAndRefill: an address may reset AddrResetBurst
// streams at once, no more; the budget refills at AddrResetRate a second
// and with nothing else; another address has its own budget.
func TestResetRatesBurstAndRefill(t *testing.T) {
	r := NewResetRates()
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	now := int64(1e12)
	if !r.Take(a, AddrResetBurst, now) {
		t.Fatal("the burst was refused")
	}
	if r.Take(a, 1, now) {
		t.Fatal("one reset past the burst was held")
	}
	if n := r.Room(a, now); n != 0 {
		t.Fatalf("room %d after the burst was spent, want 0", n)
	}
	if !r.Take(b, 1, now) {
		t.Fatal("another address paid for the first one's resets")
	}
	second := now + 1e9
	if n := r.Room(a, second); n != AddrResetRate {
		t.Fatalf("room %d a second later, want %d", n, AddrResetRate)
	}
	if !r.Take(a, AddrResetRate, second) || r.Take(a, 1, second) {
		t.Fatal("a second refilled other than AddrResetRate resets")
	}
	if n := r.Room(netip.MustParseAddr("2001:db8::1"), now); n != AddrResetBurst {
		t.Fatalf("an unknown address has room %d, want %d", n, AddrResetBurst)
	}
}

// TestResetRatesBounded: a shard remembers at most maxRateKeys
// addresses; a new one past that is refused while none refilled, and
// admitted once the old ones have.
func TestResetRatesBounded(t *testing.T) {
	r := NewResetRates()
	now := int64(1e12)
	refused := 0
	for i := range addrShards * maxRateKeys * 2 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		if !r.Take(a, 1, now) {
			refused++
		}
	}
	kept := 0
	for i := range r.shards {
		kept += len(r.shards[i].m)
	}
	if kept > addrShards*maxRateKeys || refused == 0 {
		t.Fatalf("%d addresses kept, %d refused", kept, refused)
	}
	if !r.Take(netip.MustParseAddr("192.0.2.9"), 1, now+int64(1e9)) {
		t.Fatal("a new address was refused after the others refilled")
	}
}

// TestLoopRate: the loop's budget holds LoopResetBurst at once.
func TestLoopRate(t *testing.T) {
	var r Rate
	now := int64(1e12)
	if !r.TakeResets(LoopResetBurst, now) || r.TakeResets(1, now) {
		t.Fatal("the loop's burst is not LoopResetBurst")
	}
	if !r.TakeResets(LoopResetRate, now+1e9) {
		t.Fatal("a second did not refill LoopResetRate resets")
	}
}
