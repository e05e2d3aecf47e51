package proxy

import (
	"errors"
	"net"
	"sync/atomic"
)

// Per-upstream counters, for the metrics: attempts, retries and failures
// by kind, and the idle pool. Each upstream keeps one slot per event loop
// (Upstream.stats), written by that loop only and read by anyone, plus
// one overflow slot that loops beyond the ones the route was built for
// share (atomic adds, so sharing it is still safe).

// FailKind is what went wrong with an attempt at an upstream.
type FailKind uint8

// The failure kinds.
const (
	FailConnect     FailKind = iota // the dial was refused or failed
	FailTimeout                     // connect, response-header or body-read timeout
	FailReset                       // the upstream closed the connection before or while it answered
	FailBadResponse                 // the upstream's response could not be parsed, or broke the rules
	NumFailKinds
)

// FailKindNames are the kind label values.
var FailKindNames = [NumFailKinds]string{"connect", "timeout", "reset", "bad_response"}

// UpstreamStats are one loop's counters of one upstream.
type UpstreamStats struct {
	Attempts atomic.Uint64               // attempts sent to the upstream (or dialed for)
	Retries  atomic.Uint64               // attempts after which another was made
	Failures [NumFailKinds]atomic.Uint64 // failed attempts by kind
	_        [64]byte                    // keeps the next loop's slot off these cache lines
}

// statsFor returns the slot of loop lp.
func (u *Upstream) statsFor(lp *Loop) *UpstreamStats {
	if lp.idx < len(u.stats)-1 {
		return &u.stats[lp.idx]
	}
	return &u.stats[len(u.stats)-1]
}

// Stats adds the upstream's counters over every loop to d. Safe for
// concurrent use with the loops writing them.
func (u *Upstream) Stats(d *UpstreamSnapshot) {
	for i := range u.stats {
		s := &u.stats[i]
		d.Attempts += s.Attempts.Load()
		d.Retries += s.Retries.Load()
		for k := range d.Failures {
			d.Failures[k] += s.Failures[k].Load()
		}
	}
	var open int64 // the address's count, which every loop's pool reads alike
	for i := range u.pools {
		if p := u.pools[i].Load(); p != nil {
			d.Idle += int64(p.IdleCount())
			open = max(open, p.AddressConns())
		}
	}
	d.Open += open
}

// UpstreamSnapshot is a plain copy of an upstream's counters summed over
// the loops.
type UpstreamSnapshot struct {
	Attempts, Retries uint64
	Failures          [NumFailKinds]uint64
	Idle              int64 // idle keep-alive connections, over every loop's pool
	Open              int64 // connections to the address open or dialing, over every loop (every route naming it)
}

// Healthy reports whether the upstream is in service at now (unix ns), as
// Available does, without changing anything. Safe for concurrent use.
func (u *Upstream) Healthy(now int64) bool {
	if u.activeDown.Load() {
		return false
	}
	return u.passive.Healthy(now)
}

// fail counts a failed attempt of ex at its current upstream.
func (ex *exchange) fail(k FailKind) {
	if ex.up != nil {
		ex.up.statsFor(ex.lp).Failures[k].Add(1)
	}
}

// retrying counts, at the exchange's current upstream, that the attempt
// which just failed is followed by another.
func (ex *exchange) retrying() {
	ex.lp.Stats.Retries.Add(1)
	if ex.up != nil {
		ex.up.statsFor(ex.lp).Retries.Add(1)
	}
}

// dialFailKind classifies a failed dial: a timeout, or a refusal or other
// error.
func dialFailKind(err error) FailKind {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return FailTimeout
	}
	return FailConnect
}
