//go:build !race

package handlers

import (
	"gale/config"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Matchers, access rules, a rate limit (passing and refusing) and a
// rewrite without captures allocate nothing on a reused Ctx.
func TestAccessAllocs(t *testing.T) {
	rt := yamlRouter(t, t.TempDir(), `
  - path: /limited/
    rate_limit: {rate: 1000000/s, burst: 1000000}
    respond: {body: ok}
  - path: /refused/
    rate_limit: {rate: 1/m}
    respond: {body: ok}
  - path: /header/
    rate_limit: {rate: 1000000/s, burst: 1000000, header: X-Api-Key}
    respond: {body: ok}
  - path: /v6/
    rate_limit: {rate: 1000000/s, burst: 1000000, ipv6_prefix: 56}
    respond: {body: ok}
  - path: /matched/
    match: {methods: [GET], headers: {X-A: ["1", "2"]}, query: {q: "a b"}, remote: [127.0.0.0/8, "::1"]}
    access: [{deny: 127.0.0.3}, {allow: all}]
    rewrite: "/matched/new{rest}?x=1&{query}"
    respond: {body: ok}
  - path: /denied/
    access: [{deny: all}]
    respond: {body: ok}
  - path: /auth/
    rate_limit: {rate: 1000000/s, burst: 1000000}
    basic_auth: {users: {alice: "$2a$04$FxxBKMKXSGAv6nRhKjp.eemloTS3TBOIvSnAeNuJOPZhOM8Xb0wiu"}}
    respond: {body: ok}
`)
	tests := []struct {
		name, from, target string
		headers            []string
		status             int
	}{
		{"rate limit passes", "127.0.0.2:1", "/limited/x", nil, 200},
		{"rate limit refuses", "127.0.0.2:1", "/refused/x", nil, 429},
		{"header key", "127.0.0.2:1", "/header/x", []string{"X-Api-Key", "k1"}, 200},
		{"ipv6 key", "[2001:db8::1]:1", "/v6/x", nil, 200},
		{"matchers, access, rewrite", "127.0.0.2:1", "/matched/x/y?q=a+b", []string{"X-A", "2"}, 200},
		{"access denies", "127.0.0.2:1", "/denied/", nil, 403},
		// Verified once (here, with no engine to wait on), then
		// remembered: a digest and a lookup per request.
		{"basic auth remembered, with a rate limit", "127.0.0.2:1", "/auth/x", []string{"Authorization", "Basic YWxpY2U6c2VjcmV0"}, 200},
		{"basic auth missing", "127.0.0.2:1", "/auth/x", nil, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("GET", "example.com", tt.target, tt.headers...)
			nh, query := len(req.Headers), req.Query
			c := newCtx(req)
			c.Remote = netip.MustParseAddrPort(tt.from)
			run := func() {
				c.Scratch = c.Scratch[:0]
				req.Headers, req.Query = req.Headers[:nh], query
				rt.Serve(c)
			}
			run()
			run()
			if c.Resp.Status != tt.status {
				t.Fatalf("status %d; want %d", c.Resp.Status, tt.status)
			}
			if n := testing.AllocsPerRun(500, run); n != 0 {
				t.Errorf("%v allocations per request; want 0", n)
			}
		})
	}
}

// TestRealClientAllocs: finding the client behind trusted proxies in
// X-Forwarded-For (parsed in place) allocates nothing, and access rules
// and rate limits read it.
func TestRealClientAllocs(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "gale.yaml")
	if err := os.WriteFile(file, []byte(`listen: ["127.0.0.1:0"]
server: {trusted_proxies: [127.0.0.1, 10.0.0.0/8, "2001:db8::/32"]}
routes:
  - path: /
    access: [{allow: 203.0.113.0/24}]
    rate_limit: {rate: 1000000/s, burst: 1000000}
    respond: {body: ok}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	rt := mustBuild(t, cfg)
	req := request("GET", "example.com", "/x", "X-Forwarded-For", "198.51.100.1, 203.0.113.7", "X-Forwarded-For", "2001:db8::5, 10.0.0.9")
	c := newCtx(req)
	run := func() {
		c.Scratch = c.Scratch[:0]
		c.Remote, c.Peer = netip.MustParseAddrPort("127.0.0.1:5000"), netip.AddrPort{}
		rt.Serve(c)
	}
	run()
	if c.Resp.Status != 200 || c.Remote.Addr() != netip.MustParseAddr("203.0.113.7") || !c.FromTrustedProxy() {
		t.Fatalf("status %d client %v", c.Resp.Status, c.Remote)
	}
	if n := testing.AllocsPerRun(500, run); n != 0 {
		t.Errorf("%v allocations per request; want 0", n)
	}
}

// TestClusterLimitAllocs: a request under a cluster-scoped limit, spent
// from a lease or refused, allocates nothing (asking for the next lease
// included).
func TestClusterLimitAllocs(t *testing.T) {
	store := newMemStore(t, 3)
	for _, tc := range []struct {
		rl     string
		status int
	}{{"{rate: 1000000/s, burst: 1000000, scope: cluster}", 200}, {"{rate: 1/m, scope: cluster}", 429}} {
		rt := clusterRouter(t, store, tc.rl)
		req := request("GET", "example.com", "/x")
		c := newCtx(req)
		c.Remote = netip.MustParseAddrPort("127.0.0.2:1")
		run := func() {
			c.Scratch = c.Scratch[:0]
			rt.Serve(c)
		}
		for i := 0; i < 50; i++ {
			run()
			time.Sleep(time.Millisecond)
		}
		if c.Resp.Status != tc.status {
			t.Fatalf("%s: status %d; want %d", tc.rl, c.Resp.Status, tc.status)
		}
		if n := testing.AllocsPerRun(500, run); n != 0 {
			t.Errorf("%s: %v allocations per request; want 0", tc.rl, n)
		}
	}
}
