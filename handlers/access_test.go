package handlers

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gale/cache"
	"gale/config"
)

// yamlRouter builds a Router from a config file's routes (listen is
// added), with relative roots resolved against dir.
func yamlRouter(t testing.TB, dir, routes string) *Router {
	t.Helper()
	file := filepath.Join(dir, "gale.yaml")
	if err := os.WriteFile(file, []byte("listen: [\"127.0.0.1:0\"]\nroutes:\n"+routes), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return mustBuild(t, cfg)
}

// serveFrom routes one request from a client address.
func serveFrom(t *testing.T, rt *Router, from, method, target string, headers ...string) *Ctx {
	t.Helper()
	c := newCtx(request(method, "example.com", target, headers...))
	if from != "" {
		c.Remote = netip.MustParseAddrPort(from)
	}
	rt.Serve(c)
	if c.Resp.Status == 0 {
		t.Fatalf("%s %s: status 0", method, target)
	}
	return c
}

const matcherRoutes = `
  - path: /api/
    respond: {body: prefix}
  - path: /api/
    match: {methods: [GET]}
    respond: {body: get}
  - path: /api/
    match: {methods: [POST], headers: {Content-Type: application/json}}
    respond: {body: post-json}
  - path: /api/
    match: {methods: [PUT]}
    respond: {body: put}
  - path: /api/
    match: {query: {v: ["2", "two words"]}, methods: [GET]}
    respond: {body: v2}
  - path: /api/
    match: {headers: {X-Beta: "*"}, methods: [GET], remote: [10.0.0.0/8]}
    respond: {body: beta}
  - path: /api/
    match: {path_regex: '/api/users/([0-9]+)'}
    respond: {body: user}
  - path: /api/
    match: {path_regex: '/api/posts/([0-9]+)'}
    respond: {body: post}
  - path: /
    match: {path: /api/users/me}
    respond: {body: me}
  - path: /api/v1/
    match: {remote: ["::1"]}
    respond: {body: v1-local}
  - path: /
    respond: {body: root}
`

// Each matcher, the precedence between routes of one prefix (path_regex,
// then more matchers), an exact path over a longer prefix, and the fall
// through to a shorter prefix when a route's matchers fail.
func TestRouteMatchers(t *testing.T) {
	rt := yamlRouter(t, t.TempDir(), matcherRoutes)
	tests := []struct {
		from, method, target string
		headers              []string
		want                 string
	}{
		{"127.0.0.1:1", "GET", "/api/x", nil, "get"},
		{"127.0.0.1:1", "HEAD", "/api/x", nil, "get"}, // GET implies HEAD
		{"127.0.0.1:1", "DELETE", "/api/x", nil, "prefix"},
		{"127.0.0.1:1", "POST", "/api/x", []string{"Content-Type", "application/json"}, "post-json"},
		{"127.0.0.1:1", "POST", "/api/x", []string{"content-type", "text/plain"}, "prefix"},
		{"127.0.0.1:1", "POST", "/api/x", []string{"Content-Type", "text/plain", "Content-Type", "application/json"}, "prefix"}, // the first field decides
		{"127.0.0.1:1", "PUT", "/api/x", nil, "put"},
		{"127.0.0.1:1", "GET", "/api/x?a=1&v=2", nil, "v2"},
		{"127.0.0.1:1", "GET", "/api/x?v=%32", nil, "v2"},               // decoded
		{"127.0.0.1:1", "GET", "/api/x?v=two+words", nil, "v2"},         // "+" is a space
		{"127.0.0.1:1", "GET", "/api/x?v=two%20words", nil, "v2"},       // so is %20
		{"127.0.0.1:1", "GET", "/api/x?%76=2", nil, "v2"},               // names are decoded too
		{"127.0.0.1:1", "GET", "/api/x?v=3&v=2", nil, "get"},            // the first parameter decides
		{"127.0.0.1:1", "GET", "/api/x?vv=2", nil, "get"},               // not a prefix match
		{"10.1.2.3:5", "GET", "/api/x", []string{"X-Beta", ""}, "beta"}, // present, any value
		{"127.0.0.1:1", "GET", "/api/x", []string{"X-Beta", "1"}, "get"},
		{"[::ffff:10.0.0.1]:5", "GET", "/api/x", []string{"X-Beta", "1"}, "beta"}, // IPv4-mapped is IPv4
		{"127.0.0.1:1", "GET", "/api/users/42", nil, "user"},                      // path_regex before methods
		{"127.0.0.1:1", "GET", "/api/users/42/x", nil, "get"},                     // anchored at both ends
		{"127.0.0.1:1", "GET", "/api/./users//%34%32", nil, "user"},               // on the normal path
		{"127.0.0.1:1", "GET", "/api/posts/7", nil, "post"},
		{"127.0.0.1:1", "GET", "/api/users/me", nil, "me"},   // exact beats the longer prefix
		{"127.0.0.1:1", "GET", "/api/users/me/", nil, "get"}, // exact is exact
		{"[::1]:9", "GET", "/api/v1/x", nil, "v1-local"},
		{"127.0.0.1:1", "GET", "/api/v1/x", nil, "get"}, // falls through to /api/
		{"127.0.0.1:1", "GET", "/other", nil, "root"},
	}
	for _, tt := range tests {
		c := serveFrom(t, rt, tt.from, tt.method, tt.target, tt.headers...)
		if got := string(c.Resp.Body); got != tt.want {
			t.Errorf("%s %s %v from %s: route %q; want %q", tt.method, tt.target, tt.headers, tt.from, got, tt.want)
		}
	}
}

// Routes the precedence cannot order and no matcher tells apart are
// refused by Build as by the config, whatever their order in the file.
func TestBuildRouteConflict(t *testing.T) {
	get := config.Match{Methods: []string{"GET"}}
	both := config.Match{Methods: []string{"POST", "GET"}}
	v1 := config.Match{Headers: []config.FieldMatch{{Name: "X-V", Values: []string{"1"}}}}
	route := func(m config.Match) config.Route {
		r := respondRoute("", "/a/", "x")
		r.Match = m
		return r
	}
	for _, routes := range [][]config.Route{
		{route(get), route(both)},
		{route(both), route(get)},
		{route(get), route(v1)},
	} {
		if _, err := Build(&config.Config{Routes: routes}); !errors.Is(err, ErrRouteConflict) {
			t.Errorf("%v: err = %v; want %v", routes, err, ErrRouteConflict)
		}
	}
	post := config.Match{Methods: []string{"POST"}}
	rt, err := Build(&config.Config{Routes: []config.Route{route(get), route(post), route(config.Match{})}})
	if err != nil {
		t.Fatalf("disjoint routes: %v", err)
	}
	rt.Close()
}

// A rewrite changes the path and query the handler sees; its path is
// normalised as a request path is, so no capture or placeholder climbs
// above "/"; templates read the path and query as they were.
func TestRewrite(t *testing.T) {
	dir := t.TempDir()
	rt := yamlRouter(t, dir, `
  - path: /old/
    match: {path_regex: '/old/(?P<name>[a-z.]+)/(\d+)'}
    rewrite: "/new/{2}/{name}?was={path}&{query}"
    redirect: {to: "https://example.com/r{path}?{query}"}
  - path: /keep/
    rewrite: "/kept{rest}"
    redirect: {to: "/x{path}?{query}"}
  - path: /climb/
    match: {path_regex: '/climb/a(.*)b'}
    rewrite: "/static/{1}/{1}/{1}/passwd"
    redirect: {to: "/x"}
`)
	tests := []struct{ target, status, location string }{
		{"/old/abc/42?q=1", "308", "https://example.com/r/new/42/abc?was=/old/abc/42&q=1"},
		{"/old/./abc//42", "308", "https://example.com/r/new/42/abc?was=/old/abc/42&"},
		{"/keep/a/b?z", "308", "/x/kept/a/b?z"},
		{"/climb/a..b", "400", ""}, // "/static/../../../passwd" would climb above "/"
	}
	for _, tt := range tests {
		c := serveFrom(t, rt, "", "GET", tt.target)
		if got := strconv.Itoa(c.Resp.Status); got != tt.status || header(&c.Resp, "Location") != tt.location {
			t.Errorf("%s: %s %q; want %s %q", tt.target, got, header(&c.Resp, "Location"), tt.status, tt.location)
		}
	}
}

// A redirect's captures never turn Location into a network-path reference.
func TestRedirectCaptureNoNetworkPath(t *testing.T) {
	rt := yamlRouter(t, t.TempDir(), `
  - path: /go/
    match: {path_regex: '(/go/.*)'}
    redirect: {to: "/{1}"}
  - path: /r/
    match: {path_regex: '/r(/.*)'}
    redirect: {to: "/{1}"}
`)
	for target, want := range map[string]string{
		"/go/x":               "/go/x",
		"/r//evil.example/a":  "/evil.example/a",
		"/r/%5Cevil.example/": "", // an encoded backslash is refused as a path
	} {
		c := serveFrom(t, rt, "", "GET", target)
		if got := header(&c.Resp, "Location"); got != want || strings.HasPrefix(got, "//") {
			t.Errorf("%s: Location %q; want %q", target, got, want)
		}
	}
}

// Access rules: the first that contains the client decides; no rule
// containing it denies; an unknown address is denied.
func TestAccessRules(t *testing.T) {
	rt := yamlRouter(t, t.TempDir(), `
  - path: /
    access: [{allow: 127.0.0.2}, {deny: 127.0.0.0/8}, {allow: ["10.0.0.0/8", "::1"]}]
    respond: {body: ok}
    headers: {response: {set: {X-Route: root}}}
`)
	tests := []struct {
		from   string
		status int
	}{
		{"127.0.0.2:1", 200},
		{"127.0.0.3:1", 403},
		{"[::ffff:127.0.0.2]:1", 200},
		{"[::ffff:127.0.0.3]:1", 403},
		{"10.9.9.9:1", 200},
		{"[::1]:1", 200},
		{"192.168.0.1:1", 403}, // no rule contains it
		{"", 403},              // unknown address
	}
	for _, tt := range tests {
		c := serveFrom(t, rt, tt.from, "GET", "/x")
		if c.Resp.Status != tt.status {
			t.Errorf("from %q: status %d; want %d", tt.from, c.Resp.Status, tt.status)
		}
		if header(&c.Resp, "X-Route") != "root" {
			t.Errorf("from %q: response rules not applied to %d", tt.from, c.Resp.Status)
		}
	}
}

func testLimiter(rate string, burst int, hdr string, v6 int) *limiter {
	rl := &config.RateLimit{Rate: rate, Burst: burst, Header: hdr, IPv6Prefix: v6, MaxKeys: 1 << 10}
	switch {
	case strings.HasSuffix(rate, "/s"):
		rl.Interval = time.Second
	case strings.HasSuffix(rate, "/m"):
		rl.Interval = time.Minute
	}
	var n int
	for _, ch := range strings.Split(rate, "/")[0] {
		n = n*10 + int(ch-'0')
	}
	rl.Interval /= time.Duration(n)
	return newLimiter(rl)
}

// GCRA as nginx's burst with nodelay: burst+1 at once, then one per
// interval; the wait until the next one; keys apart.
func TestLimiterGCRA(t *testing.T) {
	l := testLimiter("10/s", 3, "", 64)
	const ms = int64(time.Millisecond)
	now := int64(1000 * ms)
	for i := 0; i < 4; i++ {
		if ok, _ := l.allow(1, now); !ok {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	ok, wait := l.allow(1, now)
	if ok || wait != 100*time.Millisecond {
		t.Fatalf("fifth at once: ok %v wait %v; want refused, 100ms", ok, wait)
	}
	if ok, _ := l.allow(2, now); !ok {
		t.Fatal("another key refused")
	}
	if ok, _ := l.allow(1, now+99*ms); ok {
		t.Fatal("allowed before the interval")
	}
	if ok, _ := l.allow(1, now+100*ms); !ok {
		t.Fatal("refused after the interval")
	}
	if ok, _ := l.allow(1, now+100*ms); ok {
		t.Fatal("two allowed after one interval")
	}
	// A second of quiet earns back the whole burst, and no more.
	later := now + 2000*ms
	for i := 0; i < 4; i++ {
		if ok, _ := l.allow(1, later); !ok {
			t.Fatalf("after a pause, request %d refused", i)
		}
	}
	if ok, _ := l.allow(1, later); ok {
		t.Fatal("after a pause, more than the burst allowed")
	}
}

// Keys: the client address, IPv6 addresses by their prefix, a header's
// value when sent (else the address).
func TestLimiterKeys(t *testing.T) {
	l := testLimiter("1/m", 0, "", 64)
	key := func(l *limiter, from string, headers ...string) uint64 {
		c := newCtx(request("GET", "a", "/", headers...))
		c.Remote = netip.MustParseAddrPort(from)
		return l.key(c)
	}
	if key(l, "[2001:db8::1]:1") != key(l, "[2001:db8::ffff:2]:2") {
		t.Error("two addresses of one /64 have different keys")
	}
	if key(l, "[2001:db8::1]:1") == key(l, "[2001:db8:0:1::1]:1") {
		t.Error("two /64s share a key")
	}
	if key(l, "127.0.0.2:1") == key(l, "127.0.0.3:1") || key(l, "127.0.0.2:1") != key(l, "[::ffff:127.0.0.2]:9") {
		t.Error("IPv4 keys wrong")
	}
	h := testLimiter("1/m", 0, "X-Api-Key", 64)
	if key(h, "127.0.0.2:1", "X-Api-Key", "k1") != key(h, "127.0.0.3:1", "x-api-key", "k1") {
		t.Error("one header value from two addresses has two keys")
	}
	if key(h, "127.0.0.2:1", "X-Api-Key", "k1") == key(h, "127.0.0.2:1", "X-Api-Key", "k2") {
		t.Error("two header values share a key")
	}
	if key(h, "127.0.0.2:1") != key(l, "127.0.0.2:1") && key(h, "127.0.0.2:1") == key(h, "127.0.0.3:1") {
		t.Error("without the header, the address is not the key")
	}
}

// One limit holds across goroutines (the event loops): of many requests
// at one instant, exactly burst+1 pass.
func TestLimiterConcurrent(t *testing.T) {
	l := testLimiter("1/m", 99, "", 64)
	now := l.now()
	var passed atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				if ok, _ := l.allow(7, now); ok {
					passed.Add(1)
				}
				l.allow(uint64(g*1000+i)<<8|1, now) // other keys meanwhile
			}
		}()
	}
	wg.Wait()
	if n := passed.Load(); n != 100 {
		t.Errorf("%d passed; want 100", n)
	}
}

// The table's memory is fixed: many more keys than it holds evict the
// oldest, and a key that passed its TAT loses nothing when evicted.
func TestLimiterFixedMemory(t *testing.T) {
	l := testLimiter("1/m", 0, "", 64)
	slots := 0
	for i := range l.shards {
		slots += len(l.shards[i].slots)
	}
	if slots != 1<<10 {
		t.Fatalf("%d slots; want 1024", slots)
	}
	now := l.now()
	const mix = 0x9e3779b97f4a7c15
	var k uint64
	for k = 1; k < 100000; k++ {
		l.allow(k*mix, now)
	}
	total := 0
	for i := range l.shards {
		total += len(l.shards[i].slots)
		if cap(l.shards[i].slots) != len(l.shards[i].slots) {
			t.Fatal("a shard grew")
		}
	}
	if total != slots {
		t.Fatalf("%d slots after 100000 keys; want %d", total, slots)
	}
	// The newest key is still limited.
	if ok, _ := l.allow((k-1)*mix, now); ok {
		t.Error("the newest key forgot its request")
	}
}

// The route answers 429 with Retry-After in whole seconds (at least 1).
func TestRateLimitRoute(t *testing.T) {
	rt := yamlRouter(t, t.TempDir(), `
  - path: /
    rate_limit: {rate: 1/m, burst: 1}
    respond: {body: ok}
`)
	for i, want := range []int{200, 200, 429} {
		c := serveFrom(t, rt, "127.0.0.2:1", "GET", "/")
		if c.Resp.Status != want {
			t.Fatalf("request %d: %d; want %d", i, c.Resp.Status, want)
		}
		if want == 429 {
			if ra := header(&c.Resp, "Retry-After"); ra != "60" && ra != "59" {
				t.Errorf("Retry-After %q; want about 60", ra)
			}
		}
	}
	if c := serveFrom(t, rt, "127.0.0.3:1", "GET", "/"); c.Resp.Status != 200 {
		t.Errorf("another client: %d", c.Resp.Status)
	}
}

// waitConn is a CacheAccess whose loads off the loop report back as the
// server's exchanges do: Done stores the result and signals.
type waitConn struct {
	view  *cache.View
	mu    sync.Mutex
	key   string
	e     *cache.Entry
	err   error
	ready bool
	done  chan struct{}
}

func (w *waitConn) CacheView(c *cache.Cache) *cache.View {
	if w.view == nil || w.view.Cache() != c {
		w.view = c.NewView()
	}
	return w.view
}

func (w *waitConn) CacheDone(key []byte) cache.Done {
	k := string(key)
	return func(e *cache.Entry, err error) {
		w.mu.Lock()
		w.key, w.e, w.err, w.ready = k, e, err, true
		w.mu.Unlock()
		w.done <- struct{}{}
	}
}

func (w *waitConn) CacheReady() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ready
}

func (w *waitConn) CacheLoaded(key []byte) (*cache.Entry, error, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ready || w.key != string(key) {
		return nil, nil, false
	}
	w.ready = false
	return w.e, w.err, true
}

// try_files with an SPA and a front-controller layout, through the file
// cache, including a fallback file that is read off the loop.
func TestTryFiles(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("<p>app</p>\n", 10000) // > staticSyncMax: loaded off the loop
	for name, body := range map[string]string{
		"spa/index.html":       big,
		"spa/assets/app.js":    "js",
		"spa/docs/index.html":  "docs",
		"php/index.php":        "front",
		"php/static/style.css": "css",
		"php/.env":             "secret",
		"php/admin/index.html": "admin",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rt := yamlRouter(t, dir, `
  - path: /
    static: {root: spa, try_files: ["{path}", "{path}/", /index.html]}
  - path: /php/
    static: {root: php, try_files: ["{rest}", "/index.php"]}
  - path: /strict/
    static: {root: php, try_files: ["{rest}", "=404"]}
`)
	tests := []struct{ target, body string }{
		{"/assets/app.js", "js"},
		{"/docs/", "docs"},
		{"/docs", "docs"}, // "{path}/" names the directory
		{"/users/42", big},
		{"/", big}, // "{path}" is "/", a directory: its index file
		{"/php/static/style.css", "css"},
		{"/php/blog/2024/hello", "front"},
		{"/php/.env", "front"},  // hidden: not a candidate
		{"/php/admin", "front"}, // a directory is not a file
		{"/strict/static/style.css", "css"},
	}
	wc := &waitConn{done: make(chan struct{}, 4)}
	waited := 0
	for _, tt := range tests {
		c := newCtx(request("GET", "example.com", tt.target))
		c.Cache = wc
		rt.Serve(c)
		if p := c.Resp.Pending; p != nil {
			waited++
			<-wc.done
			if p.Resume(c) != Answered {
				t.Fatalf("%s: not answered after the load", tt.target)
			}
		}
		if got := string(responseBody(t, &c.Resp)); c.Resp.Status != 200 || got != tt.body {
			t.Errorf("%s: %d %.20q; want 200 %.20q", tt.target, c.Resp.Status, got, tt.body)
		}
	}
	if waited == 0 {
		t.Error("no candidate was loaded off the loop")
	}
	c := serve(t, rt, request("GET", "example.com", "/strict/nothing"))
	if c.Resp.Status != 404 {
		t.Errorf("=404 fallback: %d", c.Resp.Status)
	}
}
