package upstream

// Tracked is what an Exchanges list needs of an exchange: an embedded
// Slot, which holds its place in the list. E is a pointer type.
type Tracked interface {
	comparable
	slot() *Slot
}

// Slot is an exchange's place in its loop's Exchanges list. Embed it;
// its zero value is not listed.
type Slot struct{ pos int } // position in the list + 1; 0 when not listed

func (s *Slot) slot() *Slot { return s }

// Listed reports whether the exchange is in flight: taken by Get and not
// yet removed.
func (s *Slot) Listed() bool { return s.pos > 0 }

// Exchanges is an upstream kind's exchanges on one event loop: those in
// flight, which the loop's sweep visits for their deadlines, and those
// ended, kept for reuse so that a request costs no allocation. Touched
// on its loop only.
type Exchanges[E Tracked] struct {
	New func() E // makes an exchange when none is kept

	active  []E // in flight; an exchange's Slot is its position
	free    []E // ended, for reuse
	victims []E // scratch for Sweep
}

// Get returns a kept exchange, or a new one, listed as in flight.
func (x *Exchanges[E]) Get() E {
	var ex E
	if n := len(x.free); n > 0 {
		ex = x.free[n-1]
		var zero E
		x.free[n-1] = zero
		x.free = x.free[:n-1]
	} else {
		ex = x.New()
	}
	ex.slot().pos = len(x.active) + 1
	x.active = append(x.active, ex)
	return ex
}

// Remove takes ex off the list of exchanges in flight; it may be called
// again.
func (x *Exchanges[E]) Remove(ex E) {
	s := ex.slot()
	if i := s.pos - 1; i >= 0 && i < len(x.active) && x.active[i] == ex {
		last := len(x.active) - 1
		x.active[i] = x.active[last]
		x.active[i].slot().pos = i + 1
		var zero E
		x.active[last] = zero
		x.active = x.active[:last]
	}
	s.pos = 0
}

// Keep keeps ex, removed and reset, for a later Get. An exchange a
// goroutine may still reference must not be kept.
func (x *Exchanges[E]) Keep(ex E) { x.free = append(x.free, ex) }

// Len returns the number of exchanges in flight.
func (x *Exchanges[E]) Len() int { return len(x.active) }

// Sweep calls check with each exchange in flight at its start that is
// still in flight when its turn comes (check may end any of them).
func (x *Exchanges[E]) Sweep(now int64, check func(E, int64)) {
	x.victims = append(x.victims[:0], x.active...)
	var zero E
	for i, ex := range x.victims {
		x.victims[i] = zero
		if ex.slot().Listed() {
			check(ex, now)
		}
	}
}
