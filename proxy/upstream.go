package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"gale/config"
	"gale/upstream"
)

// noCopy makes go vet's copylocks check flag copies of the types that
// embed it.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// Upstream is one upstream server of a proxy route, with its health. The
// health fields are atomics shared by all event loops (the only proxy state
// that is); the per-loop pools hang off pools, each slot written only by
// its own loop.
//
// An Upstream must not be copied: it is referenced by pointer from pools,
// exchanges and health checkers.
type Upstream struct {
	_ noCopy

	h       *Handler
	network string           // "tcp" or "unix"
	address string           // dial address
	raw     string           // as configured, for logs; a discovered one's address
	from    string           // the dns+a:// or dns+srv:// entry that found it; "" = fixed
	lim     *upstream.Limits // of its address's pools: the route's, or for a discovered one its own (Retired once gone)
	host    []byte           // Host field value when preserve_host is off

	pools []atomic.Pointer[upstream.Pool] // the pool of the address on each loop (Loop.idx); slot i written only by loop i
	stats []UpstreamStats                 // per loop, then one overflow slot (upstream_stats.go)
	h2t   roundTripper                    // the connections of an h2c, h2 or auto upstream (h2c.go); nil for HTTP/1.1 on the loops
	tls   *tls.Config                     // how its connections speak TLS (tls.go); nil: plain
	tlsID string                          // the identity of tls, in the pool's key; "" for plain

	// Passive health: failures of real requests within a window take the
	// upstream out for a cooldown.
	passive upstream.Health

	// Active health: consecutive check results flip activeDown.
	activeDown atomic.Bool

	flog upstream.FailureLog // at most one failure line a second

	// gone is set when discovery no longer finds the address (or the
	// route is closed): requests in flight finish, no new one picks it,
	// and its pools keep no connection idle (drained, not cut).
	gone atomic.Bool
}

// String returns the upstream as configured ("127.0.0.1:9000",
// "unix:/run/app.sock"). The pointer receiver keeps fmt from copying the
// atomics.
func (u *Upstream) String() string { return u.raw }

// From returns the dns+a:// or dns+srv:// entry that found the upstream,
// or "" for one configured as an address.
func (u *Upstream) From() string { return u.from }

// Available reports whether the upstream is in service at now (unix ns):
// no active check has taken it out, no passive cooldown is running, and
// (for a discovered one) the records still give its address.
// Safe for concurrent use.
func (u *Upstream) Available(now int64) bool {
	if u.activeDown.Load() || u.gone.Load() {
		return false
	}
	ok, back := u.passive.Available(now)
	if back {
		u.h.logf(slog.LevelInfo, "upstream back in service", u, "reason", "passive cooldown over")
	}
	return ok
}

// failed records a failure of a real request (passive health): Fails of
// them within Window take the upstream out for Cooldown. Safe for
// concurrent use.
func (u *Upstream) failed(now int64, why string) {
	u.logFailure(now, why)
	p := &u.h.conf.HealthCheck.Passive
	if n := u.passive.Failed(now, p); n > 0 {
		u.h.logf(slog.LevelWarn, "upstream out of service", u, "reason", why,
			"failures", n, "window", p.Window.String(), "for", p.Cooldown.String())
	}
}

// logFailure logs a failed attempt at warn, at most once a second (the
// line counts those left out since the last one). Safe for concurrent use.
func (u *Upstream) logFailure(now int64, why string) {
	n, ok := u.flog.Allow(now)
	if !ok {
		return
	}
	if n > 0 {
		u.h.logf(slog.LevelWarn, "upstream failed", u, "reason", why, "suppressed", n)
		return
	}
	u.h.logf(slog.LevelWarn, "upstream failed", u, "reason", why)
}

// healthChecker runs the active checks of one upstream in a goroutine:
// a GET of the configured path every interval, over a fresh connection.
type healthChecker struct {
	u      *Upstream
	conf   *config.HealthCheck
	stop   chan struct{}
	done   chan struct{}
	passes int // consecutive
	fails  int // consecutive
}

func (hc *healthChecker) run() {
	defer close(hc.done)
	t := time.NewTicker(hc.conf.Interval)
	defer t.Stop()
	for {
		hc.check()
		select {
		case <-hc.stop:
			return
		case <-t.C:
		}
	}
}

func (hc *healthChecker) check() {
	u := hc.u
	if !u.h.budget.Acquire(1) {
		return // no descriptor for a probe now: neither a pass nor a failure
	}
	status, err := hc.probe()
	u.h.budget.Release(1)
	ok := err == nil && status == hc.conf.ExpectStatus
	if ok {
		hc.fails = 0
		hc.passes++
		if u.activeDown.Load() && hc.passes >= hc.conf.Passes {
			u.activeDown.Store(false)
			u.h.logf(slog.LevelInfo, "upstream back in service", u, "reason", "active checks passed", "passes", hc.passes)
		}
		return
	}
	hc.passes = 0
	hc.fails++
	if !u.activeDown.Load() && hc.fails >= hc.conf.Fails {
		u.activeDown.Store(true)
		reason := "unexpected status"
		if err != nil {
			reason = err.Error()
		}
		u.h.logf(slog.LevelWarn, "upstream out of service", u, "reason", "active checks failed: "+reason,
			"status", status, "failures", hc.fails)
	}
}

// probe sends one check request and returns the status received.
func (hc *healthChecker) probe() (int, error) {
	u := hc.u
	ctx, cancel := context.WithTimeout(context.Background(), hc.conf.Timeout)
	defer cancel()
	if u.h2t != nil {
		return hc.probeH2C(ctx)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, u.network, u.address)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	deadline, _ := ctx.Deadline()
	_ = nc.SetDeadline(deadline)
	if u.tls != nil {
		tc := tls.Client(nc, u.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			return 0, err
		}
		nc = tc
	}
	req := "GET " + hc.conf.Path + " HTTP/1.1\r\nHost: " + string(u.host) +
		"\r\nUser-Agent: gale-health-check\r\nConnection: close\r\n\r\n"
	if _, err := nc.Write([]byte(req)); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// probeH2C sends one check request to an h2c upstream over its
// transport's connections.
func (hc *healthChecker) probeH2C(ctx context.Context) (int, error) {
	u := hc.u
	scheme := "http"
	if u.tls != nil {
		scheme = "https"
	}
	req, err := http.NewRequestWithContext(ctx, "GET", scheme+"://localhost"+hc.conf.Path, nil)
	if err != nil {
		return 0, err
	}
	req.Host = string(u.host)
	req.Header.Set("User-Agent", "gale-health-check")
	resp, err := u.h2t.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// checkers is the set of running health checkers of a Handler.
type checkers struct {
	mu   sync.Mutex
	list []*healthChecker
}

func (cs *checkers) start(u *Upstream, conf *config.HealthCheck) {
	hc := &healthChecker{u: u, conf: conf, stop: make(chan struct{}), done: make(chan struct{})}
	cs.mu.Lock()
	cs.list = append(cs.list, hc)
	cs.mu.Unlock()
	go hc.run()
}

// stopFor stops the checker of u, if it has one, and waits for it.
func (cs *checkers) stopFor(u *Upstream) {
	cs.mu.Lock()
	var hc *healthChecker
	for i, c := range cs.list {
		if c.u == u {
			hc = c
			cs.list = append(cs.list[:i], cs.list[i+1:]...)
			break
		}
	}
	cs.mu.Unlock()
	if hc != nil {
		close(hc.stop)
		<-hc.done
	}
}

func (cs *checkers) stopAll() {
	cs.mu.Lock()
	list := cs.list
	cs.list = nil
	cs.mu.Unlock()
	for _, hc := range list {
		close(hc.stop)
	}
	for _, hc := range list {
		<-hc.done
	}
}
