package upstream

import (
	"sync/atomic"

	"gale/config"
)

// Health is a server's passive health: failures of real requests within
// a window take it out of service for a cooldown. Its fields are atomics
// shared by every event loop; a Health must not be copied.
type Health struct {
	failStart atomic.Int64 // start of the current failure window (unix ns)
	fails     atomic.Int32 // failures in the current window
	downUntil atomic.Int64 // out of service until then (unix ns); 0 = in service
}

// Available reports whether the server is in service at now (unix ns).
// back is true on the one call that found the cooldown over, so that the
// caller reports the server back in service once.
func (h *Health) Available(now int64) (ok, back bool) {
	until := h.downUntil.Load()
	if until == 0 {
		return true, false
	}
	if now < until {
		return false, false
	}
	return true, h.downUntil.CompareAndSwap(until, 0)
}

// Healthy reports what Available does, without changing anything.
func (h *Health) Healthy(now int64) bool {
	until := h.downUntil.Load()
	return until == 0 || now >= until
}

// Failed records a failure at now (unix ns): p.Fails of them within
// p.Window take the server out for p.Cooldown. It returns the failures
// counted when this one took the server out, for the caller to report,
// and 0 otherwise. A race between loops may count a failure in a window
// that just ended, which only errs towards caution.
func (h *Health) Failed(now int64, p *config.PassiveHealth) int {
	if p.Fails <= 0 {
		return 0
	}
	start := h.failStart.Load()
	if now-start > int64(p.Window) && h.failStart.CompareAndSwap(start, now) {
		h.fails.Store(0)
	}
	n := h.fails.Add(1)
	if int(n) < p.Fails || h.downUntil.Load() != 0 {
		return 0
	}
	if !h.downUntil.CompareAndSwap(0, now+int64(p.Cooldown)) {
		return 0
	}
	h.fails.Store(0)
	return int(n)
}
