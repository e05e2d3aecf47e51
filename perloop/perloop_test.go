package perloop

import (
	"sync"
	"testing"

	"github.com/panjf2000/gnet/v2"
)

// loopKey stands for an event loop: Map only compares its keys.
type loopKey struct {
	gnet.EventLoop
	id int
}

func TestGetMakesOncePerLoop(t *testing.T) {
	var m Map[*int]
	a, b := &loopKey{id: 1}, &loopKey{id: 2}
	var made sync.Map
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			el := gnet.EventLoop(a)
			if i%2 == 1 {
				el = b
			}
			m.Get(el, func() *int {
				if _, dup := made.LoadOrStore(el, true); dup {
					t.Errorf("made twice for one loop")
				}
				v := i
				return &v
			})
		}()
	}
	wg.Wait()
	if got := len(m.All()); got != 2 {
		t.Fatalf("All has %d values, want 2", got)
	}
	if m.Get(a, nil) == m.Get(b, nil) {
		t.Fatal("two loops share a value")
	}
}
