//go:build !race

package handlers

import (
	"net/http"
	"runtime"
	"testing"

	"gale/cache"
	"gale/config"
)

// A cache hit allocates nothing in the handler: identity, a compressed
// representation, 304s (of the selected representation and of others of
// the version), a range and an index file.
func TestStaticHitAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	css := cssBody(20000)
	rt, fc, _ := siteRouter(t, config.Static{CacheControl: "max-age=60"}, cache.Options{}, condTime, map[string]string{
		"site.css":   css,
		"index.html": "<h1>home</h1>",
		"pic.png":    css, // never compressed: a tag of its br variant is rendered per response
	})
	lc := &loopConn{}
	// Publish the compressed variants first.
	serveUntil(t, rt, fc, func() *Ctx {
		c := newCtx(request("GET", "", "/site.css", "Accept-Encoding", "gzip"))
		c.Cache = lc
		rt.Serve(c)
		return c
	}, func(r *http.Response) bool { return r.Header.Get("Content-Encoding") == "gzip" })
	E := etagOf(condTime, len(css))
	tests := []struct {
		name, target string
		headers      []string
		status       int
	}{
		{"identity", "/site.css", []string{"Accept", "*/*"}, 200},
		{"gzip", "/site.css", []string{"Accept-Encoding", "gzip, deflate, br;q=0.5"}, 200},
		{"304", "/site.css", []string{"If-None-Match", E}, 304},
		{"304 of identity, zstd selected", "/site.css", []string{"If-None-Match", E, "Accept-Encoding", browserAE}, 304},
		{"304 of another variant", "/site.css", []string{"If-None-Match", variantTag(E, "br"), "Accept-Encoding", browserAE}, 304},
		{"304 of a variant not made", "/pic.png", []string{"If-None-Match", variantTag(E, "br"), "Accept-Encoding", browserAE}, 304},
		{"range", "/site.css", []string{"Range", "bytes=100-199"}, 206},
		{"index", "/", []string{"If-Modified-Since", "Thu, 29 Feb 2024 12:04:04 GMT"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("GET", "example.com", tt.target, tt.headers...)
			nh := len(req.Headers)
			c := newCtx(req)
			c.Cache = lc
			run := func() {
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
