package wire

import (
	"fmt"

	"gale/cache"
	"gale/codec"
	"gale/config"
	"gale/fds"
	"gale/h2"
	"gale/handlers"
)

// Settings is everything a request reads from the configuration, swapped
// as a whole on reload. Loops load it once per OnTraffic call.
type Settings struct {
	Cfg          *config.Config
	Router       *handlers.Router
	Limits       codec.Limits
	ServerHeader []byte
	ReadHeader   int64 // nanoseconds
	ReadBody     int64
	Idle         int64
	Write        int64
	MaxOut       int       // server.max_buffered_output
	HTTP2        h2.Config // server.http2, for new HTTP/2 connections
	HTTP2On      bool      // HTTP/2 is offered (server.http2.enabled)
	Forwards     bool      // some route reads request bodies (proxy, FastCGI): HTTP/2 keeps a body for such a route's handler
	Dirs         int64     // descriptors the router holds (static roots), counted in the budget
}

// Compile builds the settings of cfg outside a server (tests, `gale
// validate`): nothing is counted in a descriptor budget.
func Compile(cfg *config.Config, opts ...handlers.Option) (*Settings, error) {
	return CompileBudget(cfg, nil, opts...)
}

// CompileBudget builds the settings of cfg, counting the descriptors its
// router holds open in b (it fails when b has no room for them) and
// giving b to the proxy routes.
func CompileBudget(cfg *config.Config, b *fds.Budget, opts ...handlers.Option) (*Settings, error) {
	_, h2On := compileHTTP2(cfg)
	for i := range cfg.Listen {
		l := &cfg.Listen[i]
		if err := Speaks(cfg, h2On, ListenerWhere(cfg, l), l.Protocols); err != nil {
			return nil, err
		}
	}
	rt, err := handlers.Build(cfg, append(opts, proxyOption(cfg, b), fastcgiOption(b), forwardAuthOption(cfg, b))...)
	if err != nil {
		return nil, err
	}
	dirs := int64(rt.OpenDirs())
	if !b.Acquire(dirs) {
		_ = rt.Close()
		return nil, fmt.Errorf("server: no descriptors left for the %d root directories of static routes", dirs)
	}
	s := &Settings{
		Cfg:    cfg,
		Router: rt,
		Limits: codec.Limits{
			RequestLine: cfg.Server.Limits.RequestLine,
			HeaderBytes: cfg.Server.Limits.HeaderBytes,
			BodyBytes:   cfg.Server.Limits.BodyBytes,
		},
		ReadHeader: int64(cfg.Server.Timeouts.ReadHeader),
		ReadBody:   int64(cfg.Server.Timeouts.ReadBody),
		Idle:       int64(cfg.Server.Timeouts.Idle),
		Write:      int64(cfg.Server.Timeouts.Write),
		MaxOut:     cfg.Server.MaxBufferedOutput,
		Dirs:       dirs,
	}
	if cfg.Server.ServerHeader != "" {
		s.ServerHeader = []byte(cfg.Server.ServerHeader)
	}
	s.HTTP2, s.HTTP2On = compileHTTP2(cfg)
	s.Forwards = forwards(cfg)
	return s, nil
}

// compileHTTP2 turns server.http2 into the core's limits, and says whether
// HTTP/2 is offered.
func compileHTTP2(cfg *config.Config) (h2.Config, bool) {
	c := cfg.Server.HTTP2
	hc := h2.Config{
		MaxConcurrentStreams: c.MaxConcurrentStreams,
		InitialStreamWindow:  c.InitialStreamWindow,
		InitialConnWindow:    c.InitialConnWindow,
		MaxFrameSize:         c.MaxFrameSize,
		MaxHeaderListSize:    c.MaxHeaderListSize,
		MaxRequests:          c.MaxRequests,
		MaxBodyBytes:         cfg.Server.Limits.BodyBytes,
	}
	return hc, c.Enabled
}

// forwards reports whether any route of cfg proxies or runs FastCGI (its
// handler reads request bodies) or asks an authentication service
// (forward_auth): its exchanges need the loops' upstream state.
func forwards(cfg *config.Config) bool {
	for i := range cfg.Routes {
		if cfg.Routes[i].Proxy != nil || cfg.Routes[i].FastCGI != nil || cfg.Routes[i].ForwardAuth != nil {
			return true
		}
	}
	return false
}

// NewFileCache makes the server's file cache, which counts the files it
// keeps open for queued loads in b.
func NewFileCache(cfg *config.Config, b *fds.Budget) *cache.Cache {
	o := cache.FromConfig(cfg.Cache)
	o.Budget = b
	return cache.New(o)
}
