package handlers

import (
	"testing"

	"gale/codec"
	"gale/config"
)

// A kept request takes Path and Rest with it where they alias the
// request's path, and leaves them where they live in Scratch or static
// memory: overwriting every byte the request was parsed from changes
// none of them.
func TestKeepRequest(t *testing.T) {
	rt := mustBuild(t, &config.Config{Routes: []config.Route{
		respondRoute("", "/api/", "api"),
		respondRoute("", "/exact", "exact"),
	}})
	for _, tt := range []struct{ target, path, rest string }{
		{"/api/users?id=1", "/api/users", "/users"},      // normal: Path aliases the request
		{"//%61pi/./x/../users", "/api/users", "/users"}, // normalised into Scratch
		{"/exact", "/exact", "/"},                        // Rest is static memory
		{"/api/", "/api/", "/"},
	} {
		req := request("GET", "example.com", tt.target, "X-A", "1")
		c := newCtx(req)
		rt.Serve(c)
		var kept codec.Request
		buf := c.KeepRequest(&kept, nil)
		for _, b := range [][]byte{req.Method, req.Target, req.Path, req.Query, req.Host, req.Headers[len(req.Headers)-1].Name, req.Headers[len(req.Headers)-1].Value} {
			for i := range b {
				b[i] = '#'
			}
		}
		if c.Req != &kept || string(c.Path) != tt.path || string(c.Rest) != tt.rest ||
			string(kept.Host) != "example.com" || string(kept.Header("X-A")) != "1" {
			t.Errorf("%s: req %v path %q rest %q host %q header %q", tt.target, c.Req == &kept, c.Path, c.Rest, kept.Host, kept.Headers)
		}
		// Keeping it again changes nothing.
		if again := c.KeepRequest(&kept, buf); c.Req != &kept || string(c.Path) != tt.path || len(again) != len(buf) {
			t.Errorf("%s: kept twice: path %q", tt.target, c.Path)
		}
	}
}
