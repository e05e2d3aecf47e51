package handlers

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gale/codec"
	"gale/config"
)

// fakeGate stands in for an authentication service: it records the
// fields of each request it is asked about, and its calls answer what
// the test says.
type fakeGate struct {
	asked [][]codec.Header
	calls []*fakeCall
}

func (g *fakeGate) Ask(c *Ctx) AuthCall {
	g.asked = append(g.asked, append([]codec.Header(nil), c.Req.Headers...))
	fc := &fakeCall{}
	g.calls = append(g.calls, fc)
	return fc
}

type fakeCall struct {
	v        AuthVerdict
	decided  bool
	released int
}

func (fc *fakeCall) Verdict() (*AuthVerdict, bool) { return &fc.v, fc.decided }
func (fc *fakeCall) Release()                      { fc.released++ }

func fields(kv ...string) []codec.Header {
	var hs []codec.Header
	for i := 0; i+1 < len(kv); i += 2 {
		hs = append(hs, codec.Header{Name: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return hs
}

// fauthRouter builds routes with forward_auth in front of an
// application that echoes the X-User and Remote-User fields it got.
func fauthRouter(t *testing.T, g *fakeGate) *Router {
	dir := t.TempDir()
	file := filepath.Join(dir, "gale.yaml")
	yamlText := `listen: ["127.0.0.1:0"]
routes:
  - path: /app/
    forward_auth: {to: "127.0.0.1:9", copy_headers: [X-User, remote-user]}
    headers: {response: {set: {X-Route: app}}}
    proxy: {to: "127.0.0.1:9"}
`
	if err := os.WriteFile(file, []byte(yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(cfg, WithProxy(echoUsers)); !errors.Is(err, ErrNoForwardAuth) {
		t.Fatalf("Build without a forward_auth factory: %v", err)
	}
	return mustBuild(t, cfg, WithProxy(echoUsers), WithForwardAuth(func(*Route) (AuthGate, error) { return g, nil }))
}

func echoUsers(rt *Route) (Handler, error) {
	return HandlerFunc(func(c *Ctx) {
		var vals []string
		for _, f := range c.Req.Headers {
			if codec.EqualFold(f.Name, "x-user") || codec.EqualFold(f.Name, "remote-user") {
				vals = append(vals, string(f.Name)+"="+string(f.Value))
			}
		}
		c.Resp.Status = 200
		c.Resp.Body = []byte(strings.Join(vals, ","))
	}), nil
}

// TestForwardAuthStage: the copy_headers fields, in any spelling, are
// gone from the request before the service is asked; the exchange waits
// for the verdict; a pass runs the handler with the service's fields, a
// refusal is the service's answer with the route's response rules, no
// answer is the error given; every call is released once.
func TestForwardAuthStage(t *testing.T) {
	g := &fakeGate{}
	rt := fauthRouter(t, g)
	injected := []string{"X-User", "a", "x-user", "b", "X-USER", "c", "Remote-User", "d", "REMOTE-user", "e", "Accept", "*/*"}

	for _, tc := range []struct {
		name   string
		v      AuthVerdict
		status int
		body   string
		hdr    map[string]string
	}{
		{"pass", AuthVerdict{Status: 200, Fields: fields("x-user", "alice", "X-Other", "no")}, 200, "X-User=alice", nil},
		{"pass, both fields", AuthVerdict{Status: 204, Fields: fields("Remote-User", "bob", "X-User", "b2")}, 200, "X-User=b2,Remote-User=bob", nil},
		{"pass, no field", AuthVerdict{Status: 200}, 200, "", nil},
		{"login redirect", AuthVerdict{Status: 302, Fields: fields("Location", "/login", "Set-Cookie", "p=1"), Body: []byte("login first\n")}, 302, "login first\n",
			map[string]string{"Location": "/login", "Set-Cookie": "p=1", "X-Route": "app"}},
		{"refused", AuthVerdict{Status: 401, Fields: fields("WWW-Authenticate", "Bearer")}, 401, "", map[string]string{"WWW-Authenticate": "Bearer", "X-Route": "app"}},
		{"timeout", AuthVerdict{Fail: 504}, 504, "", map[string]string{"X-Route": "app"}},
		{"down", AuthVerdict{Fail: 502}, 502, "", nil},
	} {
		c := newCtx(request("POST", "example.com", "/app/x", injected...))
		rt.Serve(c)
		p := c.Resp.Pending
		if p == nil {
			t.Fatalf("%s: not pending: %d", tc.name, c.Resp.Status)
		}
		asked := g.asked[len(g.asked)-1]
		if headerCount(asked, "x-user") != 0 || headerCount(asked, "remote-user") != 0 || headerCount(asked, "accept") != 1 {
			t.Fatalf("%s: the service was asked with %q", tc.name, asked)
		}
		fc := g.calls[len(g.calls)-1]
		if p.Resume(c) != Waiting {
			t.Fatalf("%s: resumed without a verdict", tc.name)
		}
		fc.v, fc.decided = tc.v, true
		if p.Resume(c) != Answered {
			t.Fatalf("%s: not answered with the verdict", tc.name)
		}
		if c.Resp.Status != tc.status || (tc.body != "" || tc.status < 300) && string(c.Resp.Body) != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.name, c.Resp.Status, c.Resp.Body, tc.status, tc.body)
		}
		for k, v := range tc.hdr {
			if got := header(&c.Resp, k); got != v {
				t.Errorf("%s: %s = %q, want %q", tc.name, k, got, v)
			}
		}
		if fc.released != 1 {
			t.Errorf("%s: released %d times", tc.name, fc.released)
		}
	}

	// An exchange that ends while it waits lets its call go.
	c := newCtx(request("GET", "example.com", "/app/y"))
	rt.Serve(c)
	c.Resp.Pending.Closed()
	if fc := g.calls[len(g.calls)-1]; fc.released != 1 {
		t.Errorf("closed while waiting: released %d times", fc.released)
	}
}
