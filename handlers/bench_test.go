package handlers

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	"gale/cache"
	"gale/config"
)

// benchRouter has a realistic spread: a few hosts with a dozen prefixes
// each, wildcards and a catch-all group.
func benchRouter(b *testing.B) *Router {
	var routes []config.Route
	for _, host := range []string{"", "example.com", "*.example.com", "api.example.org"} {
		for _, p := range []string{"/", "/api/", "/api/v1/", "/api/v2/", "/static/", "/assets/", "/img", "/login", "/logout", "/hello", "/docs/", "/blog/"} {
			routes = append(routes, respondRoute(host, p, host+p))
		}
	}
	rt, err := Build(&config.Config{Routes: routes})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}

func BenchmarkMatch(b *testing.B) {
	rt := benchRouter(b)
	for _, tt := range []struct{ host, path string }{
		{"", "/hello"},
		{"example.com", "/api/v1/users/42"},
		{"Www.Example.Com:8080", "/static/css/site.css"},
		{"unknown.net", "/blog/2024/01/post"},
	} {
		b.Run(fmt.Sprintf("%s%s", tt.host, tt.path), func(b *testing.B) {
			host, path := []byte(tt.host), []byte(tt.path)
			b.ReportAllocs()
			for b.Loop() {
				if r, _ := rt.Match(host, path); r == nil {
					b.Fatal("no route")
				}
			}
		})
	}
}

func BenchmarkServeRespond(b *testing.B) {
	rt := benchRouter(b)
	c := newCtx(request("GET", "example.com", "/hello", "Accept", "*/*", "User-Agent", "bench"))
	b.ReportAllocs()
	for b.Loop() {
		c.Scratch = c.Scratch[:0]
		rt.Serve(c)
	}
	if c.Resp.Status != 200 {
		b.Fatal(c.Resp.Status)
	}
}

func BenchmarkServeRedirect(b *testing.B) {
	rt, err := Build(&config.Config{Routes: []config.Route{
		{Path: "/old/", Redirect: &config.Redirect{To: "https://example.com/new/", KeepPath: true}},
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	c := newCtx(request("GET", "example.com", "/old/some/page.html?utm=1"))
	b.ReportAllocs()
	for b.Loop() {
		c.Scratch = c.Scratch[:0]
		rt.Serve(c)
	}
}

// BenchmarkServeStatic measures the uncached file path (open, fstat, close)
// that the file cache will replace.
func BenchmarkServeStatic(b *testing.B) {
	root := b.TempDir()
	if err := writeFile(root+"/index.html", "<h1>hi</h1>"); err != nil {
		b.Fatal(err)
	}
	rt, err := Build(&config.Config{Routes: []config.Route{{Path: "/", Static: &config.Static{Root: root, Index: []string{"index.html"}}}}})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	c := newCtx(request("GET", "example.com", "/index.html"))
	b.ReportAllocs()
	for b.Loop() {
		c.Scratch = c.Scratch[:0]
		rt.Serve(c)
		if c.Resp.File == nil {
			b.Fatal(c.Resp.Status)
		}
		c.Resp.File.Close()
	}
}

// BenchmarkServeStaticRevalidate measures revalidations of a cached,
// compressed file by a browser (Accept-Encoding gzip, deflate, br, zstd)
// holding each kind of copy: the selected representation (zstd), the
// identity it got before the variants were made, another coding, and a
// coding the cache has not made (its tag rendered per response).
func BenchmarkServeStaticRevalidate(b *testing.B) {
	css := cssBody(20000)
	rt, _, _ := siteRouter(b, config.Static{}, cache.Options{}, condTime, map[string]string{"site.css": css, "pic.png": css})
	E := etagOf(condTime, len(css))
	lc := &loopConn{}
	for deadline := time.Now().Add(5 * time.Second); ; {
		c := newCtx(request("GET", "", "/site.css", "Accept-Encoding", "zstd"))
		c.Cache = lc
		rt.Serve(c)
		if bytes.Contains(c.Resp.Head, []byte("Content-Encoding: zstd")) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("no zstd variant")
		}
		runtime.Gosched()
	}
	for _, tt := range []struct{ name, target, inm string }{
		{"selected", "/site.css", variantTag(E, "zstd")},
		{"identity", "/site.css", E},
		{"other coding", "/site.css", variantTag(E, "gzip")},
		{"not made", "/pic.png", variantTag(E, "br")},
	} {
		b.Run(tt.name, func(b *testing.B) {
			c := newCtx(request("GET", "", tt.target, "Accept-Encoding", browserAE, "If-None-Match", tt.inm))
			c.Cache = lc
			b.ReportAllocs()
			for b.Loop() {
				c.Scratch = c.Scratch[:0]
				c.Resp.Headers = c.Resp.Headers[:0]
				rt.Serve(c)
			}
			if c.Resp.Status != 304 {
				b.Fatal(c.Resp.Status)
			}
		})
	}
}

// BenchmarkIfNoneMatch compares If-None-Match against a version's
// representations (heldVariant) with the comparison against the selected
// representation alone (listMatches, as If-Match uses it), for a
// browser's one tag and for a cache's list of three.
func BenchmarkIfNoneMatch(b *testing.B) {
	E := etagOf(condTime, 20000)
	Z := variantTag(E, "zstd")
	var ri reqInfo
	ri.ae.Add([]byte(browserAE))
	v := validators{etag: []byte(Z), enc: cache.Zstd, base: []byte(E),
		codings: cache.EncodingSet(0).With(cache.Zstd).With(cache.Brotli).With(cache.Gzip)}
	for _, tt := range []struct{ name, inm string }{
		{"selected", Z},
		{"identity", E},
		{"list", `"a", ` + variantTag(E, "gzip") + ", " + Z},
	} {
		ri.ifNoneMatch = []byte(tt.inm)
		b.Run(tt.name+"/variants", func(b *testing.B) {
			for b.Loop() {
				if _, ok := ri.heldVariant(&v); !ok {
					b.Fatal("no match")
				}
			}
		})
		b.Run(tt.name+"/selected only", func(b *testing.B) {
			for b.Loop() {
				listMatches(ri.ifNoneMatch, v.etag, false)
			}
		})
	}
}
