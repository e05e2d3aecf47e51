package handlers

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"

	"gale/cache"
	"gale/codec"
	"gale/config"
)

// Sentinel errors of Build; the returned error wraps one of them and names
// the route's position in the config file.
var (
	ErrNoHandler      = errors.New("handlers: route has no handler (one of static, proxy, respond, redirect)")
	ErrManyHandlers   = errors.New("handlers: route has more than one handler")
	ErrDuplicateRoute = errors.New("handlers: another route has the same host and path")
	ErrBadPath        = errors.New("handlers: route path must start with \"/\"")
	ErrPathNotNormal  = errors.New("handlers: route path is not in normal form (requests are matched after normalising, so it would never match)")
	ErrBadHost        = errors.New("handlers: bad route host")
	ErrBadStatic      = errors.New("handlers: bad static route")
	ErrBadRedirect    = errors.New("handlers: bad redirect route")
	ErrBadRespond     = errors.New("handlers: bad respond route")
	ErrNoProxy        = errors.New("handlers: proxy route, but no proxy handler factory was given to Build (WithProxy)")
)

// maxHostLen is the longest host name (RFC 1035: 253 bytes without the
// trailing dot) the router compares against configured hosts. A longer
// Host cannot name a configured host and selects the group of routes
// without a host.
const maxHostLen = 253

// Route is a compiled route: where it matches and what serves it. A Route
// is immutable after Build and safe for concurrent use.
type Route struct {
	Conf    *config.Route // the route as configured
	Handler Handler       // serves matched requests

	prefix   []byte    // Conf.Path
	subtree  bool      // prefix ends with "/": it matches only paths under it
	forwards bool      // the handler forwards requests (proxy) and applies the header rules itself
	reqOps   headerOps // request header rules
	respOps  headerOps // response header rules
}

// ApplyRequestHeaders applies the route's request header rules (remove,
// set, add) to r.Headers. It allocates only when r.Headers has to grow
// past its capacity. The added slices are config memory, valid for the
// Router's life. Safe for concurrent use with distinct requests.
// Rules naming Host change the header table only, not r.Host.
func (rt *Route) ApplyRequestHeaders(r *codec.Request) {
	if !rt.reqOps.empty() {
		r.Headers = rt.reqOps.apply(r.Headers)
	}
}

// ApplyResponseHeaders applies the route's response header rules (remove,
// set, add) to resp. Router.Serve calls it after the handler, except on
// proxy routes: their handler applies both rule sets itself, where
// forwarding puts them (request rules after hop-by-hop fields are
// removed, response rules on the upstream's response head and on the
// handler's own error responses).
// It allocates only when resp.Headers has to grow past its capacity.
func (rt *Route) ApplyResponseHeaders(resp *Response) {
	if !rt.respOps.empty() {
		resp.Headers = rt.respOps.apply(resp.Headers)
	}
}

// group is the routes of one host selector, longest prefix first.
type group struct {
	routes []*Route
}

// Router maps a request's host and path to a route. It is immutable after
// Build and safe for concurrent use; lookups take no locks and do not
// allocate.
type Router struct {
	exact  map[string]*group // lower-case host -> its routes
	wild   map[string]*group // "example.com" for "*.example.com"
	nohost *group            // routes without a host; nil when none
	routes []*Route          // every route, in file order
	closer []func() error    // resources held by handlers, released by Close
	opts   buildOptions

	// Build state of static routes.
	cfg     *config.Config
	mime    *mimeTable
	gen     uint64 // this Build's number
	statics int    // static routes compiled so far
}

// ProxyFactory builds the handler of a proxy route (rt.Conf.Proxy is set)
// for Build: the proxy lives in its own package, which this one does not
// import. The Route's Conf, prefix and header rules are compiled when the
// factory runs. When the returned handler implements io.Closer, the
// Router's Close closes it.
type ProxyFactory func(rt *Route) (Handler, error)

// Option configures Build.
type Option func(*buildOptions)

type buildOptions struct {
	proxy ProxyFactory
	cache *cache.Cache
}

// WithCache gives Build the file cache static routes serve from (one per
// server, shared by the routers of successive reloads; the caller purges
// it when a new router replaces an old one, and closes it). Without it,
// Build makes a cache from cfg.Cache for the Router alone, closed by
// Router.Close.
func WithCache(c *cache.Cache) Option {
	return func(o *buildOptions) { o.cache = c }
}

// buildGen numbers Builds, so that the cache keys of routers built one
// after another never collide (see keyPrefixFor).
var buildGen atomic.Uint64

// WithProxy gives Build the factory of proxy route handlers. Without it a
// config with a proxy route fails to build with ErrNoProxy.
func WithProxy(f ProxyFactory) Option {
	return func(o *buildOptions) { o.proxy = f }
}

// Build compiles cfg's routes into a Router. Errors name the route's file
// position. The Router keeps references to cfg's routes (Route.Conf); cfg
// must not be modified afterwards. Static routes hold their root directory
// open until Close.
func Build(cfg *config.Config, opts ...Option) (*Router, error) {
	rt := &Router{exact: map[string]*group{}, wild: map[string]*group{}, cfg: cfg}
	for _, o := range opts {
		o(&rt.opts)
	}
	if err := rt.build(cfg); err != nil {
		rt.Close()
		return nil, err
	}
	return rt, nil
}

func (rt *Router) build(cfg *config.Config) error {
	mime := newMimeTable(cfg.MimeTypes)
	rt.gen = buildGen.Add(1)
	rt.mime = mime
	type key struct{ host, path string }
	seen := map[key]bool{}
	for i := range cfg.Routes {
		rc := &cfg.Routes[i]
		r, err := rt.compileRoute(rc)
		if err != nil {
			return routeError(cfg, rc, err)
		}
		host := normalizeHost(rc.Host)
		k := key{host, rc.Path}
		if seen[k] {
			return routeError(cfg, rc, ErrDuplicateRoute)
		}
		seen[k] = true
		var g *group
		switch {
		case host == "":
			if rt.nohost == nil {
				rt.nohost = &group{}
			}
			g = rt.nohost
		case strings.HasPrefix(host, "*."):
			suffix := host[2:]
			if suffix == "" || strings.ContainsAny(suffix, "*:/ ") || len(suffix) > maxHostLen {
				return routeError(cfg, rc, fmt.Errorf("%w %q", ErrBadHost, rc.Host))
			}
			if g = rt.wild[suffix]; g == nil {
				g = &group{}
				rt.wild[suffix] = g
			}
		default:
			if strings.ContainsAny(host, "*/ ") || len(host) > maxHostLen {
				return routeError(cfg, rc, fmt.Errorf("%w %q", ErrBadHost, rc.Host))
			}
			if g = rt.exact[host]; g == nil {
				g = &group{}
				rt.exact[host] = g
			}
		}
		g.routes = append(g.routes, r)
		rt.routes = append(rt.routes, r)
	}
	sortGroup := func(g *group) {
		// Longest prefix first; equal lengths never match the same path
		// ("/a/" and "/ab" are disjoint), the path breaks ties for a
		// deterministic order.
		slices.SortStableFunc(g.routes, func(a, b *Route) int {
			if len(a.prefix) != len(b.prefix) {
				return len(b.prefix) - len(a.prefix)
			}
			return strings.Compare(a.Conf.Path, b.Conf.Path)
		})
	}
	for _, g := range rt.exact {
		sortGroup(g)
	}
	for _, g := range rt.wild {
		sortGroup(g)
	}
	if rt.nohost != nil {
		sortGroup(rt.nohost)
	}
	return nil
}

func routeError(cfg *config.Config, rc *config.Route, err error) error {
	where := fmt.Sprintf("%d:%d", rc.Pos.Line, rc.Pos.Col)
	if cfg.File != "" {
		where = cfg.File + ":" + where
	}
	return fmt.Errorf("%s: route host %q path %q: %w", where, rc.Host, rc.Path, err)
}

func (rt *Router) compileRoute(rc *config.Route) (*Route, error) {
	if !strings.HasPrefix(rc.Path, "/") {
		return nil, fmt.Errorf("%w: %q", ErrBadPath, rc.Path)
	}
	if err := checkNormalPrefix(rc.Path); err != nil {
		return nil, err
	}
	r := &Route{
		Conf:    rc,
		prefix:  []byte(rc.Path),
		subtree: strings.HasSuffix(rc.Path, "/"),
		reqOps:  compileHeaderOps(rc.Headers.Request),
		respOps: compileHeaderOps(rc.Headers.Response),
	}
	n := 0
	if rc.Static != nil {
		n++
	}
	if rc.Respond != nil {
		n++
	}
	if rc.Redirect != nil {
		n++
	}
	if rc.Proxy != nil {
		n++
	}
	switch {
	case n == 0:
		return nil, ErrNoHandler
	case n > 1:
		return nil, ErrManyHandlers
	}
	var err error
	switch {
	case rc.Static != nil:
		var s *staticHandler
		s, err = newStatic(rc.Static, r, rt.staticEnv())
		if err == nil {
			rt.closer = append(rt.closer, s.close)
			r.Handler = s
		}
	case rc.Respond != nil:
		r.Handler, err = newRespond(rc.Respond)
	case rc.Redirect != nil:
		r.Handler, err = newRedirect(rc.Redirect)
	case rc.Proxy != nil:
		if rt.opts.proxy == nil {
			return nil, ErrNoProxy
		}
		r.forwards = true
		r.Handler, err = rt.opts.proxy(r)
		if c, ok := r.Handler.(io.Closer); ok && err == nil {
			rt.closer = append(rt.closer, c.Close)
		}
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// checkNormalPrefix refuses a route path that no normalised request path
// could start with, naming its normal form when it has one.
func checkNormalPrefix(p string) error {
	n, ok := AppendNormalPath(nil, []byte(p))
	switch {
	case !ok:
		return fmt.Errorf("%w: %q", ErrPathNotNormal, p)
	case string(n) != p:
		return fmt.Errorf("%w: %q, write %q", ErrPathNotNormal, p, n)
	}
	return nil
}

// staticEnv returns what the next static route is built with, making the
// Router's own cache on first use when Build was given none.
func (rt *Router) staticEnv() staticEnv {
	if rt.opts.cache == nil {
		c := cache.New(cache.FromConfig(rt.cfg.Cache))
		rt.opts.cache = c
		rt.closer = append(rt.closer, func() error { c.Close(); return nil })
	}
	env := staticEnv{
		mime:      rt.mime,
		cache:     rt.opts.cache,
		keyPrefix: keyPrefixFor(rt.gen, rt.statics),
	}
	if rt.cfg.Server.ServerHeader != "" {
		env.server = []byte(rt.cfg.Server.ServerHeader)
	}
	rt.statics++
	return env
}

// Close releases what the handlers hold (open root directories). Call it
// once no request uses the Router any more (after a reload has drained).
func (rt *Router) Close() error {
	var errs []error
	for _, f := range rt.closer {
		if err := f(); err != nil {
			errs = append(errs, err)
		}
	}
	rt.closer = nil
	return errors.Join(errs...)
}

// OpenDirs is how many descriptors the Router holds open until Close: the
// root directory of each static route.
func (rt *Router) OpenDirs() int { return rt.statics }

// Routes returns every compiled route in file order. The slice is shared:
// do not modify it.
func (rt *Router) Routes() []*Route { return rt.routes }

// Match returns the route for a Host value (as sent: any case, optional
// port and trailing dot; nil for none) and a request path in normal form
// (Ctx.Path; see normpath.go), and the rest of
// the path after the route's prefix (see Ctx.Rest; it aliases path or
// static memory). It returns nil when no route of the selected host group
// matches. It does not allocate and is safe for concurrent use.
func (rt *Router) Match(host, path []byte) (*Route, []byte) {
	g := rt.hostGroup(host)
	if g == nil {
		return nil, nil
	}
	for _, r := range g.routes {
		p := r.prefix
		if len(path) < len(p) || string(path[:len(p)]) != string(p) {
			continue
		}
		if r.subtree {
			return r, path[len(p)-1:]
		}
		if len(path) == len(p) {
			return r, slash
		}
		if path[len(p)] == '/' {
			return r, path[len(p):]
		}
	}
	return nil, nil
}

var slash = []byte("/")

// hostGroup selects the routes for host: an exact host, else the most
// specific matching wildcard, else the routes without a host.
func (rt *Router) hostGroup(host []byte) *group {
	host = codec.HostName(host)
	if len(host) == 0 || len(host) > maxHostLen || (len(rt.exact) == 0 && len(rt.wild) == 0) {
		return rt.nohost
	}
	var buf [maxHostLen]byte
	lower := codec.AppendLower(buf[:0], host)
	if g := rt.exact[string(lower)]; g != nil {
		return g
	}
	if len(rt.wild) > 0 {
		// Longest suffix first: "*.b.example.com" beats "*.example.com".
		for i := 0; i < len(lower); i++ {
			if lower[i] == '.' && i > 0 {
				if g := rt.wild[string(lower[i+1:])]; g != nil {
					return g
				}
			}
		}
	}
	return rt.nohost
}

// normalizeHost puts a configured host in the normal form the router
// compares requests' hosts in (codec.AppendNormalHost).
func normalizeHost(h string) string {
	return string(codec.AppendNormalHost(nil, []byte(strings.TrimSpace(h))))
}

// Serve resets c.Resp, normalises the request path (setting c.Path),
// routes c.Req by it (setting c.Route and c.Rest), applies the route's
// request header rules to c.Req, runs the handler and then applies the
// route's response header rules to c.Resp (proxy routes apply both
// themselves; see ApplyResponseHeaders). A path refused by the
// normalisation is answered 400 and one without a matching route 404
// (c.Route nil either way). It runs on the connection's event loop; it
// does not allocate beyond what the handler does once c's path memory has
// grown to the longest path seen.
func (rt *Router) Serve(c *Ctx) {
	c.Resp.Reset()
	c.Route, c.Rest = nil, nil
	if !c.normalizePath() {
		c.Error(400)
		return
	}
	r, rest := rt.Match(c.Req.Host, c.Path)
	c.Route, c.Rest = r, rest
	if r == nil {
		c.Error(404)
		return
	}
	if r.forwards {
		r.Handler.Serve(c)
		return
	}
	r.ApplyRequestHeaders(c.Req)
	r.Handler.Serve(c)
	if c.Resp.Head == nil && c.Resp.Pending == nil { // a pre-rendered head has the rules already; a pending response applies them when it is answered
		r.ApplyResponseHeaders(&c.Resp)
	}
}
