package upstream

import (
	"fmt"
	"testing"
)

func TestCandidates(t *testing.T) {
	for _, c := range []struct {
		n                int
		inService, tried uint64
		want             uint64
	}{
		{3, 0b111, 0, 0b111},
		{3, 0b101, 0b001, 0b100},
		{3, 0b001, 0b001, 0b110}, // none in service untried: every untried one
		{3, 0b111, 0b111, 0},
		{64, 0, 1, ^uint64(1)},
	} {
		if got := Candidates(c.n, c.inService, c.tried); got != c.want {
			t.Errorf("Candidates(%d, %b, %b) = %b, want %b", c.n, c.inService, c.tried, got, c.want)
		}
	}
}

func TestChoose(t *testing.T) {
	var turn uint32
	load := []int{5, 1, 1, 0}
	c := Choice{Turn: &turn, Load: func(i int) int { return load[i] }, Rand: func() uint64 { return 0 }, Hash: 6}
	avail := uint64(0b0111) // server 3 is not a candidate
	var rr []int
	for range 4 {
		rr = append(rr, RoundRobin.Choose(avail, 4, c))
	}
	if rr[0] != 0 || rr[1] != 1 || rr[2] != 2 || rr[3] != 0 {
		t.Errorf("round-robin picked %v", rr)
	}
	if got := LeastConn.Choose(avail, 4, c); got != 1 && got != 2 {
		t.Errorf("least-connections picked %d", got)
	}
	if got := RandomTwo.Choose(avail, 4, c); got != 1 {
		t.Errorf("random-two picked %d, want the less loaded of 0 and 1", got)
	}
	if got, want := IPHash.Choose(avail, 4, c), Rendezvous(avail, 4, nil, 6); got != want || got == 3 {
		t.Errorf("client-ip-hash picked %d, want %d (rendezvous among 0..2)", got, want)
	}
	if got := IPHash.Choose(0b0001, 4, c); got != 0 {
		t.Errorf("client-ip-hash picked %d, want the only one in service, 0", got)
	}
	if got := RoundRobin.Choose(0, 4, c); got != -1 {
		t.Errorf("no candidates: picked %d", got)
	}
}

// hashBalancer is one instance's view of a route's upstreams: built from
// the addresses alone, as every gale process builds its own.
type hashBalancer struct {
	ids []uint64
}

func newHashBalancer(addrs []string) *hashBalancer {
	b := &hashBalancer{}
	for _, a := range addrs {
		b.ids = append(b.ids, HashString(a))
	}
	return b
}

// pick returns the address index the client key goes to.
func (b *hashBalancer) pick(key uint64) int {
	n := len(b.ids)
	var turn uint32
	return IPHash.Choose(1<<n-1, n, Choice{Turn: &turn, Hash: key, IDs: b.ids})
}

// TestRendezvousAcrossInstances: three balancers built independently from
// the same five upstreams send each of 1,000 client addresses to the same
// upstream; removing one upstream moves only the clients it had (at most
// 1/5 + 2% of them all), and the shares stay near 1/5 each.
func TestRendezvousAcrossInstances(t *testing.T) {
	addrs := []string{"127.0.0.11:8080", "127.0.0.12:8080", "127.0.0.13:8080", "127.0.0.14:8080", "127.0.0.15:8080"}
	instances := []*hashBalancer{newHashBalancer(addrs), newHashBalancer(addrs), newHashBalancer(append([]string(nil), addrs...))}
	const clients = 1000
	key := func(i int) uint64 { return HashString(fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&0xff, i&0xff)) }
	first := make([]string, clients)
	share := map[string]int{}
	for i := range clients {
		for j, b := range instances {
			got := addrs[b.pick(key(i))]
			if j == 0 {
				first[i] = got
				share[got]++
			} else if got != first[i] {
				t.Fatalf("client %d: instance 0 sends it to %s, instance %d to %s", i, first[i], j, got)
			}
		}
	}
	for a, n := range share {
		if n < clients/5-clients/10 || n > clients/5+clients/10 {
			t.Errorf("upstream %s has %d of %d clients, want about %d", a, n, clients, clients/5)
		}
	}
	removed := addrs[2]
	rest := append(append([]string(nil), addrs[:2]...), addrs[3:]...)
	after := newHashBalancer(rest)
	moved := 0
	for i := range clients {
		got := rest[after.pick(key(i))]
		if got == first[i] {
			continue
		}
		if first[i] != removed {
			t.Errorf("client %d moved from %s to %s though %s was removed", i, first[i], got, removed)
		}
		moved++
	}
	if moved != share[removed] || moved > clients/5+clients*2/100 {
		t.Errorf("%d clients moved; %s had %d; at most %d may", moved, removed, share[removed], clients/5+clients*2/100)
	}
}
