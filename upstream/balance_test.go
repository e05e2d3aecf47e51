package upstream

import "testing"

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
	if got := IPHash.Choose(avail, 4, c); got != 2 {
		t.Errorf("client-ip-hash picked %d, want 2 (hash 6 mod 4)", got)
	}
	if got := IPHash.Choose(0b0001, 4, c); got != 0 {
		t.Errorf("client-ip-hash picked %d, want the next in service, 0", got)
	}
	if got := RoundRobin.Choose(0, 4, c); got != -1 {
		t.Errorf("no candidates: picked %d", got)
	}
}
