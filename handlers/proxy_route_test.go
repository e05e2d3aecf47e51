package handlers

import (
	"errors"
	"testing"

	"gale/config"
)

// fakeForwarder stands for the proxy handler that Build gets from a
// ProxyFactory: it records what it saw and answers pending.
type fakeForwarder struct {
	route   *Route
	sawEnv  string
	closed  int
	pending fakePending
}

type fakePending struct{}

func (fakePending) Resume(*Ctx) Progress { return Waiting }
func (fakePending) Closed()              {}

func (f *fakeForwarder) Serve(c *Ctx) {
	f.sawEnv = string(c.Req.Header("X-Env"))
	c.Resp.Pending = f.pending
}

func (f *fakeForwarder) Close() error { f.closed++; return nil }

func proxyConfig() *config.Config {
	return &config.Config{Routes: []config.Route{
		{Path: "/api/", Proxy: &config.Proxy{To: []config.Upstream{{Network: "tcp", Address: "127.0.0.1:1"}}},
			Headers: config.HeaderRules{
				Request:  config.HeaderOps{Set: []config.HeaderKV{{Name: "X-Env", Value: "prod"}}},
				Response: config.HeaderOps{Set: []config.HeaderKV{{Name: "X-Frame-Options", Value: "DENY"}}},
			}},
		respondRoute("", "/", "root"),
	}}
}

func TestProxyRouteNeedsFactory(t *testing.T) {
	if _, err := Build(proxyConfig()); !errors.Is(err, ErrNoProxy) {
		t.Fatalf("Build without WithProxy: %v, want ErrNoProxy", err)
	}
	boom := errors.New("boom")
	if _, err := Build(proxyConfig(), WithProxy(func(*Route) (Handler, error) { return nil, boom })); !errors.Is(err, boom) {
		t.Fatalf("Build with a failing factory: %v, want it wrapped", err)
	}
}

// TestProxyRouteAppliesNoRules checks that the router leaves a forwarding
// route's header rules to its handler (which applies them after removing
// hop-by-hop fields), passes a pending response through untouched, and
// closes the handler with the router.
func TestProxyRouteAppliesNoRules(t *testing.T) {
	var fw *fakeForwarder
	rt, err := Build(proxyConfig(), WithProxy(func(r *Route) (Handler, error) {
		if r.Conf.Proxy == nil || r.Conf.Path != "/api/" {
			t.Errorf("factory got route %+v", r.Conf)
		}
		fw = &fakeForwarder{route: r}
		return fw, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	c := newCtx(request("GET", "a", "/api/x"))
	rt.Serve(c)
	if c.Resp.Pending == nil || c.Route != fw.route || string(c.Rest) != "/x" {
		t.Fatalf("pending %v route %v rest %q", c.Resp.Pending, c.Route, c.Rest)
	}
	if fw.sawEnv != "" || len(c.Resp.Headers) != 0 {
		t.Errorf("router applied rules on a proxy route: request X-Env %q, response %v", fw.sawEnv, c.Resp.Headers)
	}
	// The handler applies them itself through the Route.
	fw.route.ApplyRequestHeaders(c.Req)
	if got := string(c.Req.Header("X-Env")); got != "prod" {
		t.Errorf("ApplyRequestHeaders: X-Env %q", got)
	}
	// Other routes still get them from the router.
	c2 := serve(t, rt, request("GET", "a", "/"))
	if c2.Resp.Pending != nil || string(c2.Resp.Body) != "root" {
		t.Errorf("root route: %+v", c2.Resp)
	}
	c.Resp.Reset()
	if c.Resp.Pending != nil {
		t.Error("Reset kept Pending")
	}
	if err := rt.Close(); err != nil || fw.closed != 1 {
		t.Errorf("Close: %v, handler closed %d times", err, fw.closed)
	}
}
