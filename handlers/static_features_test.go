package handlers

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gale/cache"
	"gale/config"
	"gale/internal/poll"
)

// cssBody is a compressible stylesheet of about n bytes.
func cssBody(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(".c")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(" { color: #123456; margin: 0 auto; }\n")
	}
	return b.String()[:n]
}

// serveUntil repeats a request until ok accepts the response: the
// cache's workers publish compressed variants after the response that
// asked for them, so between tries it waits for the workers to be idle.
// A response still refused once they are is a failure, not lateness.
func serveUntil(t *testing.T, rt *Router, c *cache.Cache, req func() *Ctx, ok func(*http.Response) bool) (*http.Response, []byte) {
	t.Helper()
	var resp *http.Response
	var body []byte
	for range 3 { // a load, then its variants, then the hit that sees them
		if resp, body = wire(t, req()); ok(resp) {
			return resp, body
		}
		cacheIdle(t, c)
	}
	t.Fatalf("no acceptable response with the cache idle: %d %v", resp.StatusCode, resp.Header)
	return nil, nil
}

// cacheIdle waits (bounded) until c has no load or compression queued or
// running. The workers announce nothing when they go idle, so it polls
// their jobs counter (poll.Must).
func cacheIdle(t *testing.T, c *cache.Cache) {
	t.Helper()
	poll.Must(t, 10*time.Second, "the cache's workers to be idle", func() bool { return c.Stats().Pending == 0 })
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStaticCompression(t *testing.T) {
	css := cssBody(20000)
	js := cssBody(3000)
	rt, c, _ := siteRouter(t, config.Static{}, cache.Options{}, condTime, map[string]string{
		"site.css":  css,
		"app.js":    js,
		"app.js.gz": "precompressed", // a sidecar, served as is
		"pic.png":   css,             // not a compressible type
	})
	get := func(target string, h ...string) func() *Ctx {
		return func() *Ctx { return serve(t, rt, request("GET", "", target, h...)) }
	}
	// Until the worker has compressed the body, identity is served, with
	// Vary.
	resp, body := wire(t, get("/site.css", "Accept-Encoding", "gzip")())
	if resp.Header.Get("Vary") != "Accept-Encoding" || resp.StatusCode != 200 {
		t.Fatalf("first response: %d %v", resp.StatusCode, resp.Header)
	}
	if resp.Header.Get("Content-Encoding") == "" && string(body) != css {
		t.Fatal("identity body differs")
	}
	resp, body = serveUntil(t, rt, c, get("/site.css", "Accept-Encoding", "gzip"), func(r *http.Response) bool {
		return r.Header.Get("Content-Encoding") == "gzip"
	})
	if string(gunzip(t, body)) != css || resp.ContentLength != int64(len(body)) || len(body) >= len(css)/2 {
		t.Fatalf("gzip body: %d bytes for %d", len(body), len(css))
	}
	gzTag := resp.Header.Get("ETag")
	if !strings.HasSuffix(gzTag, `-gzip"`) {
		t.Errorf("gzip ETag %q", gzTag)
	}
	for _, tt := range []struct{ ae, want string }{
		{"", ""},
		{"br", "br"},
		{"zstd", "zstd"},
		{"gzip;q=0.5, br;q=0.9", "br"},
		{"gzip, br, zstd", "zstd"}, // equal weights: the route's order (zstd, br, gzip)
		{"*", "zstd"},
		{"br;q=0", ""},
		{"gzip;q=0.2, identity;q=0.5", ""},
		{"x-gzip", "gzip"},
		{"compress, deflate", ""},
	} {
		h := []string{}
		if tt.ae != "" {
			h = []string{"Accept-Encoding", tt.ae}
		}
		resp, _ := wire(t, get("/site.css", h...)())
		if got := resp.Header.Get("Content-Encoding"); got != tt.want || resp.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q; want %q (Vary %q)", tt.ae, got, tt.want, resp.Header.Get("Vary"))
		}
	}
	// Two Accept-Encoding lines count as one list.
	if resp, _ := wire(t, get("/site.css", "Accept-Encoding", "identity;q=0.1", "Accept-Encoding", "gzip")()); resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("two lines: %q", resp.Header.Get("Content-Encoding"))
	}
	// Validators and ranges are those of the representation sent.
	if resp, _ := wire(t, get("/site.css", "Accept-Encoding", "gzip", "If-None-Match", gzTag)()); resp.StatusCode != 304 || resp.Header.Get("ETag") != gzTag {
		t.Errorf("If-None-Match gzip: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := wire(t, get("/site.css", "If-None-Match", gzTag)()); resp.StatusCode != 200 {
		t.Errorf("gzip ETag matched identity: %d", resp.StatusCode)
	}
	resp, part := wire(t, get("/site.css", "Accept-Encoding", "gzip", "Range", "bytes=0-9")())
	_, full := wire(t, get("/site.css", "Accept-Encoding", "gzip")())
	if resp.StatusCode != 206 || resp.Header.Get("Content-Encoding") != "gzip" || !bytes.Equal(part, full[:10]) ||
		resp.Header.Get("Content-Range") != "bytes 0-9/"+strconv.Itoa(len(full)) {
		t.Errorf("gzip range: %d %v", resp.StatusCode, resp.Header)
	}
	// A file compressed once is not compressed again.
	for range 50 {
		wire(t, get("/site.css", "Accept-Encoding", "gzip, br, zstd")())
	}
	if s := c.Stats(); s.Compressions != [4]uint64{0, 1, 1, 1} {
		t.Errorf("compressions %v; want one per coding", s.Compressions)
	}
	// A sidecar is served from the first request, even when it could not
	// be worth it as a compressed body.
	if resp, body := wire(t, get("/app.js", "Accept-Encoding", "gzip")()); resp.Header.Get("Content-Encoding") != "gzip" || string(body) != "precompressed" {
		t.Errorf("sidecar: %v %q", resp.Header, body)
	}
	// Not a compressible type: identity, still negotiable; still so once
	// the workers are done with whatever its first request queued.
	cacheIdle(t, c)
	before := c.Stats().Compressions
	for range 2 {
		if resp, body := wire(t, get("/pic.png", "Accept-Encoding", "gzip")()); resp.Header.Get("Content-Encoding") != "" || string(body) != css {
			t.Errorf("png: %v", resp.Header)
		}
		cacheIdle(t, c)
	}
	if s := c.Stats(); s.Compressions != before {
		t.Errorf("compressions %v after the png, %v before", s.Compressions, before)
	}
}

func TestStaticCompressSettings(t *testing.T) {
	css := cssBody(5000)
	files := map[string]string{"a.css": css}
	for _, tt := range []struct {
		name    string
		c       config.Compress
		ae, enc string
		vary    bool
	}{
		{"gzip only, br asked", config.Compress{Encodings: []string{"gzip"}, MinBytes: 1024}, "br", "", true},
		{"gzip only", config.Compress{Encodings: []string{"gzip"}, MinBytes: 1024}, "br, gzip", "gzip", true},
		{"preference order", config.Compress{Encodings: []string{"gzip", "br"}, MinBytes: 1024}, "br, gzip", "gzip", true},
		{"none", config.Compress{Encodings: []string{}, MinBytes: 1024}, "gzip", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rt, c, _ := siteRouter(t, config.Static{Compress: tt.c}, cache.Options{}, condTime, files)
			req := func() *Ctx { return serve(t, rt, request("GET", "", "/a.css", "Accept-Encoding", tt.ae)) }
			if tt.enc != "" {
				serveUntil(t, rt, c, req, func(r *http.Response) bool { return r.Header.Get("Content-Encoding") == tt.enc })
			} else {
				// Identity even once the workers did all the requests asked.
				for range 2 {
					wire(t, req())
					cacheIdle(t, c)
				}
				if resp, _ := wire(t, req()); resp.Header.Get("Content-Encoding") != "" {
					t.Fatalf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
				}
			}
			if resp, _ := wire(t, req()); (resp.Header.Get("Vary") != "") != tt.vary {
				t.Errorf("Vary %q", resp.Header.Get("Vary"))
			}
		})
	}
	// min_bytes above the file's size: never compressed.
	rt, c, _ := siteRouter(t, config.Static{Compress: config.Compress{Encodings: []string{"gzip"}, MinBytes: 6000}}, cache.Options{}, condTime, files)
	for range 5 {
		serve(t, rt, request("GET", "", "/a.css", "Accept-Encoding", "gzip"))
		cacheIdle(t, c) // whatever the request queued is done
	}
	if resp, _ := wire(t, serve(t, rt, request("GET", "", "/a.css", "Accept-Encoding", "gzip"))); resp.Header.Get("Content-Encoding") != "" ||
		c.Stats().Compressions != [4]uint64{} {
		t.Errorf("compressed below min_bytes: %v %v", resp.Header, c.Stats().Compressions)
	}
}

func TestStaticSPAFallback(t *testing.T) {
	rt, _, _ := siteRouter(t, config.Static{SPAFallback: "/app.html"}, cache.Options{}, condTime, map[string]string{
		"app.html":   "<app>",
		"real.txt":   "real",
		"docs/a.txt": "a",
	})
	for _, tt := range []struct {
		method, target string
		headers        []string
		status         int
		body           string
	}{
		{"GET", "/users/42", nil, 200, "<app>"},
		{"GET", "/users/42.json", []string{"Accept", "text/html,application/xhtml+xml"}, 200, "<app>"},
		{"GET", "/users/42.json", []string{"Accept", "*/*"}, 404, ""},
		{"GET", "/missing.js", nil, 404, ""},
		{"HEAD", "/deep/link/", nil, 200, ""},
		{"GET", "/real.txt", nil, 200, "real"},
		{"GET", "/docs/a.txt", nil, 200, "a"},
		{"GET", "/docs/", nil, 404, ""}, // a directory without an index is not an unknown path
		{"GET", "/.hidden", nil, 404, ""},
		{"POST", "/users/42", nil, 405, ""},
	} {
		c := serve(t, rt, request(tt.method, "", tt.target, tt.headers...))
		resp, body := wire(t, c)
		if resp.StatusCode != tt.status || (tt.status == 200 && string(body) != tt.body) {
			t.Errorf("%s %s %v: %d %q; want %d %q", tt.method, tt.target, tt.headers, resp.StatusCode, body, tt.status, tt.body)
		}
		if tt.status == 200 && tt.body == "<app>" && resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", tt.target, resp.Header.Get("Content-Type"))
		}
	}
}

func TestStaticErrorPages(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "404.html")
	if err := os.WriteFile(page, []byte("<h1>gone</h1>"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "405.txt")
	if err := os.WriteFile(big, []byte(strings.Repeat("no ", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	rt, _, _ := siteRouter(t, config.Static{ErrorPages: map[int]string{404: page, 405: big, 403: filepath.Join(dir, "missing.html")}},
		cache.Options{MaxFileBytes: 100}, condTime, map[string]string{"a.txt": "a"})
	for _, tt := range []struct {
		method, target string
		status         int
		ct, body       string
	}{
		{"GET", "/nope", 404, "text/html; charset=utf-8", "<h1>gone</h1>"},
		{"GET", "/.env", 404, "text/html; charset=utf-8", "<h1>gone</h1>"},
		{"HEAD", "/nope", 404, "text/html; charset=utf-8", ""},
		{"DELETE", "/a.txt", 405, "text/plain; charset=utf-8", strings.Repeat("no ", 100)}, // larger than max_file_bytes: streamed
		{"GET", "/a.txt", 200, "text/plain; charset=utf-8", "a"},
	} {
		c := serve(t, rt, request(tt.method, "", tt.target, "If-None-Match", "*"))
		resp, body := wire(t, c)
		if tt.status == 200 {
			if resp.StatusCode != 304 {
				t.Errorf("%s: %d; want 304 for If-None-Match: *", tt.target, resp.StatusCode)
			}
			continue
		}
		if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != tt.ct || string(body) != tt.body {
			t.Errorf("%s %s: %d %q %q", tt.method, tt.target, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if tt.status == 405 && resp.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
			t.Errorf("405 without Allow: %v", resp.Header)
		}
	}
	// A page that went missing falls back to the fixed error body.
	if err := os.Remove(page); err != nil {
		t.Fatal(err)
	}
	rt2, _, _ := siteRouter(t, config.Static{ErrorPages: map[int]string{404: page}}, cache.Options{}, condTime, nil)
	c := serve(t, rt2, request("GET", "", "/nope"))
	if resp, body := wire(t, c); resp.StatusCode != 404 || string(body) != "404 Not Found\n" {
		t.Errorf("missing page: %d %q", resp.StatusCode, body)
	}
}

func TestStaticBrowse(t *testing.T) {
	files := map[string]string{
		"b.txt":                  "bb",
		"a&<b>.txt":              "x",
		`quo"te's.txt`:           "q",
		"sp ace?#.txt":           "s",
		"x:y":                    "c",
		".secret":                "no",
		"sub/inner.txt":          "i",
		"zdir/.keep":             "",
		"withindex/index.html":   "idx",
		"withindex/other.txt":    "o",
		"sub/deeper/nothing.txt": "",
	}
	rt, _, root := siteRouter(t, config.Static{Browse: true}, cache.Options{}, condTime, files)
	if err := os.Symlink("b.txt", filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(root, "outlink")); err != nil {
		t.Fatal(err)
	}
	resp, body := wire(t, serve(t, rt, request("GET", "", "/")))
	page := string(body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || resp.Header.Get("Vary") != "Accept" {
		t.Fatalf("listing: %d %v", resp.StatusCode, resp.Header)
	}
	for _, want := range []string{
		"<title>Index of /</title>",
		`<a href="sub/">sub/</a>`,
		`<a href="a&amp;%3Cb%3E.txt">a&amp;&lt;b&gt;.txt</a>`,
		`<a href="quo%22te%27s.txt">quo&#34;te&#39;s.txt</a>`,
		`<a href="sp%20ace%3F%23.txt">sp ace?#.txt</a>`,
		`<a href="./x:y">x:y</a>`,
		`<a href="link.txt">link.txt</a>`,
		`title="2 bytes">2 B</td><td>2024-02-29 12:04:05 UTC</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("listing lacks %q:\n%s", want, page)
		}
	}
	for _, bad := range []string{".secret", "outlink", "<b>", "../"} {
		if strings.Contains(page, bad) {
			t.Errorf("listing shows %q", bad)
		}
	}
	// Directories first, then names in byte order.
	order := []string{`"sub/"`, `"withindex/"`, `"zdir/"`, `"a&amp;`, `"b.txt"`, `"link.txt"`, `"quo`, `"sp%20`, `"./x:y"`}
	last := -1
	for _, s := range order {
		i := strings.Index(page, "href="+s)
		if i < last {
			t.Errorf("%s out of order", s)
		}
		last = i
	}
	// JSON for clients that ask for it only.
	resp, body = wire(t, serve(t, rt, request("GET", "", "/sub/", "Accept", "application/json")))
	var entries []struct {
		Name  string `json:"name"`
		URL   string `json:"url"`
		IsDir bool   `json:"is_dir"`
		Size  int64  `json:"size"`
	}
	if err := json.Unmarshal(body, &entries); err != nil || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("JSON listing: %v %q", err, body)
	}
	if len(entries) != 2 || entries[0].Name != "deeper" || !entries[0].IsDir || entries[1].Name != "inner.txt" || entries[1].Size != 1 {
		t.Errorf("JSON entries %+v", entries)
	}
	// The parent link below the root; an index file wins; a directory
	// without its slash redirects.
	if _, body := wire(t, serve(t, rt, request("GET", "", "/sub/"))); !strings.Contains(string(body), `<a href="../">../</a>`) ||
		!strings.Contains(string(body), "Index of /sub/") {
		t.Errorf("sub listing: %s", body)
	}
	if _, body := wire(t, serve(t, rt, request("GET", "", "/withindex/"))); string(body) != "idx" {
		t.Errorf("index file: %q", body)
	}
	if c := serve(t, rt, request("GET", "", "/sub")); c.Resp.Status != 301 {
		t.Errorf("/sub: %d", c.Resp.Status)
	}
	// Off by default.
	off, _, _ := siteRouter(t, config.Static{}, cache.Options{}, condTime, files)
	if c := serve(t, off, request("GET", "", "/")); c.Resp.Status != 404 {
		t.Errorf("browse off: %d", c.Resp.Status)
	}
}

// A file larger than max_file_bytes is opened per request; one that
// changed since its entry was made is served as it is now.
func TestStaticLargeFiles(t *testing.T) {
	body := strings.Repeat("0123456789", 100)
	rt, c, root := siteRouter(t, config.Static{}, cache.Options{MaxFileBytes: 100, Revalidate: time.Hour}, condTime, map[string]string{"big.txt": body})
	ctx := serve(t, rt, request("GET", "", "/big.txt"))
	if ctx.Resp.File == nil || ctx.Resp.Head == nil || ctx.Resp.FileSize != 1000 {
		t.Fatalf("large file: file %v head %q size %d", ctx.Resp.File, ctx.Resp.Head, ctx.Resp.FileSize)
	}
	if resp, got := wire(t, ctx); string(got) != body || resp.Header.Get("ETag") != etagOf(condTime, 1000) {
		t.Fatalf("large body %d bytes, %v", len(got), resp.Header)
	}
	// Replace it: the entry (revalidated hourly) still describes the old
	// version, but the response describes the new one.
	newBody := strings.Repeat("abc", 500)
	tmp := filepath.Join(root, "big.tmp")
	if err := os.WriteFile(tmp, []byte(newBody), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(root, "big.txt")); err != nil {
		t.Fatal(err)
	}
	// Written a moment ago, it is within its racy window: a write now
	// might leave its mtime, so it cannot be streamed with a check yet.
	if c := serve(t, rt, request("GET", "", "/big.txt")); c.Resp.Status != 503 || header(&c.Resp, "Retry-After") != "1" {
		t.Fatalf("a file written just now: %d, Retry-After %q; want 503 and 1", c.Resp.Status, header(&c.Resp, "Retry-After"))
	}
	if err := os.Chtimes(filepath.Join(root, "big.txt"), condTime.Add(time.Hour), condTime.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	resp, got := wire(t, serve(t, rt, request("GET", "", "/big.txt")))
	if string(got) != newBody || resp.ContentLength != 1500 {
		t.Fatalf("after a replace: %d bytes, Content-Length %d", len(got), resp.ContentLength)
	}
	// And the next request has a new entry.
	ctx = serve(t, rt, request("GET", "", "/big.txt"))
	if resp, got := wire(t, ctx); string(got) != newBody || ctx.Resp.Head == nil || resp.Header.Get("Content-Length") != "1500" {
		t.Fatalf("new version: %q", resp.Header)
	}
	if s := c.Stats(); s.Entries != 1 {
		t.Errorf("entries %d", s.Entries)
	}
}
