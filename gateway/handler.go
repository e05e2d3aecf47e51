package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"gale/config"
	"gale/fastcgi"
	"gale/fds"
	"gale/handlers"
	"gale/perloop"
	"gale/proxy"
	"gale/upstream"
)

// ErrNotFastCGI is returned by New for a route without FastCGI settings.
var ErrNotFastCGI = errors.New("gateway: route has no fastcgi settings")

// Options are what a Handler needs besides its route.
type Options struct {
	Budget *fds.Budget // counts the connections to the application servers; nil counts nothing
}

// Handler serves the requests of one fastcgi route (or the scripts of a
// php route). It is immutable after New but for the servers' health and
// the per-loop state, and safe for concurrent use by all event loops.
type Handler struct {
	route   *handlers.Route
	conf    *config.FastCGI
	servers []*server
	policy  upstream.Policy // load_balancing: round-robin or least-connections
	root    []byte
	split   [][]byte // lower case
	index   []byte
	fixed   []byte // the pairs every request carries: DOCUMENT_ROOT, GATEWAY_INTERFACE, SERVER_SOFTWARE, env
	trusted []netip.Prefix
	retries int
	// beginFlags are FCGI_BEGIN_REQUEST's: FCGI_KEEP_CONN with keep_alive.
	beginFlags uint8

	connectTimeout int64 // ns
	headerTimeout  int64
	idleTimeout    int64

	budget *fds.Budget
	log    atomic.Pointer[slog.Logger]

	loops   perloop.Map[*loop]
	ticking sync.Once
	stop    chan struct{}
	closed  atomic.Bool
}

// server is one FastCGI server of a route, with its passive health
// (atomics shared by the loops). It must not be copied.
type server struct {
	h       *Handler
	idx     int
	network string
	address string
	raw     string

	passive upstream.Health
	flog    upstream.FailureLog // at most one failure line a second
}

// New compiles the fastcgi route rt (rt.Conf.FastCGI set) into a
// Handler.
func New(rt *handlers.Route, opts Options) (*Handler, error) {
	fc := rt.Conf.FastCGI
	if fc == nil {
		return nil, ErrNotFastCGI
	}
	if len(fc.To) == 0 || len(fc.To) > 64 {
		return nil, fmt.Errorf("gateway: route %q needs 1 to 64 servers, has %d", rt.Conf.Path, len(fc.To))
	}
	h := &Handler{
		route:          rt,
		conf:           fc,
		policy:         upstream.PolicyOf(fc.LoadBalancing),
		root:           []byte(fc.Root),
		index:          []byte(fc.Index),
		trusted:        fc.TrustedProxies,
		retries:        fc.Retries,
		connectTimeout: int64(fc.Timeouts.Connect),
		headerTimeout:  int64(fc.Timeouts.ResponseHeader),
		idleTimeout:    int64(fc.Timeouts.Idle),
		budget:         opts.Budget,
		stop:           make(chan struct{}),
	}
	if fc.KeepAlive {
		h.beginFlags = fastcgi.FlagKeepConn
	}
	for _, ext := range fc.SplitPath {
		h.split = append(h.split, []byte(ext))
	}
	h.fixed = h.appendFixed(nil)
	for i, u := range fc.To {
		h.servers = append(h.servers, &server{h: h, idx: i, network: u.Network, address: u.Address, raw: u.Raw})
	}
	return h, nil
}

// Start sets the logger for server state changes and FCGI_STDERR.
func (h *Handler) Start(log *slog.Logger) { h.log.Store(log) }

// Close retires the route: pooled connections close at the loops' next
// sweeps, and the sweeps stop once no connection of the route is left.
// Requests in flight finish. It implements io.Closer for the router.
func (h *Handler) Close() error {
	h.closed.Store(true)
	return nil
}

// logger returns the logger, or nil.
func (h *Handler) logger() *slog.Logger { return h.log.Load() }

// available reports whether s is in service at now: no passive cooldown
// runs. Safe for concurrent use.
func (s *server) available(now int64) bool {
	ok, back := s.passive.Available(now)
	if back {
		s.h.logf(slog.LevelInfo, "fastcgi server back in service", s, "reason", "passive cooldown over")
	}
	return ok
}

// failed records a failure of a real request (passive health) and logs
// it, at most once a second (the line counts those left out since the
// last one).
func (s *server) failed(now int64, why string) {
	if n, ok := s.flog.Allow(now); ok && n > 0 {
		s.h.logf(slog.LevelWarn, "fastcgi server failed", s, "reason", why, "suppressed", n)
	} else if ok {
		s.h.logf(slog.LevelWarn, "fastcgi server failed", s, "reason", why)
	}
	p := &s.h.conf.Passive
	if n := s.passive.Failed(now, p); n > 0 {
		s.h.logf(slog.LevelWarn, "fastcgi server out of service", s, "reason", why,
			"failures", n, "for", p.Cooldown.String())
	}
}

func (h *Handler) logf(level slog.Level, msg string, s *server, args ...any) {
	l := h.logger()
	if l == nil || !l.Enabled(context.Background(), level) {
		return
	}
	args = append([]any{"route", h.route.Conf.Path, "server", s.raw}, args...)
	l.Log(context.Background(), level, msg, args...)
}

// pick chooses a server for a request on lp by the route's policy,
// among those in service and not yet tried (a bit mask; see
// upstream.Candidates); -1 when every server was tried.
func (h *Handler) pick(lp *loop, tried uint64, now int64) int {
	var inService uint64
	for i, s := range h.servers {
		if s.available(now) {
			inService |= 1 << i
		}
	}
	c := upstream.Choice{Turn: &lp.rr, Load: func(i int) int { return lp.pools[i].Active }}
	return h.policy.Choose(upstream.Candidates(len(h.servers), inService, tried), len(h.servers), c)
}

// loopFor returns the route's state on the event loop of up (the
// upstream core's state of that loop), made on first use (which starts
// the route's sweeps).
func (h *Handler) loopFor(up *upstream.Loop) *loop {
	lp := h.loops.Get(up.EventLoop(), func() *loop { return newLoop(h, up) })
	h.ticking.Do(func() { go h.tick() })
	return lp
}

// sweepEvery is how often each loop's state is swept: timeouts, idle
// connections, relaying resumed once a client caught up.
const sweepEvery = 100 * time.Millisecond

// tick posts each loop's sweep to its loop until the route retired and
// its connections are gone, or the engine stopped.
func (h *Handler) tick() {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for range t.C {
		live, running := false, false
		for _, lp := range h.loops.All() {
			if lp.el == nil || lp.el.Execute(context.Background(), lp.sweepFn) != nil {
				continue // the engine stopped: nothing of the loop is left
			}
			running = true
			live = live || lp.live.Load()
		}
		if !running || h.closed.Load() && !live {
			return
		}
	}
}

// Serve implements handlers.Handler for a fastcgi route: the script is
// found in the request's normal path (split_path, index).
func (h *Handler) Serve(c *handlers.Ctx) {
	script, info := h.splitPath(c.Path)
	if len(info) == 0 && len(script) > 0 && script[len(script)-1] == '/' {
		mark := len(c.Scratch)
		c.Scratch = append(append(c.Scratch, script...), h.index...)
		script = c.Scratch[mark:len(c.Scratch):len(c.Scratch)]
	}
	h.serve(c, script, info, false)
}

// ServeScript implements handlers.ScriptHandler for the php preset: the
// static handler found script, a file under the root, and info, the
// PATH_INFO (both decoded).
func (h *Handler) ServeScript(c *handlers.Ctx, script, info []byte) {
	h.serve(c, script, info, true)
}

// serve starts the exchange, or answers an error at once.
func (h *Handler) serve(c *handlers.Ctx, script, info []byte, decoded bool) {
	pl := proxy.LoopOf(c.Exchange)
	switch {
	case pl == nil || c.Sink == nil || c.Body == nil:
		h.errorNow(c, 500)
		return
	case c.Req.LengthUnknown():
		c.Resp.Close = true
		h.errorNow(c, 411)
		return
	}
	lp := h.loopFor(pl.Upstreams())
	ex := lp.getExchange()
	if status := ex.setup(h, c.Exchange, c, script, info, decoded); status != 0 {
		lp.putExchange(ex)
		h.errorNow(c, status)
		return
	}
	if status := ex.Begin(ex.attempt, func() { ex.dropConn(true) }); status != 0 {
		lp.putExchange(ex)
		h.errorNow(c, status)
		return
	}
	c.Resp.Pending = ex
}

// errorNow answers an error the server renders like any response (the
// router applies the route's response rules).
func (h *Handler) errorNow(c *handlers.Ctx, status int) {
	c.Error(status)
}

// respLimits bound the CGI head.
const (
	headBytes = fastcgi.DefaultHeadBytes
	maxFields = 256
)
