package upstream

import "testing"

type testExchange struct {
	Slot
	id      int
	checked int
}

func TestExchangesReuseAndSweep(t *testing.T) {
	made := 0
	var x Exchanges[*testExchange]
	x.New = func() *testExchange { made++; return &testExchange{id: made} }
	a, b, c := x.Get(), x.Get(), x.Get()
	if x.Len() != 3 || !a.Listed() || made != 3 {
		t.Fatalf("len %d, listed %v, made %d", x.Len(), a.Listed(), made)
	}
	// A check that ends another exchange: the sweep skips it.
	x.Sweep(1, func(ex *testExchange, now int64) {
		ex.checked++
		if ex == a {
			x.Remove(b)
		}
	})
	if a.checked != 1 || b.checked != 0 || c.checked != 1 || b.Listed() {
		t.Fatalf("checked a=%d b=%d c=%d, b listed %v", a.checked, b.checked, c.checked, b.Listed())
	}
	x.Remove(b) // again: nothing changes
	x.Keep(b)
	if got := x.Get(); got != b || made != 3 || x.Len() != 3 {
		t.Fatalf("Get after Keep: %d, made %d, len %d", got.id, made, x.Len())
	}
	x.Remove(a)
	x.Remove(c)
	x.Remove(b)
	if x.Len() != 0 {
		t.Fatalf("len %d after removing all", x.Len())
	}
}

func TestExchangesNoAllocs(t *testing.T) {
	var x Exchanges[*testExchange]
	x.New = func() *testExchange { return &testExchange{} }
	x.Keep(x.New())
	n := testing.AllocsPerRun(100, func() {
		ex := x.Get()
		x.Sweep(0, func(*testExchange, int64) {})
		x.Remove(ex)
		x.Keep(ex)
	})
	if n != 0 {
		t.Fatalf("%v allocations per exchange", n)
	}
}
