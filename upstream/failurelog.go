package upstream

import (
	"sync/atomic"
	"time"
)

// FailureLog limits the log lines of one upstream's failures to one a
// second: a dead backend that fails every request would otherwise write a
// line per request. The first failure of a second gets a line, which
// carries the number of failures left without one since the previous line;
// the others are counted. The zero value is ready. Safe for concurrent use
// (event loops and off-loop goroutines share it).
type FailureLog struct {
	sec        atomic.Int64 // the second (unix, plus one) of the last line; 0 = none yet
	suppressed atomic.Int64 // failures without a line since it
}

// Allow reports whether the failure at now (unix ns) gets a log line, and
// if so how many failures were suppressed before it.
func (f *FailureLog) Allow(now int64) (suppressed int64, ok bool) {
	sec := now/int64(time.Second) + 1
	last := f.sec.Load()
	if sec <= last || !f.sec.CompareAndSwap(last, sec) {
		f.suppressed.Add(1)
		return 0, false
	}
	return f.suppressed.Swap(0), true
}
