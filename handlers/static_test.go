package handlers

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gale/config"
)

// staticTree lays out a site under dir/root and a secret next to it:
//
//	root/index.html  a.txt  style.CSS  app.mjs  data.json  logo.svg  pic.png
//	     blob.unknownext  notes.custom  empty.txt  .env  .git/config
//	     dir/index.html  noindex/x.txt  alt/default.htm  evil.com/  %2e%2e (a file)
//	     link-in -> a.txt  link-abs-in -> <root>/a.txt  link-out -> ../outside/secret.txt
//	     link-abs-out -> <dir>/outside/secret.txt  linkdir -> dir  fifo (a named pipe)
//	outside/secret.txt
func staticTree(t *testing.T) (root, outside string) {
	t.Helper()
	dir := t.TempDir()
	root = filepath.Join(dir, "root")
	outside = filepath.Join(dir, "outside")
	files := map[string]string{
		"index.html":          "<h1>home</h1>",
		"a.txt":               "alpha",
		"style.CSS":           "body{}",
		"app.mjs":             "export{}",
		"data.json":           "{}",
		"logo.svg":            "<svg/>",
		"pic.png":             "\x89PNG",
		"blob.unknownext":     "?",
		"notes.custom":        "n",
		"empty.txt":           "",
		".env":                "SECRET=1",
		".git/config":         "[core]",
		"dir/index.html":      "dir index",
		"noindex/x.txt":       "x",
		"alt/default.htm":     "alt default",
		"evil.com/index.html": "e",
		"%2e%2e":              "literal name",
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"link-in":      "a.txt",
		"link-abs-in":  filepath.Join(root, "a.txt"),
		"link-out":     "../outside/secret.txt",
		"link-abs-out": filepath.Join(outside, "secret.txt"),
		"link-around":  "../root/a.txt", // leaves the root and comes back
		"linkdir":      "dir",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

func staticRouter(t *testing.T, root string, sc config.Static, mime map[string]string) *Router {
	t.Helper()
	sc.Root = root
	if sc.Index == nil {
		sc.Index = []string{"index.html"}
	}
	if sc.Compress.Encodings == nil {
		sc.Compress = config.Compress{Encodings: []string{"zstd", "br", "gzip"}, MinBytes: 1024}
	}
	return mustBuild(t, &config.Config{
		MimeTypes: mime,
		Routes: []config.Route{
			{Path: "/", Static: &sc},
			{Path: "/static/", Static: &sc},
			{Path: "/docs", Static: &sc},
		},
	})
}

// fileBody reads the response body, from Parts, File or Body.
func fileBody(t *testing.T, r *Response) string {
	t.Helper()
	if r.File != nil && r.Body != nil {
		t.Errorf("Body set next to File")
	}
	return string(responseBody(t, r))
}

type staticCase struct {
	target string
	status int
	body   string // for 200: the file contents
}

func runStatic(t *testing.T, rt *Router, tests []staticCase) {
	t.Helper()
	for _, tt := range tests {
		c := serve(t, rt, request("GET", "example.com", tt.target))
		if c.Resp.Status != tt.status {
			t.Errorf("GET %q: status %d; want %d", tt.target, c.Resp.Status, tt.status)
			continue
		}
		if tt.status != 200 {
			if c.Resp.File != nil {
				t.Errorf("GET %q: %d with a file body", tt.target, tt.status)
			}
			if strings.Contains(string(c.Resp.Body), "SECRET") {
				t.Errorf("GET %q: leaked %q", tt.target, c.Resp.Body)
			}
			continue
		}
		if got := fileBody(t, &c.Resp); got != tt.body {
			t.Errorf("GET %q: body %q; want %q", tt.target, got, tt.body)
		}
	}
}

func TestStaticTraversal(t *testing.T) {
	root, _ := staticTree(t)
	rt := staticRouter(t, root, config.Static{}, nil)
	runStatic(t, rt, []staticCase{
		{"/a.txt", 200, "alpha"},
		{"/static/a.txt", 200, "alpha"},
		{"/static/dir/../a.txt", 200, "alpha"},
		{"/static/./dir/./../a.txt", 200, "alpha"},
		{"/static//a.txt", 200, "alpha"},
		{"/static/%61.txt", 200, "alpha"},
		// "/static/.." is "/": the rest is looked up under the root, where
		// it does not exist.
		{"/static/../outside/secret.txt", 404, ""},
		{"/static/../../outside/secret.txt", 400, ""},
		{"/../outside/secret.txt", 400, ""},
		{"/..", 400, ""},
		{"/dir/../../outside/secret.txt", 400, ""},
		{"/static/%2e%2e/outside/secret.txt", 404, ""},
		{"/static/%2E%2E/outside/secret.txt", 404, ""},
		{"/static/.%2e/outside/secret.txt", 404, ""},
		{"/static/%2e%2e/%2e%2e/outside/secret.txt", 400, ""},
		// Dot segments between encoded slashes and backslashes are
		// refused by the normalisation; an encoded slash elsewhere is a
		// separator to the static handler, as to the router (issue 29),
		// and a path parameter is no part of a file name.
		{"/static/%2e%2e%2foutside%2fsecret.txt", 400, ""},
		{"/static/..%2f..%2foutside/secret.txt", 400, ""},
		{"/static/dir%2findex.html", 200, "dir index"},
		{"/static/a.txt;v=1", 200, "alpha"},
		{"/static/..;/outside/secret.txt", 400, ""},
		{"/static/..%5c..%5coutside%5csecret.txt", 400, ""},
		{"/static/..\\outside\\secret.txt", 400, ""},
		{"/static/a.txt%00.html", 400, ""},
		{"/static/a.txt\x00", 400, ""},
		{"/static/%252e%252e/outside/secret.txt", 404, ""},
		{"/static/%252e%252e", 200, "literal name"}, // decoded once: the file named "%2e%2e"
		{"/static/%", 400, ""},
		{"/static/%2", 400, ""},
		{"/static/%zz", 400, ""},
		{"/static/a.txt/", 404, ""},
		{"/static/missing.txt", 404, ""},
		{"/static/fifo", 404, ""},
	})
}

func TestStaticHidden(t *testing.T) {
	root, _ := staticTree(t)
	deny := staticRouter(t, root, config.Static{}, nil)
	runStatic(t, deny, []staticCase{
		{"/.env", 404, ""},
		{"/.git/config", 404, ""},
		{"/%2egit/config", 404, ""},
		{"/dir/../.env", 404, ""},
		{"/.git/", 404, ""},
	})
	allow := staticRouter(t, root, config.Static{Hidden: "allow"}, nil)
	runStatic(t, allow, []staticCase{
		{"/.env", 200, "SECRET=1"},
		{"/.git/config", 200, "[core]"},
	})
}

func TestStaticSymlinks(t *testing.T) {
	root, _ := staticTree(t)
	tests := []struct {
		mode  string
		cases []staticCase
	}{
		{"inside_root", []staticCase{
			{"/a.txt", 200, "alpha"},
			{"/link-in", 200, "alpha"},
			{"/link-abs-in", 200, "alpha"},
			{"/link-around", 200, "alpha"},
			{"/linkdir/index.html", 200, "dir index"},
			{"/linkdir/", 200, "dir index"},
			{"/link-out", 404, ""},
			{"/link-abs-out", 404, ""},
		}},
		{"", []staticCase{ // the default is inside_root
			{"/link-in", 200, "alpha"},
			{"/link-out", 404, ""},
		}},
		{"always", []staticCase{
			{"/link-in", 200, "alpha"},
			{"/link-abs-in", 200, "alpha"},
			{"/link-out", 200, "SECRET"},
			{"/link-abs-out", 200, "SECRET"},
			{"/linkdir/index.html", 200, "dir index"},
		}},
		{"never", []staticCase{
			{"/a.txt", 200, "alpha"},
			{"/dir/", 200, "dir index"},
			{"/link-in", 404, ""},
			{"/link-abs-in", 404, ""},
			{"/link-out", 404, ""},
			{"/linkdir/index.html", 404, ""},
			{"/linkdir/", 404, ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			runStatic(t, staticRouter(t, root, config.Static{FollowSymlinks: tt.mode}, nil), tt.cases)
		})
	}
}

// A root reached through a symbolic link is resolved once, at Build.
func TestStaticRootThroughSymlink(t *testing.T) {
	root, _ := staticTree(t)
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(root, alias); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		mode       string
		in, absOut int // statuses of /link-in and /link-abs-out
	}{{"inside_root", 200, 404}, {"never", 404, 404}, {"always", 200, 200}} {
		rt := staticRouter(t, alias, config.Static{FollowSymlinks: tt.mode}, nil)
		runStatic(t, rt, []staticCase{{"/a.txt", 200, "alpha"}, {"/link-in", tt.in, "alpha"}, {"/link-abs-out", tt.absOut, "SECRET"}})
	}
}

func TestStaticDirectories(t *testing.T) {
	root, _ := staticTree(t)
	rt := staticRouter(t, root, config.Static{Index: []string{"index.html", "default.htm"}}, nil)
	runStatic(t, rt, []staticCase{
		{"/", 200, "<h1>home</h1>"},
		{"/static/", 200, "<h1>home</h1>"},
		{"/dir/", 200, "dir index"},
		{"/dir/.", 200, "dir index"},
		{"/dir/x/..", 200, "dir index"}, // cleaned lexically: x need not exist
		{"/alt/", 200, "alt default"},
		{"/noindex/", 404, ""},
		{"/noindex/x.txt", 200, "x"},
		{"/docs/", 200, "<h1>home</h1>"},
		{"/docs/dir/", 200, "dir index"},
	})
	redirects := []struct{ target, location string }{
		{"/dir", "/dir/"},
		{"/dir?a=1&b", "/dir/?a=1&b"},
		{"/static/dir", "/static/dir/"},
		{"/static/noindex?x", "/static/noindex/?x"},
		{"/docs", "/docs/"}, // the route "/docs" matched exactly: its root is a directory
		{"/docs/dir", "/docs/dir/"},
		{"/a/../dir", "/dir/"}, // the normalised path
		{"//evil.com", "/evil.com/"},
		{"///evil.com?x", "/evil.com/?x"},
	}
	for _, tt := range redirects {
		c := serve(t, rt, request("GET", "example.com", tt.target))
		if c.Resp.Status != 301 || header(&c.Resp, "Location") != tt.location {
			t.Errorf("GET %q: %d Location %q; want 301 %q", tt.target, c.Resp.Status, header(&c.Resp, "Location"), tt.location)
		}
	}
	none := staticRouter(t, root, config.Static{Index: []string{}}, nil)
	runStatic(t, none, []staticCase{{"/", 404, ""}, {"/dir/", 404, ""}, {"/dir/index.html", 200, "dir index"}})
}

func TestStaticContentTypes(t *testing.T) {
	root, _ := staticTree(t)
	rt := staticRouter(t, root, config.Static{}, map[string]string{
		".custom":    "text/x-custom",
		"unknownext": "application/x-unknown",
		".png":       "image/x-png",
	})
	tests := []struct{ target, ct string }{
		{"/index.html", "text/html; charset=utf-8"},
		{"/", "text/html; charset=utf-8"},
		{"/a.txt", "text/plain; charset=utf-8"},
		{"/style.CSS", "text/css; charset=utf-8"},
		{"/app.mjs", "text/javascript; charset=utf-8"},
		{"/data.json", "application/json; charset=utf-8"},
		{"/logo.svg", "image/svg+xml; charset=utf-8"},
		{"/pic.png", "image/x-png"},
		{"/notes.custom", "text/x-custom; charset=utf-8"},
		{"/blob.unknownext", "application/x-unknown"},
		{"/%252e%252e", "application/octet-stream"},
	}
	for _, tt := range tests {
		c := serve(t, rt, request("GET", "", tt.target))
		if got := wireHeader(t, c, "Content-Type"); c.Resp.Status != 200 || got != tt.ct {
			t.Errorf("GET %q: %d Content-Type %q; want %q", tt.target, c.Resp.Status, got, tt.ct)
		}
	}
	table := newMimeTable(nil)
	for name, want := range map[string]string{
		"a.woff2": "font/woff2", "a.wasm": "application/wasm", "a.webmanifest": "application/manifest+json; charset=utf-8",
		"a.JPEG": "image/jpeg", "a.avif": "image/avif", "a.mp4": "video/mp4", "a.map": "application/json; charset=utf-8",
		"a.xml": "application/xml; charset=utf-8", "a.md": "text/markdown; charset=utf-8", "a.gz": "application/gzip",
		"noext": "application/octet-stream", ".bashrc": "application/octet-stream", "dir.d/file": "application/octet-stream",
		"a." + strings.Repeat("x", 40): "application/octet-stream",
	} {
		if got := string(table.lookup([]byte("/" + name))); got != want {
			t.Errorf("lookup(%q) = %q; want %q", name, got, want)
		}
	}
}

func TestStaticResponseFields(t *testing.T) {
	root, _ := staticTree(t)
	mtime := time.Date(2024, 2, 29, 13, 4, 5, 999, time.FixedZone("X", 3600))
	if err := os.Chtimes(filepath.Join(root, "a.txt"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	rt := staticRouter(t, root, config.Static{CacheControl: "public, max-age=60"}, nil)
	for _, method := range []string{"GET", "HEAD"} {
		c := serve(t, rt, request(method, "", "/a.txt"))
		if c.Resp.Status != 200 || c.Resp.Head == nil || c.Resp.Entry == nil || string(c.Resp.Body) != "alpha" {
			t.Fatalf("%s: %d head %q body %q", method, c.Resp.Status, c.Resp.Head, c.Resp.Body)
		}
		resp, _ := wire(t, c)
		for name, want := range map[string]string{
			"Last-Modified":  "Thu, 29 Feb 2024 12:04:05 GMT",
			"Cache-Control":  "public, max-age=60",
			"Content-Length": "5",
			"ETag":           `"` + strconv.FormatInt(mtime.UnixNano(), 16) + `-5"`,
			"Accept-Ranges":  "bytes",
			"Content-Type":   "text/plain; charset=utf-8",
			"Vary":           "Accept-Encoding",
		} {
			if got := resp.Header.Get(name); got != want {
				t.Errorf("%s: %s %q; want %q", method, name, got, want)
			}
		}
	}
	// An empty file has an empty body.
	c := serve(t, rt, request("GET", "", "/empty.txt"))
	if c.Resp.Status != 200 || c.Resp.File != nil || len(c.Resp.Body) != 0 || wireHeader(t, c, "Content-Length") != "0" {
		t.Errorf("empty: %d file %v body %q", c.Resp.Status, c.Resp.File, c.Resp.Body)
	}
	// Without cache_control there is no Cache-Control; without encodings
	// no Vary.
	plain := staticRouter(t, root, config.Static{Compress: config.Compress{Encodings: []string{}}}, nil)
	c = serve(t, plain, request("GET", "", "/a.txt"))
	if wireHeader(t, c, "Cache-Control") != "" || wireHeader(t, c, "Vary") != "" {
		t.Errorf("Cache-Control %q, Vary %q without config", wireHeader(t, c, "Cache-Control"), wireHeader(t, c, "Vary"))
	}
}

func TestStaticMethods(t *testing.T) {
	root, _ := staticTree(t)
	rt := staticRouter(t, root, config.Static{}, nil)
	for _, tt := range []struct {
		method, target string
		status         int
	}{
		{"OPTIONS", "/a.txt", 204},
		{"OPTIONS", "/missing", 204},
		{"POST", "/a.txt", 405},
		{"PUT", "/new.txt", 405},
		{"DELETE", "/a.txt", 405},
		{"PATCH", "/a.txt", 405},
		{"get", "/a.txt", 405}, // methods are case-sensitive
	} {
		c := serve(t, rt, request(tt.method, "", tt.target))
		if c.Resp.Status != tt.status || header(&c.Resp, "Allow") != "GET, HEAD, OPTIONS" || c.Resp.File != nil {
			t.Errorf("%s %s: %d Allow %q", tt.method, tt.target, c.Resp.Status, header(&c.Resp, "Allow"))
		}
		if tt.status == 204 && c.Resp.Body != nil {
			t.Errorf("%s: 204 with a body", tt.method)
		}
	}
}

// Opening a named pipe must not block the loop waiting for a writer.
func TestStaticFIFODoesNotBlock(t *testing.T) {
	root, _ := staticTree(t)
	rt := staticRouter(t, root, config.Static{}, nil)
	done := make(chan int, 1)
	go func() {
		c := newCtx(request("GET", "", "/fifo"))
		rt.Serve(c)
		done <- c.Resp.Status
	}()
	select {
	case status := <-done:
		if status != 404 {
			t.Errorf("status %d; want 404", status)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serving a FIFO blocked")
	}
}

func TestStaticPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every file")
	}
	root, _ := staticTree(t)
	if err := os.Chmod(filepath.Join(root, "a.txt"), 0); err != nil {
		t.Fatal(err)
	}
	rt := staticRouter(t, root, config.Static{}, nil)
	runStatic(t, rt, []staticCase{{"/a.txt", 403, ""}})
}
