// Package app runs gale: it owns the gnet engine and its event handler,
// the loops, the listeners, the choice of each connection's protocol,
// the timeout sweep, graceful stop and configuration reload. The
// protocols have rooms of their own below it: the HTTP/1.1 engine
// (app/h1), the HTTP/2 engine (app/h2conn) and the TLS transport
// (app/tlsconn), over what they share (app/wire: the connection's
// transport, the per-loop services, the compiled settings, and the
// wire.Engine interface through which app drives an engine). Package
// accesslog formats and writes the request lines the engines record.
//
// Every connection belongs to one event loop for its whole life and all of
// its state is touched only from that loop (gnet calls OnOpen, OnTraffic and
// OnClose on the owning loop; the timeout sweep is posted to each loop with
// EventLoop.Execute). Work that would block leaves the loop on a goroutine
// and comes back through Conn.Wake.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/accesslog"
	"gale/acme"
	"gale/app/h3"
	"gale/app/wire"
	"gale/cache"
	"gale/cluster"
	"gale/config"
	"gale/handlers"
	"gale/perloop"
)

// tick is how often the timeout sweep runs on every loop. Timeouts are
// therefore enforced with up to this much slack.
const tick = 100 * time.Millisecond

// Check compiles cfg as New and a reload do (routes, handlers, upstreams)
// without starting anything, so that a config it accepts is one the
// server runs: `gale validate` calls it after config.Load.
func Check(cfg *config.Config) error {
	s, err := wire.Compile(cfg, handlers.WithLimitStore(handlers.OfflineLimitStore(cfg.Cluster.Instances)))
	if err != nil {
		return err
	}
	return s.Router.Close()
}

// Server is a running (or ready to run) gale instance. Its exported
// methods are safe for concurrent use.
type Server struct {
	gnet.BuiltinEventEngine

	log   *slog.Logger
	sh    wire.Shared // what the loops and engines read: settings, budget, access log, stop flag, proxy state
	addrs []string    // resolved "host:port" per listener

	perAddr *wire.AddrCounts // connections open per client address, for max_conns_per_address (screen.go)

	engMu   sync.Mutex
	eng     gnet.Engine
	booted  chan struct{}
	stopped chan struct{}

	loops     perloop.Map[*loop]
	wireLoops atomic.Pointer[[]*wire.Loop] // the same loops' services, for HTTP/3 (http3.go)

	open     atomic.Int64 // client connections open in gnet across loops (for stop)
	stopping *atomic.Bool // a stop began: health ready routes answer 503 (set before the drain delay; sh.Draining follows it)

	files *cache.Cache // the file cache of static routes (cache.go)

	ops opsState // the metrics listener and reload counters (metrics.go)

	refusals   refusals             // runs of refused connections, for the log (refusals.go)
	listeners  []listenerInfo       // per listener, in config order: TLS and redirect state, protocols (listeners.go)
	anyTLS     bool                 // some listener is TLS or redirect_to_https
	sameProtos config.Protocols     // the protocols of every listener when all are plain and alike, else 0 (listeners.go)
	quic       []*h3.Listener       // the HTTP/3 sides of the listeners with http3, while running (http3.go)
	anchored   atomic.Bool          // the loops were looked for and HTTP/3 started (http3.go)
	acme       *acme.Manager        // the automatic certificates of tls.automatic listeners; nil for none (acme.go)
	sites      []*acme.Site         // per listener: its automatic certificates, or nil
	instance   string               // this instance's name (cluster.go)
	cluster    *cluster.Store       // the shared store of cluster.redis; nil = none (cluster.go)
	certs      *cluster.CertStorage // the store's certificate storage, once asked for (cluster.go)
}

// New validates and compiles cfg into a Server. It binds nothing yet, but
// resolves every listen address (port 0 becomes a free port) and refuses
// addresses that another process already listens on.
func New(cfg *config.Config, log *slog.Logger) (s *Server, err error) {
	budget, warn, err := newBudget(int64(raiseFileLimit()), cfg)
	if err != nil {
		return nil, err
	}
	if warn != "" {
		log.Warn(warn)
	}
	files := wire.NewFileCache(cfg, budget)
	stopping := new(atomic.Bool)
	store := openCluster(cfg, log)
	set, err := wire.CompileBudget(cfg, budget, append(clusterOptions(store), handlers.WithCache(files), handlers.WithStopping(stopping))...)
	if err != nil {
		files.Close()
		if store != nil {
			store.Close()
		}
		return nil, err
	}
	s = &Server{log: log, booted: make(chan struct{}), stopped: make(chan struct{}), files: files, stopping: stopping, perAddr: wire.NewAddrCounts()}
	s.instance, s.cluster = instanceName(cfg), store
	s.subscribePurges()
	defer func() {
		if err != nil && store != nil {
			store.Close()
		}
	}()
	s.sh.Budget, s.sh.Log = budget, log
	s.sh.Resets = wire.NewResetRates()
	s.sh.Set.Store(set)
	s.startProxies(set)
	for _, l := range cfg.Listen {
		a, err := resolveListen(l.Address, l.HTTP3)
		if err != nil {
			return nil, err
		}
		s.addrs = append(s.addrs, a)
	}
	if err := s.setupListeners(cfg); err != nil {
		s.stopACME()
		return nil, err
	}
	if err := s.openMetrics(cfg); err != nil {
		s.stopACME()
		return nil, err
	}
	if cfg.AccessLog.Path != "" {
		s.sh.Access, err = accesslog.Open(cfg.AccessLog, log)
		if err != nil {
			s.stopACME()
			return nil, fmt.Errorf("access_log: %w", err)
		}
	}
	return s, nil
}

// Addrs returns the addresses the server listens on, ports resolved.
func (s *Server) Addrs() []string { return append([]string(nil), s.addrs...) }

// Booted is closed once the engine accepts connections.
func (s *Server) Booted() <-chan struct{} { return s.booted }

// Run serves until Stop is called or the engine fails. It blocks.
func (s *Server) Run() error {
	defer close(s.stopped)
	cfg := s.sh.Set.Load().Cfg
	sc := cfg.Server
	lb := gnet.RoundRobin
	switch sc.LoadBalancing {
	case "least-connections":
		lb = gnet.LeastConnections
	case "source-addr-hash":
		lb = gnet.SourceAddrHash
	}
	nodelay := gnet.TCPDelay
	if sc.TCPNoDelay {
		nodelay = gnet.TCPNoDelay
	}
	loops := loopCount(sc)
	spareProc(loops)
	opts := []gnet.Option{
		gnet.WithMulticore(loops > 1),
		gnet.WithNumEventLoop(loops),
		gnet.WithReusePort(sc.ReusePort),
		gnet.WithLoadBalancing(lb),
		gnet.WithLockOSThread(sc.LockOSThread),
		gnet.WithEdgeTriggeredIO(sc.EdgeTriggered),
		gnet.WithReadBufferCap(sc.ReadBuffer),
		gnet.WithWriteBufferCap(sc.WriteBuffer),
		gnet.WithTCPNoDelay(nodelay),
		gnet.WithTicker(true),
		// SO_REUSEADDR on the listeners (and so on the connections they
		// accept): without it the TIME_WAIT sockets of closed connections
		// keep a restarted gale from binding its port for a minute. It
		// does not allow binding a port another socket listens on.
		gnet.WithReuseAddr(true),
		gnet.WithLogger(gnetLogger{s.log}),
	}
	if sc.SocketRecvBuffer > 0 {
		opts = append(opts, gnet.WithSocketRecvBuffer(sc.SocketRecvBuffer))
	}
	if sc.SocketSendBuffer > 0 {
		opts = append(opts, gnet.WithSocketSendBuffer(sc.SocketSendBuffer))
	}
	protoAddrs := make([]string, len(s.addrs))
	for i, a := range s.addrs {
		protoAddrs[i] = "tcp://" + a
	}
	stopWatch := make(chan struct{})
	if err := s.startHTTP3(); err != nil {
		s.closeMetrics()
		s.stopACME()
		return err
	}
	go s.watchCertificates(stopWatch, certPoll)
	go s.runMetrics()
	err := gnet.Rotate(s, protoAddrs, opts...)
	close(stopWatch)
	s.stopACME()
	s.closeHTTP3()
	s.closeMetrics()
	if s.sh.Access != nil {
		s.sh.Access.Close()
	}
	s.files.Close()
	s.stopProxies()
	if s.cluster != nil {
		s.cluster.Close()
	}
	return err
}

// OnBoot implements gnet.EventHandler.
func (s *Server) OnBoot(eng gnet.Engine) gnet.Action {
	s.engMu.Lock()
	s.eng = eng
	s.engMu.Unlock()
	if s.acme != nil {
		s.acme.Start() // the listeners accept: challenges can be answered
	}
	if len(s.quic) > 0 {
		return gnet.None // HTTP/3 needs the loops running: the first tick boots it
	}
	close(s.booted)
	return gnet.None
}

// Reload swaps in cfg for new requests: routes, handler settings, limits,
// timeouts and the Server header, and the HTTP/2 settings for connections
// accepted afterwards. Settings that need new listeners or a new
// engine are left as they are and returned as notes.
func (s *Server) Reload(cfg *config.Config) (notes []string, err error) {
	defer func() { s.ops.reloaded(err) }()
	set, err := wire.CompileBudget(cfg, s.sh.Budget, append(clusterOptions(s.cluster), handlers.WithCache(s.files), handlers.WithStopping(s.stopping))...)
	if err != nil {
		return nil, err
	}
	old := s.sh.Set.Load().Cfg
	for i := range s.listeners {
		// The running listeners keep their protocols until a restart.
		where := "running listener " + s.addrs[i]
		if i < len(cfg.Listen) && cfg.Listen[i].Address == old.Listen[i].Address {
			where = wire.ListenerWhere(cfg, &cfg.Listen[i])
		}
		if err := wire.Speaks(cfg, set.HTTP2On, where, s.listeners[i].protos); err != nil {
			s.retire(set)
			return nil, err
		}
	}
	if fmt.Sprint(listenAddrs(old)) != fmt.Sprint(listenAddrs(cfg)) {
		notes = append(notes, "listen changed: restart gale to apply it")
	} else {
		tlsNotes, err := s.reloadTLS(cfg)
		if err != nil {
			s.retire(set)
			return nil, err
		}
		notes = append(notes, tlsNotes...)
	}
	reactor := func(c *config.Config) config.Server {
		v := c.Server
		v.Limits, v.Timeouts, v.ServerHeader, v.MaxBufferedOutput = config.Limits{}, config.Timeouts{}, "", 0
		v.HTTP2 = config.HTTP2{}
		v.TrustedProxies = nil // the router's, rebuilt by the reload
		return v
	}
	if !reflect.DeepEqual(reactor(old), reactor(cfg)) {
		notes = append(notes, "server reactor settings changed: restart gale to apply them")
	}
	if old.AccessLog != cfg.AccessLog || old.Log != cfg.Log {
		notes = append(notes, "log or access_log changed: restart gale to apply them")
	}
	notes = append(notes, cacheNotes(old, cfg)...)
	notes = append(notes, metricsNotes(old, cfg)...)
	notes = append(notes, adminNotes(old, cfg)...)
	if !reflect.DeepEqual(old.Cluster, cfg.Cluster) {
		notes = append(notes, "cluster changed: restart gale to apply it (the running instance keeps its store and name)")
	}
	s.startProxies(set)
	prev := s.sh.Set.Swap(set)
	s.files.Purge() // entries keep the profile of the routes that loaded them
	// Loops load the settings once per OnTraffic call and finish with
	// them before they return, so after a grace period nothing uses the
	// old router: release the directories its static routes hold open.
	time.AfterFunc(5*time.Second, func() { s.retire(prev) })
	return notes, nil
}

// retire closes what a replaced router holds and gives its descriptors
// back to the budget.
func (s *Server) retire(set *wire.Settings) {
	_ = set.Router.Close()
	s.sh.Budget.Release(set.Dirs)
}

func listenAddrs(c *config.Config) []string {
	var a []string
	for _, l := range c.Listen {
		a = append(a, l.Address)
	}
	return a
}

// Stop stops gracefully. Health ready routes answer 503 at once; for
// timeouts.drain (when set) everything else is served as usual; then new
// connections are refused, idle connections close, responses in flight
// finish with "Connection: close", and once no connection is left (or ctx
// ends) the engine stops. It returns when Run has returned or ctx is done.
// StopTimeout is the deadline to give ctx.
func (s *Server) Stop(ctx context.Context) error {
	select {
	case <-s.booted:
	case <-s.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	s.stopping.Store(true)
	if d := s.sh.Set.Load().Cfg.Server.Timeouts.Drain; d > 0 {
		// Readiness fails first, while everything else is served as
		// usual, so that load balancers stop sending before any
		// connection is refused.
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	s.sh.Draining.Store(true)
	quicDone := s.shutdownHTTP3(ctx)
	for _, l := range s.loopSlice() {
		l := l
		_ = l.EL.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			l.drain()
			return nil
		}))
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
wait:
	for s.open.Load() > 0 {
		select {
		case <-ctx.Done():
			break wait
		case <-t.C:
		}
	}
	select { // HTTP/3 requests in flight run on the loops: they finish first
	case <-quicDone:
	case <-ctx.Done():
	}
	s.engMu.Lock()
	eng := s.eng
	s.engMu.Unlock()
	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go cancelWhenClosed(stopCtx, cancel, s.stopped)
	if err := eng.Stop(stopCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		s.log.Warn("engine stop", "err", err)
	}
	select {
	case <-s.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cancelWhenClosed cancels ctx when done closes. gnet's Engine.Stop polls
// for the engine's end every 500ms; Run returning (done) is that end, so a
// stop returns as soon as it happens rather than at the next poll.
func cancelWhenClosed(ctx context.Context, cancel context.CancelFunc, done <-chan struct{}) {
	select {
	case <-done:
		cancel()
	case <-ctx.Done():
	}
}

// StopTimeout is how long a graceful stop may take under the current
// config: timeouts.drain, then timeouts.shutdown.
func (s *Server) StopTimeout() time.Duration {
	t := s.sh.Set.Load().Cfg.Server.Timeouts
	return t.Drain + t.Shutdown
}

// Stats sums every loop's counters.
func (s *Server) Stats() StatsSnapshot {
	var d StatsSnapshot
	for _, l := range s.loopSlice() {
		addStats(&d, &l.Stats)
	}
	d.Budget = s.sh.Budget.Snapshot()
	return d
}

func (s *Server) loopSlice() []*loop { return s.loops.All() }

// loopFor returns the state of event loop el, creating it on first use.
// Only OnOpen calls it, on el itself.
func (s *Server) loopFor(el gnet.EventLoop) *loop {
	return s.loops.Get(el, func() *loop {
		l := newLoop(s, el)
		s.addWireLoop(l)
		return l
	})
}

// OnOpen implements gnet.EventHandler.
func (s *Server) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	if uc, ok := upstreamOf(c); ok {
		uc.OnOpen(c)
		return nil, gnet.None
	}
	if _, ok := anchorOf(c); ok {
		s.loopFor(c.EventLoop())
		return nil, gnet.None
	}
	l := s.loopFor(c.EventLoop())
	if s.sh.Draining.Load() {
		return s.refuse(c, l, "")
	}
	if why := s.admit(); why != "" {
		return s.refuse(c, l, why)
	}
	s.open.Add(1)
	l.open(c)
	s.attachTransport(c)
	if cs, ok := c.Context().(*conn); ok && !cs.proxyWait && !s.screen(cs, cs.Remote) {
		return nil, gnet.Close
	}
	return nil, gnet.None
}

// OnClose implements gnet.EventHandler.
func (s *Server) OnClose(c gnet.Conn, err error) gnet.Action {
	if uc, ok := upstreamOf(c); ok {
		uc.OnClose(c, err)
		return gnet.None
	}
	if a, ok := anchorOf(c); ok {
		s.dropAnchor(a)
		return gnet.None
	}
	if cs, ok := c.Context().(*conn); ok {
		cs.loop.closed(cs)
		s.open.Add(-1)
		s.unscreen(cs)
		s.leave(cs)
	}
	return gnet.None
}

// OnTraffic implements gnet.EventHandler.
func (s *Server) OnTraffic(c gnet.Conn) gnet.Action {
	if uc, ok := upstreamOf(c); ok {
		return uc.OnTraffic(c)
	}
	if _, ok := anchorOf(c); ok {
		_, _ = c.Discard(-1)
		return gnet.None
	}
	cs, ok := c.Context().(*conn)
	if !ok {
		return gnet.Close
	}
	return cs.onTraffic()
}

// OnTick implements gnet.EventHandler. It runs on gnet's ticker goroutine,
// not on a loop, so it only posts a sweep to every loop.
func (s *Server) OnTick() (time.Duration, gnet.Action) {
	if len(s.quic) > 0 && s.anchored.CompareAndSwap(false, true) {
		go s.bootHTTP3()
	}
	for _, l := range s.loopSlice() {
		_ = l.EL.Execute(context.Background(), l.sweepFn)
	}
	s.sh.Proxies.Tick()
	return tick, gnet.None
}
