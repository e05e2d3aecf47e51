//go:build !race

package handlers

import (
	"testing"

	"gale/config"
)

func allocConfig() *config.Config {
	return &config.Config{Routes: []config.Route{
		{Host: "example.com", Path: "/hello", Respond: &config.Respond{Status: 200, Body: "hello\n", ContentType: "text/plain"},
			Headers: config.HeaderRules{
				Request: config.HeaderOps{
					Remove: []string{"Cookie"},
					Set:    []config.HeaderKV{{Name: "X-Env", Value: "prod"}},
					Add:    []config.HeaderKV{{Name: "X-Tag", Value: "a"}},
				},
				Response: config.HeaderOps{
					Remove: []string{"X-Powered-By"},
					Set:    []config.HeaderKV{{Name: "Strict-Transport-Security", Value: "max-age=63072000"}},
					Add:    []config.HeaderKV{{Name: "Vary", Value: "Origin"}},
				},
			}},
		{Host: "*.example.com", Path: "/", Respond: &config.Respond{Status: 200, Body: "wild"}},
		{Path: "/old/", Redirect: &config.Redirect{To: "https://example.com/new/", Status: 308, KeepPath: true}},
		{Path: "/", Respond: &config.Respond{Status: 404}},
	}}
}

// Routing, the respond and redirect handlers, header rules and error
// responses allocate nothing on a reused Ctx.
func TestServeAllocs(t *testing.T) {
	rt := mustBuild(t, allocConfig())
	tests := []struct {
		name, host, target string
		status             int
		headers            []string
	}{
		{"respond with rules", "Example.COM:8080", "/hello?x=1", 200, []string{"Cookie", "a=b", "X-Env", "dev", "Accept", "*/*"}},
		{"wildcard", "www.example.com", "/x/y", 200, nil},
		{"redirect", "other.org", "/old/a/b?q=1", 308, nil},
		{"path to normalise", "other.org", "//old/./%61/x/../b%7e?q=1", 308, nil},
		{"path refused", "other.org", "/old/..;/x", 400, nil},
		{"no route", "example.com", "/nothing", 404, []string{"Accept", "application/json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("GET", tt.host, tt.target, tt.headers...)
			nh := len(req.Headers)
			c := newCtx(req)
			run := func() {
				// What the app does between requests: reset scratch and
				// the request's header table (the codec re-parses it).
				c.Scratch = c.Scratch[:0]
				req.Headers = req.Headers[:nh]
				rt.Serve(c)
			}
			run()
			if c.Resp.Status != tt.status {
				t.Fatalf("status %d; want %d", c.Resp.Status, tt.status)
			}
			if n := testing.AllocsPerRun(200, run); n != 0 {
				t.Errorf("%v allocations per request; want 0", n)
			}
		})
	}
}

func TestMatchAllocs(t *testing.T) {
	rt := mustBuild(t, allocConfig())
	host, path := []byte("WWW.Example.com.:443"), []byte("/a/b/c")
	if n := testing.AllocsPerRun(200, func() { rt.Match(host, path) }); n != 0 {
		t.Errorf("%v allocations per Match; want 0", n)
	}
}
