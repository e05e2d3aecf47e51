package handlers

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"gale/codec"
	"gale/config"
)

func routerRoutes() []config.Route {
	return []config.Route{
		respondRoute("", "/", "any-root"),
		respondRoute("", "/a", "any-a"),
		respondRoute("", "/a/", "any-a-slash"),
		respondRoute("", "/a/b/c", "any-abc"),
		respondRoute("", "/ab", "any-ab"),
		respondRoute("", "/static/", "any-static"),
		respondRoute("example.com", "/", "ex-root"),
		respondRoute("example.com", "/api/", "ex-api"),
		respondRoute("*.example.com", "/", "wild-root"),
		respondRoute("*.example.com", "/w/", "wild-w"),
		respondRoute("*.b.example.com", "/", "wild-b-root"),
		respondRoute("only.example.com", "/x/", "only-x"),
		respondRoute("[::1]", "/", "v6-root"),
	}
}

func TestRouterMatch(t *testing.T) {
	tests := []struct {
		host, path string
		want       string // route name; "" = no route
		rest       string
	}{
		// no host, or a host without routes: the routes without a host
		{"", "/", "any-root", "/"},
		{"", "/index.html", "any-root", "/index.html"},
		{"other.org", "/x", "any-root", "/x"},
		// "/a" matches "/a" and "/a/...", never "/ab"; "/a/" is longer
		{"", "/a", "any-a", "/"},
		{"", "/a/", "any-a-slash", "/"},
		{"", "/a/x", "any-a-slash", "/x"},
		{"", "/ab", "any-ab", "/"},
		{"", "/abc", "any-root", "/abc"},
		{"", "/ab/c", "any-ab", "/c"},
		{"", "/a/b/c", "any-abc", "/"},
		{"", "/a/b/c/d", "any-abc", "/d"},
		{"", "/a/b/cd", "any-a-slash", "/b/cd"},
		{"", "/static", "any-root", "/static"},
		{"", "/static/", "any-static", "/"},
		{"", "/static/css/x.css", "any-static", "/css/x.css"},
		// exact host beats wildcard beats none
		{"example.com", "/", "ex-root", "/"},
		{"example.com", "/api/v1", "ex-api", "/v1"},
		{"example.com", "/a", "ex-root", "/a"},
		{"www.example.com", "/", "wild-root", "/"},
		{"www.example.com", "/w/x", "wild-w", "/x"},
		{"a.c.b.example.com", "/", "wild-b-root", "/"}, // most specific wildcard
		{"a.b.c.example.com", "/", "wild-root", "/"},
		{"x.y.example.com", "/w/", "wild-w", "/"},
		{"b.example.com", "/", "wild-root", "/"},
		{"x.b.example.com", "/w/", "wild-b-root", "/w/"},
		{"notexample.com", "/", "any-root", "/"},
		{".example.com", "/", "any-root", "/"},
		// case, ports and trailing dots are ignored
		{"EXAMPLE.com", "/api/", "ex-api", "/"},
		{"example.com:8080", "/api/x", "ex-api", "/x"},
		{"example.com.", "/api/x", "ex-api", "/x"},
		{"Example.COM.:443", "/", "ex-root", "/"},
		{"WWW.Example.Com.:8443", "/w/", "wild-w", "/"},
		{"[::1]:8080", "/q", "v6-root", "/q"},
		{"[::1]", "/", "v6-root", "/"},
		// no match in the chosen group is a 404, even if another group matches
		{"only.example.com", "/", "", ""},
		{"only.example.com", "/x", "", ""},
		{"only.example.com", "/x/y", "only-x", "/y"},
		{"ONLY.example.com.:80", "/x/", "only-x", "/"},
		// paths that match nothing
		{"", "", "", ""},
		{"", "*", "", ""},
		// an over-long host names no configured host
		{strings.Repeat("a", 300) + ".example.com", "/", "any-root", "/"},
	}
	cfg := &config.Config{Routes: routerRoutes()}
	rt := mustBuild(t, cfg)
	// The order of routes in the file carries no meaning.
	rev := &config.Config{Routes: slices.Clone(cfg.Routes)}
	slices.Reverse(rev.Routes)
	rtRev := mustBuild(t, rev)
	for _, tt := range tests {
		for i, r := range []*Router{rt, rtRev} {
			route, rest := r.Match([]byte(tt.host), []byte(tt.path))
			got := ""
			if route != nil {
				got = route.Conf.Respond.Body
			}
			if got != tt.want || string(rest) != tt.rest {
				t.Errorf("router %d: Match(%q, %q) = %q, rest %q; want %q, rest %q", i, tt.host, tt.path, got, rest, tt.want, tt.rest)
			}
		}
	}
}

func TestRouterNoHostGroup(t *testing.T) {
	rt := mustBuild(t, &config.Config{Routes: []config.Route{respondRoute("example.com", "/", "ex")}})
	for _, host := range []string{"", "other.com", "www.example.com"} {
		if r, _ := rt.Match([]byte(host), []byte("/")); r != nil {
			t.Errorf("host %q matched %q; want none", host, r.Conf.Respond.Body)
		}
	}
	c := serve(t, rt, request("GET", "other.com", "/"))
	if c.Resp.Status != 404 || c.Route != nil {
		t.Errorf("status %d route %v; want 404 and no route", c.Resp.Status, c.Route)
	}
}

func TestRouterServeSetsRouteAndRest(t *testing.T) {
	rt := mustBuild(t, &config.Config{Routes: routerRoutes()})
	c := serve(t, rt, request("GET", "example.com", "/api/users?id=1"))
	if c.Route == nil || c.Route.Conf.Respond.Body != "ex-api" || string(c.Rest) != "/users" {
		t.Fatalf("route %v rest %q", c.Route, c.Rest)
	}
	if c.Resp.Status != 200 || string(c.Resp.Body) != "ex-api" {
		t.Errorf("resp %d %q", c.Resp.Status, c.Resp.Body)
	}
	// Routing reads the normalised path.
	c.Req = request("GET", "example.com", "//%61pi/./x/../users?id=1")
	rt.Serve(c)
	if string(c.Path) != "/api/users" || string(c.Rest) != "/users" || c.Resp.Status != 200 {
		t.Fatalf("normalised: path %q rest %q status %d", c.Path, c.Rest, c.Resp.Status)
	}
	// A refused path is a bad request, with no route.
	c.Req = request("GET", "example.com", "/api/../../users")
	rt.Serve(c)
	if c.Resp.Status != 400 || c.Route != nil || c.Path != nil || c.Rest != nil {
		t.Fatalf("climbing: status %d route %v path %q rest %q", c.Resp.Status, c.Route, c.Path, c.Rest)
	}
	// A reused Ctx starts from an empty response.
	c.Req = request("GET", "only.example.com", "/")
	rt.Serve(c)
	if c.Resp.Status != 404 || c.Route != nil || c.Rest != nil {
		t.Errorf("reuse: status %d route %v rest %q", c.Resp.Status, c.Route, c.Rest)
	}
	if n := headerCount(c.Resp.Headers, "Content-Type"); n != 1 {
		t.Errorf("reuse: %d Content-Type fields", n)
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name   string
		routes []config.Route
		want   error
	}{
		{"duplicate", []config.Route{respondRoute("", "/a", "1"), respondRoute("", "/a", "2")}, ErrDuplicateRoute},
		{"duplicate host case", []config.Route{respondRoute("Example.com", "/", "1"), respondRoute("example.com.", "/", "2")}, ErrDuplicateRoute},
		{"no handler", []config.Route{{Path: "/"}}, ErrNoHandler},
		{"two handlers", []config.Route{{Path: "/", Respond: &config.Respond{}, Redirect: &config.Redirect{To: "/x"}}}, ErrManyHandlers},
		{"relative path", []config.Route{respondRoute("", "a", "1")}, ErrBadPath},
		{"path with unreserved escape", []config.Route{respondRoute("", "/%7Euser/", "1")}, ErrPathNotNormal},
		{"path with lower-case escape", []config.Route{respondRoute("", "/a%2fb/", "1")}, ErrPathNotNormal},
		{"path with dot segment", []config.Route{respondRoute("", "/a/../b/", "1")}, ErrPathNotNormal},
		{"path with dot parameter", []config.Route{respondRoute("", "/a/..;/", "1")}, ErrPathNotNormal},
		{"path with raw non-ASCII", []config.Route{respondRoute("", "/caf\u00e9/", "1")}, ErrPathNotNormal},
		{"bad wildcard", []config.Route{respondRoute("*.", "/", "1")}, ErrBadHost},
		{"inner star", []config.Route{respondRoute("a.*.com", "/", "1")}, ErrBadHost},
		{"redirect status", []config.Route{{Path: "/", Redirect: &config.Redirect{To: "/x", Status: 200}}}, ErrBadRedirect},
		{"redirect CRLF", []config.Route{{Path: "/", Redirect: &config.Redirect{To: "/x\r\nSet-Cookie: a=b"}}}, ErrBadRedirect},
		{"respond 204 body", []config.Route{{Path: "/", Respond: &config.Respond{Status: 204, Body: "x"}}}, ErrBadRespond},
		{"static missing root", []config.Route{{Path: "/", Static: &config.Static{Root: "/nonexistent/gale-test"}}}, ErrBadStatic},
		{"static relative root", []config.Route{{Path: "/", Static: &config.Static{Root: "site"}}}, ErrBadStatic},
		{"static bad hidden", []config.Route{{Path: "/", Static: &config.Static{Root: t.TempDir(), Hidden: "maybe"}}}, ErrBadStatic},
		{"static bad symlinks", []config.Route{{Path: "/", Static: &config.Static{Root: t.TempDir(), FollowSymlinks: "sometimes"}}}, ErrBadStatic},
		{"static bad index", []config.Route{{Path: "/", Static: &config.Static{Root: t.TempDir(), Index: []string{"../x"}}}}, ErrBadStatic},
		{"static bad spa_fallback", []config.Route{{Path: "/", Static: &config.Static{Root: t.TempDir(), SPAFallback: "index.html"}}}, ErrBadStatic},
		{"static bad error page", []config.Route{{Path: "/", Static: &config.Static{Root: t.TempDir(), ErrorPages: map[int]string{200: "/x.html"}}}}, ErrBadStatic},
		{"static bad encoding", []config.Route{{Path: "/", Static: &config.Static{Root: t.TempDir(), Compress: config.Compress{Encodings: []string{"deflate"}}}}}, ErrBadStatic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			last := &tt.routes[len(tt.routes)-1]
			last.Pos = config.Pos{Line: 12, Col: 5}
			rt, err := Build(&config.Config{File: "/etc/gale.yaml", Routes: tt.routes})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v; want %v", err, tt.want)
			}
			if rt != nil {
				t.Errorf("router returned with an error")
			}
			if !strings.Contains(err.Error(), "/etc/gale.yaml:12:5:") {
				t.Errorf("error %q does not name the route's position", err)
			}
		})
	}
}

// markHandler adds response fields the rules act on, and records the
// request headers it saw.
type markHandler struct{ seen []codec.Header }

func (h *markHandler) Serve(c *Ctx) {
	h.seen = append(h.seen[:0], c.Req.Headers...)
	c.Resp.Status = 200
	c.Resp.Add([]byte("X-Powered-By"), []byte("php"))
	c.Resp.Add([]byte("x-frame-options"), []byte("ALLOW"))
	c.Resp.Add([]byte("Content-Type"), []byte("text/plain"))
}

func TestHeaderRules(t *testing.T) {
	route := config.Route{
		Path:    "/",
		Respond: &config.Respond{},
		Headers: config.HeaderRules{
			Request: config.HeaderOps{
				Remove: []string{"Cookie"},
				Set:    []config.HeaderKV{{Name: "X-Env", Value: "prod"}},
				Add:    []config.HeaderKV{{Name: "X-Tag", Value: "b"}},
			},
			Response: config.HeaderOps{
				Remove: []string{"X-Powered-By"},
				Set: []config.HeaderKV{
					{Name: "Strict-Transport-Security", Value: "max-age=63072000"},
					{Name: "X-Frame-Options", Value: "DENY"},
				},
				Add: []config.HeaderKV{{Name: "Vary", Value: "Origin"}},
			},
		},
	}
	rt := mustBuild(t, &config.Config{Routes: []config.Route{route}})
	mark := &markHandler{}
	rt.Routes()[0].Handler = mark

	req := request("GET", "example.com", "/",
		"cookie", "secret=1", "X-ENV", "dev", "X-Env", "staging", "X-Tag", "a", "Accept", "*/*")
	c := serve(t, rt, req)

	wantReq := []string{"Host: example.com", "X-Tag: a", "Accept: */*", "X-Env: prod", "X-Tag: b"}
	var gotReq []string
	for _, h := range mark.seen {
		gotReq = append(gotReq, string(h.Name)+": "+string(h.Value))
	}
	if !slices.Equal(gotReq, wantReq) {
		t.Errorf("request headers seen by the handler:\n got %q\nwant %q", gotReq, wantReq)
	}
	var gotResp []string
	for _, h := range c.Resp.Headers {
		gotResp = append(gotResp, string(h.Name)+": "+string(h.Value))
	}
	wantResp := []string{"Content-Type: text/plain", "Strict-Transport-Security: max-age=63072000", "X-Frame-Options: DENY", "Vary: Origin"}
	if !slices.Equal(gotResp, wantResp) {
		t.Errorf("response headers:\n got %q\nwant %q", gotResp, wantResp)
	}
	// The rules apply to the route's error responses too.
	c = newCtx(request("GET", "", "/"))
	rt.Routes()[0].Handler = HandlerFunc(func(c *Ctx) { c.Error(404) })
	rt.Serve(c)
	if c.Resp.Status != 404 || header(&c.Resp, "Strict-Transport-Security") == "" {
		t.Errorf("error response: %d %q", c.Resp.Status, c.Resp.Headers)
	}
}

func TestErrorResponse(t *testing.T) {
	tests := []struct {
		accept string
		json   bool
	}{
		{"", false},
		{"application/json", codec.AcceptsJSONOnly([]byte("application/json"))},
		{"text/html,application/json;q=0.9", codec.AcceptsJSONOnly([]byte("text/html,application/json;q=0.9"))},
		{"*/*", codec.AcceptsJSONOnly([]byte("*/*"))},
	}
	if !tests[1].json {
		t.Errorf(`AcceptsJSONOnly("application/json") = false`)
	}
	for _, tt := range tests {
		var hs []string
		if tt.accept != "" {
			hs = []string{"Accept", tt.accept}
		}
		c := newCtx(request("GET", "example.com", "/<script>alert(1)</script>?q=<b>", hs...))
		c.Resp.Close = true
		c.Resp.Add([]byte("X-Stale"), []byte("1"))
		c.Error(404)
		if c.Resp.Status != 404 || !c.Resp.Close {
			t.Errorf("accept %q: status %d close %v", tt.accept, c.Resp.Status, c.Resp.Close)
		}
		if got, want := string(c.Resp.Body), string(codec.ErrorBody(404, tt.json)); got != want {
			t.Errorf("accept %q: body %q; want %q", tt.accept, got, want)
		}
		if got, want := header(&c.Resp, "Content-Type"), string(codec.ErrorContentType(tt.json)); got != want {
			t.Errorf("accept %q: Content-Type %q; want %q", tt.accept, got, want)
		}
		if len(c.Resp.Headers) != 2 || header(&c.Resp, "X-Content-Type-Options") != "nosniff" {
			t.Errorf("accept %q: headers %q; want Content-Type and X-Content-Type-Options", tt.accept, c.Resp.Headers)
		}
		if strings.Contains(string(c.Resp.Body), "script") {
			t.Errorf("error body echoes the request: %q", c.Resp.Body)
		}
	}
}

// One Router serves every event loop at once; run it from several
// goroutines so the race detector can check that nothing is shared.
func TestRouterConcurrentUse(t *testing.T) {
	root, _ := staticTree(t)
	routes := append(routerRoutes(),
		config.Route{Host: "files.test", Path: "/", Static: &config.Static{Root: root, Index: []string{"index.html"}}},
		config.Route{Host: "files.test", Path: "/go/", Redirect: &config.Redirect{To: "/x/", KeepPath: true},
			Headers: config.HeaderRules{Response: config.HeaderOps{Set: []config.HeaderKV{{Name: "X-A", Value: "1"}}}}},
	)
	rt := mustBuild(t, &config.Config{Routes: routes})
	targets := []struct{ host, target string }{
		{"files.test", "/a.txt"}, {"files.test", "/dir/"}, {"files.test", "/go/p?q"},
		{"example.com", "/api/x"}, {"www.example.com", "/w/"}, {"only.example.com", "/"},
	}
	done := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			c := newCtx(nil)
			for i := 0; i < 200; i++ {
				tt := targets[(g+i)%len(targets)]
				c.Req = request("GET", tt.host, tt.target)
				c.Scratch = c.Scratch[:0]
				rt.Serve(c)
				if c.Resp.File != nil {
					c.Resp.File.Close()
				}
				if c.Resp.Status == 0 {
					done <- errors.New("status 0")
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestRouterReadsBody: ReadsBody tells a proxy route's request from a
// local route's by the route Serve would choose (normalised path, host
// group), and leaves the exchange as it was.
func TestRouterReadsBody(t *testing.T) {
	routes := routerRoutes()
	routes = append(routes, config.Route{Path: "/up/", Proxy: &config.Proxy{To: []config.Upstream{{Network: "tcp", Address: "127.0.0.1:9", Raw: "127.0.0.1:9"}}}})
	rt := mustBuild(t, &config.Config{Routes: routes}, WithProxy(func(r *Route) (Handler, error) { return nopHandler{}, nil }))
	for _, tt := range []struct {
		path string
		want bool
	}{{"/up/x", true}, {"//%75p/./x", true}, {"/api/users", false}, {"/nowhere", false}, {"/up/../../x", false}} {
		c := &Ctx{Req: request("POST", "", tt.path), Scratch: make([]byte, 0, 64)}
		if got := rt.ReadsBody(c); got != tt.want {
			t.Errorf("%s: ReadsBody %v, want %v", tt.path, got, tt.want)
		}
		if c.Path != nil || c.Route != nil || len(c.Scratch) != 0 {
			t.Errorf("%s: the exchange changed: path %q route %v scratch %d", tt.path, c.Path, c.Route, len(c.Scratch))
		}
	}
}

type nopHandler struct{}

func (nopHandler) Serve(c *Ctx) {}
