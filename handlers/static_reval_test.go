package handlers

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"gale/cache"
	"gale/config"
)

// browserAE is what Chromium and Firefox send.
const browserAE = "gzip, deflate, br, zstd"

// variantTag names a coded representation of the version whose identity
// tag is base.
func variantTag(base, enc string) string {
	return strings.TrimSuffix(base, `"`) + "-" + enc + `"`
}

// revalCase is a revalidation and what answers it: 304 with the ETag
// want (the representation the client holds), or 200.
type revalCase struct {
	name, target, inm, ae string
	status                int
	want                  string
}

// runReval serves each case with rt and checks the status and, for a
// 304, its fields: the held representation's ETag, Vary, and nothing
// that would rewrite the client's stored copy (no Content-Encoding).
func runReval(t *testing.T, rt *Router, cases []revalCase) {
	t.Helper()
	for _, tt := range cases {
		h := []string{"If-None-Match", tt.inm}
		if tt.ae != "" {
			h = append(h, "Accept-Encoding", tt.ae)
		}
		resp, body := wire(t, serve(t, rt, request("GET", "", tt.target, h...)))
		if resp.StatusCode != tt.status {
			t.Errorf("%s: status %d; want %d (%v)", tt.name, resp.StatusCode, tt.status, resp.Header)
			continue
		}
		if tt.status != 304 {
			continue
		}
		if resp.Header.Get("ETag") != tt.want || resp.Header.Get("Vary") != "Accept-Encoding" ||
			resp.Header.Get("Content-Encoding") != "" || len(body) != 0 {
			t.Errorf("%s: 304 with %v; want ETag %s and Vary", tt.name, resp.Header, tt.want)
		}
	}
}

// Issue 33: a revalidation of any representation of a file's current
// version that the request could have been given is answered 304, naming
// the representation the client holds, whether the compressed variants
// are made yet or not, from the cache or from the file.
func TestStaticRevalidateVariants(t *testing.T) {
	css := cssBody(20000)
	js := cssBody(3000)
	files := map[string]string{
		"site.css":  css,
		"app.js":    js,
		"app.js.br": "precompressed", // a sidecar
	}
	E, J := etagOf(condTime, len(css)), etagOf(condTime, len(js))
	other := etagOf(condTime.Add(1), len(css))
	cases := []revalCase{
		{"identity tag", "/site.css", E, browserAE, 304, E},
		{"zstd tag", "/site.css", variantTag(E, "zstd"), browserAE, 304, variantTag(E, "zstd")},
		{"br tag", "/site.css", variantTag(E, "br"), browserAE, 304, variantTag(E, "br")},
		{"weakened gzip tag", "/site.css", "W/" + variantTag(E, "gzip"), browserAE, 304, variantTag(E, "gzip")},
		{"list", "/site.css", `"a", ` + variantTag(E, "br") + `, "b"`, browserAE, 304, variantTag(E, "br")},
		{"identity without Accept-Encoding", "/site.css", E, "", 304, E},
		{"coding not accepted", "/site.css", variantTag(E, "zstd"), "gzip, br", 200, ""},
		{"coding refused", "/site.css", variantTag(E, "br"), "br;q=0, gzip", 200, ""},
		{"no Accept-Encoding", "/site.css", variantTag(E, "gzip"), "", 200, ""},
		{"another version", "/site.css", other, browserAE, 200, ""},
		{"another version's variant", "/site.css", variantTag(other, "zstd"), browserAE, 200, ""},
		{"unknown coding", "/site.css", variantTag(E, "deflate"), browserAE, 200, ""},
		{"sidecar tag", "/app.js", variantTag(J, "br"), browserAE, 304, variantTag(J, "br")},
		{"identity of a sidecar's file", "/app.js", J, "br", 304, J},
	}

	rt, fc, _ := siteRouter(t, config.Static{}, cache.Options{}, condTime, files)
	// Before the variants exist: every case is the first request for its
	// file on a fresh router, as after a restart.
	for _, tt := range cases {
		fresh, _, _ := siteRouter(t, config.Static{}, cache.Options{}, condTime, files)
		runReval(t, fresh, []revalCase{tt})
	}
	// Once they exist: the next request served in zstd says so.
	waitCoded(t, rt, "/site.css", "zstd")
	runReval(t, rt, cases)
	runReval(t, rt, []revalCase{
		// The selected representation's tag wins wherever it stands.
		{"selected wins", "/site.css", E + ", " + variantTag(E, "gzip") + ", " + variantTag(E, "zstd"), browserAE, 304, variantTag(E, "zstd")},
		{"star", "/site.css", "*", browserAE, 304, variantTag(E, "zstd")},
	})
	// If-Match keeps strong comparison with the selected representation.
	if resp, _ := wire(t, serve(t, rt, request("GET", "", "/site.css", "If-Match", E, "Accept-Encoding", browserAE))); resp.StatusCode != 412 {
		t.Errorf("If-Match of identity, zstd selected: %d; want 412", resp.StatusCode)
	}
	// Without the cache (busy or closed), from the file.
	fc.Close()
	runReval(t, rt, cases)
	// A route that serves gzip only: a br tag names nothing it sends.
	gz, _, _ := siteRouter(t, config.Static{Compress: config.Compress{Encodings: []string{"gzip"}, MinBytes: 1024}}, cache.Options{}, condTime, files)
	runReval(t, gz, []revalCase{
		{"gzip route, br tag", "/site.css", variantTag(E, "br"), browserAE, 200, ""},
		{"gzip route, gzip tag", "/site.css", variantTag(E, "gzip"), browserAE, 304, variantTag(E, "gzip")},
	})
}

// waitCoded repeats a request for target accepting only enc until it is
// served in enc (the cache's worker published the variants), at most
// 100,000 requests within ten seconds.
func waitCoded(t *testing.T, rt *Router, target, enc string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 100000 && time.Now().Before(deadline); i++ {
		if resp, _ := wire(t, serve(t, rt, request("GET", "", target, "Accept-Encoding", enc))); resp.Header.Get("Content-Encoding") == enc {
			return
		}
		runtime.Gosched()
	}
	t.Fatalf("%s never served in %s", target, enc)
}
