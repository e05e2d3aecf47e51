package handlers

import (
	"sync/atomic"
	"testing"

	"gale/config"
)

// A live route answers 200 whatever happens; a ready route 200 until the
// stopping flag is set, then 503; neither may be cached, and neither
// answers methods other than GET and HEAD. Serving allocates nothing.
func TestHealthRoutes(t *testing.T) {
	var stopping atomic.Bool
	rt, err := Build(&config.Config{Routes: []config.Route{
		{Path: "/livez", Health: "live"},
		{Path: "/readyz", Health: "ready"},
	}}, WithStopping(&stopping))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	check := func(method, path string, status int, body string) {
		t.Helper()
		c := newCtx(request(method, "", path))
		rt.Serve(c)
		if c.Resp.Status != status || (body != "" && string(c.Resp.Body) != body) ||
			(status < 400 || status == 503) && header(&c.Resp, "Cache-Control") != "no-store" {
			t.Errorf("%s %s: %d %q Cache-Control %q, want %d %q", method, path, c.Resp.Status, c.Resp.Body, header(&c.Resp, "Cache-Control"), status, body)
		}
	}
	check("GET", "/livez", 200, "ok\n")
	check("HEAD", "/readyz", 200, "ok\n")
	check("POST", "/readyz", 405, "")
	stopping.Store(true)
	check("GET", "/readyz", 503, "stopping\n")
	check("GET", "/livez", 200, "ok\n")

	c := newCtx(request("GET", "", "/readyz"))
	if n := testing.AllocsPerRun(100, func() { rt.Serve(c) }); n != 0 {
		t.Errorf("%v allocations per probe", n)
	}
}
