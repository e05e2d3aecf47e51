package fds

import (
	"net"
	"sync"
	"testing"
)

// Acquire never lets the count pass the limit, even when many goroutines
// race for the last descriptors, and every grant is given back.
func TestBudgetNeverPassesLimit(t *testing.T) {
	b := New(10, 0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b.Acquire(3) {
				if u := b.Snapshot().Used; u > 10 {
					t.Errorf("used %d over the limit", u)
				}
				mu.Lock()
				granted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if granted != 3 {
		t.Fatalf("granted %d acquisitions of 3 from 10; want 3", granted)
	}
	s := b.Snapshot()
	if s.Used != 9 || s.Refused != 61 {
		t.Fatalf("used %d refused %d; want 9 and 61", s.Used, s.Refused)
	}
	b.Release(9)
	if !b.Acquire(10) || b.Acquire(1) {
		t.Fatal("a released budget is whole again, and no more")
	}
}

// Join caps client connections on their own; 0 is no cap.
func TestBudgetConnectionCap(t *testing.T) {
	b := New(100, 2)
	if !b.Join() || !b.Join() || b.Join() {
		t.Fatal("cap of 2")
	}
	b.Leave()
	if !b.Join() {
		t.Fatal("a place left is free again")
	}
	if s := b.Snapshot(); s.Conns != 2 || s.Full != 1 {
		t.Fatalf("%+v", s)
	}
	free := New(1, 0)
	for range 5 {
		if !free.Join() {
			t.Fatal("no cap")
		}
	}
}

// A tracked connection gives its descriptor back on its first Close only,
// and Hand passes the count on without closing.
func TestConnReleasesOnce(t *testing.T) {
	b := New(2, 0)
	a1, a2 := net.Pipe()
	b.Acquire(2)
	c1, c2 := Track(b, a1), Track(b, a2)
	for range 3 {
		_ = c1.Close()
	}
	if u := b.Snapshot().Used; u != 1 {
		t.Fatalf("used %d after closing one twice", u)
	}
	inner, ok := c2.Hand()
	if !ok || inner != a2 {
		t.Fatal("Hand returns the connection")
	}
	_ = c2.Close()
	if u := b.Snapshot().Used; u != 1 {
		t.Fatalf("used %d: Close after Hand must not give the count back", u)
	}
	if _, ok := c1.Hand(); ok {
		t.Fatal("Hand of a closed connection")
	}
	_ = inner.Close()
}

// A nil budget grants everything.
func TestNilBudget(t *testing.T) {
	var b *Budget
	if !b.Acquire(1<<40) || !b.Join() {
		t.Fatal("nil grants")
	}
	b.Release(1)
	b.Leave()
}

// BenchmarkAcquireRelease is what a client connection costs the budget:
// a place and a descriptor taken and given back, from every P at once.
func BenchmarkAcquireRelease(b *testing.B) {
	bud := New(1<<40, 0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !bud.Join() || !bud.Acquire(1) {
				b.Fatal("refused")
			}
			bud.Release(1)
			bud.Leave()
		}
	})
}
