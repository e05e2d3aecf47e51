package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync/atomic"

	"gale/codec"
	"gale/config"
	"gale/fds"
	"gale/handlers"
	"gale/upstream"
)

// ErrNotProxy is returned by New for a route without proxy settings.
var ErrNotProxy = errors.New("proxy: route has no proxy settings")

// Options are what a Handler needs besides its route.
type Options struct {
	Loops  int         // event loops of the server (per-loop state is sized for them); 0 = 1
	Budget *fds.Budget // counts upstream connections, off-loop copies and tunnels; nil counts nothing
}

// Handler forwards the requests of one proxy route. It is immutable after
// New but for the upstreams' health and per-loop counters, and is safe for
// concurrent use by all event loops.
type Handler struct {
	route   *handlers.Route
	conf    *config.Proxy
	ups     atomic.Pointer[upstreamSet] // in service now: the fixed ones and what discovery found (discover.go)
	fixed   []*Upstream                 // the entries of proxy.to that need no lookup
	disc    *discovery                  // resolves the dns+a:// and dns+srv:// entries; nil: none
	policy  upstream.Policy
	hashKey string // header-hash: the field name; cookie-hash: the cookie name
	rewrite []byte // replacement of the route's prefix; nil = path unchanged
	prefix  int    // length of the route's path prefix
	trusted []netip.Prefix
	retries int
	limits  upstream.Limits // of the pools of its upstreams' addresses
	h2c     bool            // the upstreams speak HTTP/2, over cleartext or TLS (h2c.go)

	connectTimeout int64 // ns
	headerTimeout  int64
	idleTimeout    int64

	rr []rrSlot // round-robin positions, one per loop

	budget *fds.Budget // the server's descriptor budget (budget.go); nil counts nothing

	log      atomic.Pointer[slog.Logger]
	checkers checkers
	closed   atomic.Bool
}

// rrSlot is one loop's round-robin counter, padded to its own cache line
// so that loops do not share one.
type rrSlot struct {
	n uint32
	_ [60]byte
}

// New compiles the proxy route rt (rt.Conf.Proxy set) into a Handler. It
// starts nothing: call Start to run active health checks.
func New(rt *handlers.Route, opts Options) (*Handler, error) {
	if rt.Conf.Proxy == nil {
		return nil, ErrNotProxy
	}
	return newHandler(rt, rt.Conf.Proxy, opts)
}

// newHandler compiles the upstreams of pc, for route rt.
func newHandler(rt *handlers.Route, pc *config.Proxy, opts Options) (*Handler, error) {
	if len(pc.To) == 0 {
		return nil, fmt.Errorf("proxy: route %q has no upstream", rt.Conf.Path)
	}
	if len(pc.To) > maxUpstreams {
		return nil, fmt.Errorf("proxy: route %q has %d upstreams; at most %d are supported", rt.Conf.Path, len(pc.To), maxUpstreams)
	}
	loops := max(opts.Loops, 1)
	h := &Handler{
		route:          rt,
		conf:           pc,
		prefix:         len(rt.Conf.Path),
		trusted:        pc.TrustedProxies,
		retries:        pc.Retries,
		connectTimeout: int64(pc.Timeouts.Connect),
		headerTimeout:  int64(pc.Timeouts.ResponseHeader),
		idleTimeout:    int64(pc.Timeouts.Idle),
		rr:             make([]rrSlot, loops),
		budget:         opts.Budget,
	}
	h.limits = upstream.Limits{
		MaxIdle:        pc.MaxIdlePerUpstream,
		MaxTotal:       pc.MaxConns,
		IdleTimeout:    pc.Timeouts.Idle,
		ConnectTimeout: pc.Timeouts.Connect,
		Budget:         opts.Budget,
		Retired:        &h.closed,
	}
	h.h2c = pc.Protocol != "http1" // h2c, h2, auto: through a transport, off the loops
	switch {
	case pc.StripPrefix:
		h.rewrite = []byte("/")
	case pc.Rewrite != "":
		h.rewrite = []byte(pc.Rewrite)
	}
	h.policy = upstream.PolicyOf(pc.LoadBalancing)
	switch h.policy {
	case upstream.HeaderHash:
		h.hashKey = pc.HashHeader
	case upstream.CookieHash:
		h.hashKey = pc.HashCookie
	}
	var found []config.Upstream
	for _, u := range pc.To {
		if u.Discover != "" {
			found = append(found, u)
			continue
		}
		h.fixed = append(h.fixed, h.newUpstream(u, u.Address, u.Raw, ""))
	}
	if len(found) > 0 {
		h.disc = newDiscovery(h, found, pc.Resolve)
	}
	h.ups.Store(newUpstreamSet(h.fixed))
	return h, nil
}

// newUpstream returns an upstream of the route at address: a fixed one
// (from "", entry is its own), or one that discovery found through the
// entry from (entry: its network, Host for the TLS server name, and
// whether it speaks TLS).
func (h *Handler) newUpstream(entry config.Upstream, address, raw, from string) *Upstream {
	loops := len(h.rr)
	network, host := entry.Network, entry.Host
	u := &Upstream{
		h:       h,
		network: network,
		address: address,
		raw:     raw,
		from:    from,
		host:    []byte(host),
		pools:   make([]atomic.Pointer[upstream.Pool], loops),
		stats:   make([]UpstreamStats, loops+1),
		lim:     &h.limits,
	}
	if from != "" {
		lim := h.limits
		lim.Retired = &u.gone // drained once discovery no longer finds it
		u.lim = &lim
	}
	u.tls, u.tlsID = upstreamTLS(h.conf, entry)
	pc := h.conf
	switch {
	case pc.Protocol == "auto":
		u.h2t = autoTransport(network, address, pc.Timeouts.Connect, pc.Timeouts.Idle, u.tls)
	case h.h2c && u.tls != nil:
		u.h2t = h2Transport(network, address, pc.Timeouts.Connect, u.tls)
	case h.h2c:
		u.h2t = h2cTransport(network, address, pc.Timeouts.Connect)
	}
	return u
}

// upstreamSet is the upstreams a request may be sent to, as one
// immutable value: discovery publishes a new one whole, and an exchange
// keeps the one it started with (its tried mask indexes it).
type upstreamSet struct {
	ups []*Upstream
	ids []uint64 // identity of each for rendezvous hashing: the hash of its address
}

func newUpstreamSet(ups []*Upstream) *upstreamSet {
	s := &upstreamSet{ups: ups, ids: make([]uint64, len(ups))}
	for i, u := range ups {
		s.ids[i] = upstream.HashString(u.network + " " + u.address)
	}
	return s
}

// index returns u's position in the set, or -1.
func (s *upstreamSet) index(u *Upstream) int {
	for i, v := range s.ups {
		if v == u {
			return i
		}
	}
	return -1
}

// maxUpstreams bounds a route's upstreams: an exchange remembers the ones
// it tried in a 64-bit mask.
const maxUpstreams = 64

// Start begins the active health checks (when health_check.path is set)
// and sets the logger for upstream state changes. With dns+a:// or
// dns+srv:// entries it resolves them once before it returns (each query
// bounded by resolve.timeout), then again in a goroutine of their own as
// their TTLs run out. Call it once.
func (h *Handler) Start(log *slog.Logger) {
	h.log.Store(log)
	if t := h.conf.TLS; t != nil && t.InsecureSkipVerify {
		log.Warn("proxy: the upstreams' TLS certificates are not verified (insecure_skip_verify)", "route", h.route.Conf.Path)
	}
	if h.conf.HealthCheck.Path != "" {
		for _, u := range h.fixed {
			h.checkers.start(u, &h.conf.HealthCheck)
		}
	}
	if h.disc != nil {
		h.disc.start()
	}
}

// Close stops the health checks and lets the loops' pools of this route
// drain: idle connections close at their next sweep. Requests in flight
// finish. It implements io.Closer for the router.
func (h *Handler) Close() error {
	if h.closed.Swap(true) {
		return nil
	}
	if h.disc != nil {
		h.disc.stop()
	}
	h.checkers.stopAll()
	for _, u := range h.ups.Load().ups {
		if u.from != "" {
			u.gone.Store(true) // its pools keep nothing idle (the fixed ones' retire with h.closed)
		}
		if u.h2t != nil {
			u.h2t.CloseIdleConnections()
		}
	}
	return nil
}

// Upstreams returns the route's upstreams now: the fixed ones in
// configured order, then those discovery found. The slice is shared: do
// not modify it. Safe for concurrent use.
func (h *Handler) Upstreams() []*Upstream { return h.ups.Load().ups }

// logf logs an upstream event at level, when a logger is set and the
// level is enabled.
func (h *Handler) logf(level slog.Level, msg string, u *Upstream, args ...any) {
	l := h.log.Load()
	if l == nil || !l.Enabled(context.Background(), level) {
		return
	}
	args = append([]any{"route", h.route.Conf.Path, "upstream", u.raw}, args...)
	l.Log(context.Background(), level, msg, args...)
}

// pick chooses an upstream of set for a request on loop lp by the
// route's policy, among those in service and not yet tried (tried is a
// bit mask of indexes in set; see upstream.Candidates); nil when every
// upstream was tried or the set is empty. key is the request's hashed
// header or cookie (header-hash, cookie-hash; 0 = none: the client
// address ip stands in).
func (h *Handler) pick(lp *Loop, set *upstreamSet, ip netip.Addr, key uint64, tried uint64, now int64) *Upstream {
	ups := set.ups
	if len(ups) == 0 {
		return nil
	}
	var inService uint64
	for i, u := range ups {
		if u.Available(now) {
			inService |= 1 << i
		}
	}
	c := upstream.Choice{
		Turn: &h.slot(lp).n,
		Load: func(i int) int { return lp.pool(ups[i]).Active },
		Rand: lp.rand,
		IDs:  set.ids,
	}
	if h.policy.Hashing() {
		c.Hash = key
		if key == 0 {
			c.Hash = hashAddr(ip)
		}
	}
	i := h.policy.Choose(upstream.Candidates(len(ups), inService, tried), len(ups), c)
	if i < 0 {
		return nil
	}
	return ups[i]
}

// requestKey returns the hash of what chooses the upstream under
// header-hash (the first field named hash_header) and cookie-hash (the
// first cookie named hash_cookie), or 0 when the request has none (or
// the policy is another).
func (h *Handler) requestKey(req *codec.Request) uint64 {
	var v []byte
	switch h.policy {
	case upstream.HeaderHash:
		v = req.Header(h.hashKey)
	case upstream.CookieHash:
		v = cookieValue(req.Headers, h.hashKey)
	default:
		return 0
	}
	if len(v) == 0 {
		return 0
	}
	return upstream.HashBytes(v)
}

// cookieValue returns the value of the first cookie named name in the
// Cookie fields of hs (HTTP/2 may split them in several), or nil.
func cookieValue(hs []codec.Header, name string) []byte {
	for i := range hs {
		if !asciiEqualFold(hs[i].Name, "cookie") {
			continue
		}
		v := hs[i].Value
		for len(v) > 0 {
			var pair []byte
			if j := bytes.IndexByte(v, ';'); j >= 0 {
				pair, v = v[:j], v[j+1:]
			} else {
				pair, v = v, nil
			}
			pair = bytes.TrimLeft(pair, " \t")
			if len(pair) > len(name) && pair[len(name)] == '=' && string(pair[:len(name)]) == name {
				return bytes.TrimRight(pair[len(name)+1:], " \t")
			}
		}
	}
	return nil
}

// asciiEqualFold reports whether b equals the lower-case s, ignoring
// ASCII case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if b[i]|0x20 != s[i] {
			return false
		}
	}
	return true
}

// slot returns loop lp's round-robin counter for the route. A loop beyond
// the count the route was built for (a reload that changed event_loops,
// which takes effect only on restart) keeps its counter in the Loop.
func (h *Handler) slot(lp *Loop) *rrSlot {
	if lp.idx < len(h.rr) {
		return &h.rr[lp.idx]
	}
	s := lp.rr[h]
	if s == nil {
		s = &rrSlot{}
		lp.rr[h] = s
	}
	return s
}

// hashAddr is FNV-1a over the 16-byte form of a (IPv4 mapped), so the
// same client always lands on the same upstream.
func hashAddr(a netip.Addr) uint64 {
	b := a.As16()
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// isTrusted reports whether a (a client's address) is one of the trusted
// proxies.
func (h *Handler) isTrusted(a netip.Addr) bool {
	if len(h.trusted) == 0 || !a.IsValid() {
		return false
	}
	a = a.Unmap()
	for _, p := range h.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Serve implements handlers.Handler: it starts forwarding c.Req and
// answers with a pending response, or answers an error at once when the
// request cannot be forwarded (no Exchange that leads to the loop's
// proxy state, or no sink or body source: 500; no upstream left, or a
// dead connection and no retry: 502). It runs on the client's event loop and does not allocate once the
// loop's buffers and pools have grown.
func (h *Handler) Serve(c *handlers.Ctx) {
	lp := LoopOf(c.Exchange)
	if lp == nil || c.Sink == nil || c.Body == nil {
		h.errorNow(c, 500)
		return
	}
	ex := lp.getExchange()
	ex.setup(h, c.Exchange, c)
	begin := ex.begin
	if h.h2c {
		begin = func() int { return ex.beginH2C(c) }
	}
	if status := begin(); status != 0 {
		lp.putExchange(ex)
		h.errorNow(c, status)
		return
	}
	c.Resp.Pending = ex
}

// LoopOf returns the proxy state of the loop exchange x runs on, or nil
// when x is nil or its server keeps none. It neither locks nor allocates.
func LoopOf(x handlers.Exchange) *Loop {
	if x == nil {
		return nil
	}
	lp, _ := x.Local(handlers.LocalUpstreams).(*Loop)
	return lp
}

// errorNow answers an error that the server renders like any response,
// with the route's response rules (the router leaves them to us).
func (h *Handler) errorNow(c *handlers.Ctx, status int) {
	c.Error(status)
	h.route.ApplyResponseHeaders(&c.Resp)
}

// respLimits bound upstream response heads.
var respLimits = codec.Limits{HeaderBytes: codec.DefaultResponseHeaderBytes, MaxHeaders: 256}
