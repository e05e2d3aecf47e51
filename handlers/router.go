package handlers

import (
	"errors"
	"fmt"
	"net/netip"
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
	ErrRouteConflict  = errors.New("handlers: another route with the same host and path could match the same requests, and the precedence does not order them")
	ErrBadPath        = errors.New("handlers: route path must start with \"/\"")
	ErrPathNotNormal  = errors.New("handlers: route path is not in normal form (requests are matched after normalising, so it would never match)")
	ErrBadHost        = errors.New("handlers: bad route host")
	ErrBadStatic      = errors.New("handlers: bad static route")
	ErrBadRedirect    = errors.New("handlers: bad redirect route")
	ErrBadRespond     = errors.New("handlers: bad respond route")
	ErrBadLimit       = errors.New("handlers: bad rate limit")
	ErrBadHealth      = errors.New("handlers: bad health route")
	ErrNoProxy        = errors.New("handlers: proxy route, but no proxy handler factory was given to Build (WithProxy)")
	ErrNoFastCGI      = errors.New("handlers: fastcgi or php route, but no FastCGI handler factory was given to Build (WithFastCGI)")
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
	match    matcher   // Conf.Match
	rewrite  *config.Rewrite
	access   accessRules  // nil = every client
	limit    *limiter     // nil = no rate limit
	auth     *basicAuth   // nil = no basic_auth
	fauth    *forwardAuth // nil = no forward_auth (forwardauth.go)
	order    int          // index in the file, the last tie-break of the precedence
	slashes  uint8        // what the route does with an encoded slash (slashKeep, slashReject, slashDecode)
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

// ReadsBody reports whether the route that would serve c reads the
// request body (a proxy or FastCGI route), without serving it: the path
// is normalised and the routes matched as Serve does, and c is left as it
// was (but its scratch memory's contents). An engine asks it before any
// body byte arrived, to decide whether to keep the body for the handler
// or to answer once the body ended.
func (rt *Router) ReadsBody(c *Ctx) bool {
	reads, _ := rt.UpstreamUse(c)
	return reads
}

// UpstreamUse reports, as ReadsBody does and without serving c, whether
// the route that would serve c reads the request body, and whether
// serving it costs a request to an upstream: its handler forwards (a
// proxy or FastCGI route), or its forward_auth asks a service first. An
// engine that defends itself against requests cancelled as soon as sent
// (HTTP/2's Rapid Reset) holds those until it knows they were not.
func (rt *Router) UpstreamUse(c *Ctx) (readsBody, costs bool) {
	mark, path, wire, slashes := len(c.Scratch), c.Path, c.WirePath, c.slashes
	var r *Route
	if c.normalizePath() {
		r, _ = rt.lookup(c.Req.Host, c.Path, c, nil)
	}
	c.Scratch, c.Path, c.WirePath, c.slashes = c.Scratch[:mark], path, wire, slashes
	c.capPath, c.caps = nil, nil
	if r == nil {
		return false, false
	}
	reads := r.ReadsBody()
	return reads, reads || r.fauth != nil
}

// ReadsBody reports whether the route's handler reads the request body
// (a proxy or FastCGI route): an engine keeps the body for it as it
// arrives, where it would otherwise discard it.
func (rt *Route) ReadsBody() bool {
	return rt.Conf.Proxy != nil || rt.Conf.FastCGI != nil
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

	trusted []netip.Prefix // server.trusted_proxies (realip.go)

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
	proxy    ProxyFactory
	fastcgi  ProxyFactory
	fauth    AuthFactory
	cache    *cache.Cache
	stopping *atomic.Bool
	limits   LimitStore
}

// WithCache gives Build the file cache static routes serve from (one per
// server, shared by the routers of successive reloads; the caller purges
// it when a new router replaces an old one, and closes it). Without it,
// Build makes a cache from cfg.Cache for the Router alone, closed by
// Router.Close.
func WithCache(c *cache.Cache) Option {
	return func(o *buildOptions) { o.cache = c }
}

// WithStopping gives Build the server's stopping flag, which health
// ready routes read: set from the moment a graceful stop begins. Without
// it they are always ready.
func WithStopping(f *atomic.Bool) Option {
	return func(o *buildOptions) { o.stopping = f }
}

// buildGen numbers Builds, so that the cache keys of routers built one
// after another never collide (see keyPrefixFor).
var buildGen atomic.Uint64

// WithFastCGI gives Build the factory of FastCGI route handlers
// (rt.Conf.FastCGI is set): the whole handler of a fastcgi route, and the
// ScriptHandler of a php route's static handler. Without it a config with
// such a route fails to build with ErrNoFastCGI.
func WithFastCGI(f ProxyFactory) Option {
	return func(o *buildOptions) { o.fastcgi = f }
}

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
	rt.trusted = cfg.Server.TrustedProxies
	rt.gen = buildGen.Add(1)
	rt.mime = mime
	for i := range cfg.Routes {
		rc := &cfg.Routes[i]
		for j := range i {
			if routesConflict(&cfg.Routes[j], rc) {
				if rc.Match.Kinds() == 0 {
					return routeError(cfg, rc, ErrDuplicateRoute)
				}
				return routeError(cfg, rc, ErrRouteConflict)
			}
		}
		r, err := rt.compileRoute(rc)
		if err != nil {
			return routeError(cfg, rc, err)
		}
		r.order = i
		if r.limit != nil && r.limit.conf.Scope == "cluster" {
			r.limit.cluster = newClusterLimit(r.limit, rt.opts.limits, r.Label())
		}
		host := normalizeHost(rc.Host)
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
	sortGroup := func(g *group) { slices.SortStableFunc(g.routes, precedence) }
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

// precedence orders the routes of a host group as the router tries them:
// routes with an exact path (match.path) first, the longest first; then
// the longest path prefix (equal lengths never match one path: "/a/" and
// "/ab" are disjoint, and the path orders them); among routes of one
// prefix, those with a path_regex first, then those with more matcher
// kinds. Routes that tie on all of that are refused by Build unless a
// matcher tells them apart (config.RoutesConflict), so no request can
// match two of them; the file order only makes the sort deterministic.
func precedence(a, b *Route) int {
	ea, eb := a.match.exact != nil, b.match.exact != nil
	switch {
	case ea != eb:
		if ea {
			return -1
		}
		return 1
	case ea && len(a.match.exact) != len(b.match.exact):
		return len(b.match.exact) - len(a.match.exact)
	case len(a.prefix) != len(b.prefix):
		return len(b.prefix) - len(a.prefix)
	}
	if c := strings.Compare(a.Conf.Path, b.Conf.Path); c != 0 {
		return c
	}
	if ra, rb := a.match.re != nil, b.match.re != nil; ra != rb {
		if ra {
			return -1
		}
		return 1
	}
	if a.match.kinds != b.match.kinds {
		return b.match.kinds - a.match.kinds
	}
	return a.order - b.order
}

// routesConflict is config.RoutesConflict for routes whose hosts may not
// be in normal form yet (a Config built in code).
func routesConflict(a, b *config.Route) bool {
	na, nb := *a, *b
	na.Host, nb.Host = normalizeHost(a.Host), normalizeHost(b.Host)
	return config.RoutesConflict(&na, &nb)
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
		match:   compileMatcher(&rc.Match, usesCaptures(rc)),
		rewrite: rc.Rewrite,
		access:  accessRules(rc.Access),
		slashes: slashMode(rc.EncodedSlashes, rt.cfg.Server.EncodedSlashes),
	}
	if rc.RateLimit != nil {
		if rc.RateLimit.Interval <= 0 {
			return nil, fmt.Errorf("%w: rate_limit without a rate", ErrBadLimit)
		}
		r.limit = newLimiter(rc.RateLimit)
		if rc.RateLimit.Scope == "cluster" && rt.opts.limits == nil {
			return nil, fmt.Errorf("%w: scope cluster without a shared store (cluster.redis)", ErrBadLimit)
		}
	}
	if rc.BasicAuth != nil {
		a, err := newBasicAuth(rc.BasicAuth)
		if err != nil {
			return nil, err
		}
		r.auth = a
	}
	if err := rt.buildForwardAuth(r); err != nil {
		return nil, err
	}
	kind, err := kindOf(rc)
	if err != nil {
		return nil, err
	}
	if err := kind.build(rt, r); err != nil {
		return nil, err
	}
	return r, nil
}

// checkNormalPrefix refuses a route path that no normalised request path
// could start with, naming its normal form when it has one: a routing
// form, without path parameters or encoded slashes.
func checkNormalPrefix(p string) error {
	n, flags, ok := appendNormal(nil, []byte(p))
	if ok && flags != 0 {
		n = appendRouting(nil, n)
	}
	switch {
	case !ok:
		return fmt.Errorf("%w: %q", ErrPathNotNormal, p)
	case string(n) != p:
		return fmt.Errorf("%w: %q, write %q", ErrPathNotNormal, p, n)
	}
	return nil
}

// What a route does with a request path holding an encoded slash, which
// it was routed by as a "/" (config: encoded_slashes).
const (
	slashKeep   uint8 = iota // forward it as sent (Ctx.WirePath)
	slashReject              // answer 400
	slashDecode              // forward a "/"
)

// slashMode compiles an encoded_slashes setting: the route's, else the
// server's; keep when neither says.
func slashMode(route, server string) uint8 {
	if route == "" {
		route = server
	}
	switch route {
	case "reject":
		return slashReject
	case "decode":
		return slashDecode
	}
	return slashKeep
}

// encodedSlashes applies the route's encoded_slashes to an exchange whose
// path holds an encoded slash: it reports false when the route refuses
// it, and for decode turns each encoded slash of c.WirePath into "/" in
// place.
func (r *Route) encodedSlashes(c *Ctx) bool {
	switch r.slashes {
	case slashReject:
		return false
	case slashDecode:
		w := c.WirePath[:0]
		for i := 0; i < len(c.WirePath); {
			n, kind := wireUnit(c.WirePath, i)
			if kind == unitSep {
				w = append(w, '/')
			} else {
				w = append(w, c.WirePath[i:i+n]...)
			}
			i += n
		}
		c.WirePath, c.slashes = w, false
		if string(w) == string(c.Path) {
			c.WirePath = nil
		}
	}
	return true
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
// (Ctx.Path; see normpath.go), and the rest of the path after the route's
// prefix (see Ctx.Rest; it aliases path or static memory). It knows the
// request by its host and path only: routes whose matchers read more of
// it (methods, headers, query, remote) are passed over. It returns nil
// when no route of the selected host group matches. It does not allocate
// and is safe for concurrent use.
func (rt *Router) Match(host, path []byte) (*Route, []byte) {
	return rt.lookup(host, path, nil, nil)
}

// lookup returns the first route of the host group, in precedence order,
// whose prefix, exact path and matchers hold for the exchange c (nil: a
// request known by host and path only), and its Rest. Each route tried is
// reported to tr when it is not nil (Explain).
func (rt *Router) lookup(host, path []byte, c *Ctx, tr *trace) (*Route, []byte) {
	g := rt.hostGroup(host)
	tr.group(rt, g, host)
	if g == nil {
		return nil, nil
	}
	for _, r := range g.routes {
		rest, ok := r.prefixRest(path)
		switch {
		case !ok:
			tr.tried(r, mkPrefix)
		case r.match.exact != nil && string(path) != string(r.match.exact):
			tr.tried(r, mkExact)
		default:
			k := r.match.check(c, path)
			tr.tried(r, k)
			if k == mkNone {
				return r, rest
			}
		}
	}
	return nil, nil
}

// prefixRest reports whether the route's path prefix matches path, and the
// rest of path after it.
func (r *Route) prefixRest(path []byte) ([]byte, bool) {
	p := r.prefix
	if len(path) < len(p) || string(path[:len(p)]) != string(p) {
		return nil, false
	}
	if r.subtree {
		return path[len(p)-1:], true
	}
	if len(path) == len(p) {
		return slash, true
	}
	if path[len(p)] == '/' {
		return path[len(p):], true
	}
	return nil, false
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
// routes c.Req by it (setting c.Route and c.Rest), checks the route's
// access rules (403), rate limit (429) and basic_auth (401), asks its
// forward_auth service (the exchange then waits for the verdict, see
// forwardauth.go), applies its rewrite (setting
// c.Path, c.Rest and c.Req.Query), applies the route's request header
// rules to c.Req, runs the handler and then applies the route's response
// header rules to c.Resp (proxy routes apply both themselves; see
// ApplyResponseHeaders). A path refused by the normalisation is answered
// 400 and one without a matching route 404 (c.Route nil either way). It
// runs on the connection's event loop; it does not allocate beyond what
// the handler does once c's path memory has grown to the longest path
// seen (a path_regex whose groups a template names costs one allocation).
func (rt *Router) Serve(c *Ctx) {
	c.Resp.Reset()
	if !c.Peer.IsValid() {
		c.Peer = c.Remote
	}
	c.Remote = realClient(rt.trusted, c) // realip.go
	c.Route, c.Rest = nil, nil
	c.capPath, c.caps = nil, nil
	if !c.normalizePath() {
		c.Error(400)
		return
	}
	r, rest := rt.lookup(c.Req.Host, c.Path, c, nil)
	c.Route, c.Rest = r, rest
	if r == nil {
		c.Error(404)
		return
	}
	if c.slashes && !r.encodedSlashes(c) {
		c.Error(400)
		r.ApplyResponseHeaders(&c.Resp)
		return
	}
	if !r.admit(c) {
		if c.Resp.Pending == nil { // a verification answers later (basicauth.go)
			r.ApplyResponseHeaders(&c.Resp)
		}
		return
	}
	r.serveAdmitted(c)
}

// serveAdmitted serves an exchange the route admitted: its forward_auth
// asks about it first, when it has one (the exchange then waits for the
// verdict), else serveAuthorized goes on at once.
func (r *Route) serveAdmitted(c *Ctx) {
	if r.fauth != nil {
		r.fauth.ask(r, c)
		return
	}
	r.serveAuthorized(c)
}

// serveAuthorized serves an exchange the route admitted and its
// authentication service (if any) let through: its rewrite, then its
// handler.
func (r *Route) serveAuthorized(c *Ctx) {
	if !r.applyRewrite(c) {
		r.ApplyResponseHeaders(&c.Resp)
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

// admit applies the route's access rules, rate limit and basic_auth to
// the exchange, in that order (the limit bounds the verifications a
// client can ask for): it answers 403, 429 or 401, or leaves a
// verification pending (c.Resp.Pending), and reports false, when one
// does not let it through now.
func (r *Route) admit(c *Ctx) bool {
	if r.access != nil {
		if ok, _ := r.access.allows(ClientAddr(c), c.Cert); !ok {
			c.Error(403)
			return false
		}
	}
	if r.limit != nil && !r.limit.limit(c) {
		return false
	}
	if r.auth == nil {
		return true
	}
	switch r.auth.check(r, c) {
	case authPass:
		return true
	case authDeny:
		r.auth.deny(c)
	}
	return false
}

// StripsAuthorization reports whether the route keeps the client's
// Authorization field from the application behind it (basic_auth
// without forward_authorization).
func (r *Route) StripsAuthorization() bool { return r.auth != nil && !r.auth.forward }

// applyRewrite applies the route's rewrite: the path template's expansion,
// normalised as a request path is (a path that would climb above "/" is
// answered 400 and reports false), becomes c.Path, and c.Rest its part
// after the route's prefix (all of it when the prefix does not match the
// new path); the query template's expansion, when there is one, becomes
// c.Req.Query. Templates read the path and query as they were before the
// rewrite. The new bytes live in c.Scratch.
func (r *Route) applyRewrite(c *Ctx) bool {
	rw := r.rewrite
	if rw == nil {
		return true
	}
	path, flags, ok := c.expandPath(&rw.Path)
	if !ok {
		c.Error(400)
		return false
	}
	c.WirePath, c.slashes = nil, false
	if flags != 0 {
		c.setWire(path, flags)
		path = c.Path
	}
	if rw.Query != nil {
		q := len(c.Scratch)
		c.Scratch = appendTemplate(c.Scratch, rw.Query, c, false)
		c.Req.Query = nil
		if len(c.Scratch) > q {
			c.Req.Query = c.scratchSince(q)
		}
	}
	c.Path = path
	if rest, ok := r.prefixRest(path); ok {
		c.Rest = rest
	} else {
		c.Rest = path
	}
	return true
}

// usesCaptures reports whether any template of the route names a capture
// group of its path_regex, so that matching must record them.
func usesCaptures(rc *config.Route) bool {
	if rc.Rewrite != nil && (rc.Rewrite.Path.HasCaptures() || rc.Rewrite.Query != nil && rc.Rewrite.Query.HasCaptures()) {
		return true
	}
	if rc.Redirect != nil && rc.Redirect.Target != nil && rc.Redirect.Target.HasCaptures() {
		return true
	}
	if rc.Static != nil {
		for _, t := range rc.Static.TryFiles {
			if t.HasCaptures() {
				return true
			}
		}
	}
	return false
}
