// Package perloop keeps a value for each gnet event loop: made on the
// loop's first use, found without a lock after that, and listed for
// whoever visits every loop (sweeps, metrics).
package perloop

import (
	"sync"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"
)

// Map holds a value per event loop. Its zero value is empty and ready.
// Safe for concurrent use.
type Map[T any] struct {
	m    sync.Map // gnet.EventLoop -> T
	mu   sync.Mutex
	list atomic.Pointer[[]T]
}

// Get returns the value of el, made by make on first use. make runs under
// the map's lock, once per loop, so that it may publish the value
// elsewhere in the same step.
func (m *Map[T]) Get(el gnet.EventLoop, make func() T) T {
	if v, ok := m.m.Load(el); ok {
		return v.(T)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.m.Load(el); ok {
		return v.(T)
	}
	v := make()
	m.m.Store(el, v)
	list := append(append([]T(nil), m.All()...), v)
	m.list.Store(&list)
	return v
}

// All returns the values made so far, in the order they were made. The
// slice is shared: do not modify it.
func (m *Map[T]) All() []T {
	if p := m.list.Load(); p != nil {
		return *p
	}
	return nil
}
