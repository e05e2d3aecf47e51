package app

import (
	"sync/atomic"
	"time"
)

// refusals reports runs of refused connections in the process log: one
// line when refusing begins (why, and how full the budget is), and one
// when a second passed without a refusal (how many were refused), rather
// than a line per refused accept, which a connection flood would turn
// into a log flood. Refusals while stopping are not reported.
type refusals struct {
	refusing atomic.Bool
	count    atomic.Uint64 // refused in the current run
	last     atomic.Int64  // unix ns of the run's latest refusal
}

// refusalQuiet is how long without a refusal ends a run.
const refusalQuiet = time.Second

// note counts one refusal (from OnOpen, on any loop), and logs the start
// of a run.
func (s *Server) noteRefusal(reason string) {
	r := &s.refusals
	r.count.Add(1)
	r.last.Store(time.Now().UnixNano())
	if r.refusing.Load() || !r.refusing.CompareAndSwap(false, true) {
		return
	}
	b := s.sh.Budget.Snapshot()
	s.log.Warn("refusing new connections", "reason", reason,
		"descriptors_used", b.Used, "descriptors_limit", b.Limit,
		"connections", b.Conns, "connections_limit", b.MaxConns)
}

// endRefusalRun logs the end of a run once refusalQuiet passed since its
// latest refusal; the sweep of every loop calls it, and one of them logs.
func (s *Server) endRefusalRun(now int64) {
	r := &s.refusals
	if !r.refusing.Load() || now-r.last.Load() < int64(refusalQuiet) {
		return
	}
	if r.refusing.CompareAndSwap(true, false) {
		s.log.Info("accepting new connections again", "refused", r.count.Swap(0))
	}
}
