package upstream

import (
	"sync"
	"testing"
	"time"
)

// TestFailureLog: one line a second however many fail, each line counting
// the failures suppressed before it, across goroutines.
func TestFailureLog(t *testing.T) {
	var f FailureLog
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	if n, ok := f.Allow(t0); !ok || n != 0 {
		t.Fatalf("first failure: %d %v", n, ok)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	lines := 0
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 250; i++ {
				if _, ok := f.Allow(t0 + int64(i)*int64(time.Millisecond)); ok {
					mu.Lock()
					lines++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if lines != 0 {
		t.Fatalf("%d more lines within the first second", lines)
	}
	if n, ok := f.Allow(t0 + int64(time.Second)); !ok || n != 1000 {
		t.Fatalf("next second: %d suppressed, ok %v; want 1000, true", n, ok)
	}
	if _, ok := f.Allow(t0 + int64(time.Second) + 1); ok {
		t.Fatal("a second line in the same second")
	}
}
