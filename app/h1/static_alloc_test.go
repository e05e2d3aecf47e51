//go:build !race

package h1

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/app/wire"
	"gale/config"
	"gale/handlers"
)

// TestStaticHitAllocs proves that a static file served from the cache,
// from the request bytes in the inbound buffer to the response bytes
// handed to the connection (parse, route, cache lookup, Accept-Encoding
// negotiation, preconditions, the pre-rendered head with its Date
// patched), allocates nothing: identity, a gzip sidecar, a 304 and a
// pipelined pair.
func TestStaticHitAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	mtime := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	for name, body := range map[string]string{
		"app.js":     strings.Repeat("console.log('hello');\n", 1000),
		"app.js.gz":  "pretend gzip",
		"index.html": "<h1>home</h1>",
	} {
		p := filepath.Join(site, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse([]byte(`
listen: ["127.0.0.1:0"]
routes:
  - path: /
    headers: {response: {set: {X-Frame-Options: DENY}}}
    static: {root: ./site, cache_control: "public, max-age=60"}
`), filepath.Join(dir, "gale.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := wire.NewFileCache(cfg, nil)
	defer files.Close()
	set, err := wire.Compile(cfg, handlers.WithCache(files))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Router.Close()
	s := newShared()
	s.Set.Store(set)
	l := newTestLoop(s)
	fc := &fakeConn{}
	cs := newTestConn(l, fc)

	const ims = "If-Modified-Since: Mon, 06 May 2024 07:08:09 GMT\r\n"
	cases := map[string]string{
		"identity":  "GET /app.js HTTP/1.1\r\nHost: example.com\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n",
		"normalise": "GET //x/../%61pp.js HTTP/1.1\r\nHost: example.com\r\n\r\n",
		"gzip":      "GET /app.js HTTP/1.1\r\nHost: example.com\r\nAccept-Encoding: gzip, deflate, br;q=0.1\r\n\r\n",
		"304":       "GET /app.js HTTP/1.1\r\nHost: example.com\r\n" + ims + "\r\n",
		"index":     "GET / HTTP/1.1\r\nHost: example.com\r\nAccept: text/html\r\n\r\n",
		"pipelined": "GET /app.js HTTP/1.1\r\nHost: a\r\n\r\nHEAD /index.html HTTP/1.1\r\nHost: a\r\n\r\n",
	}
	for _, metered := range []bool{false, true} {
		for name, req := range cases {
			t.Run(meteredName(name, metered), func(t *testing.T) {
				s.Metered = metered
				raw := []byte(req)
				serve := func() {
					fc.in = raw
					if a := cs.serve(); a != gnet.None {
						t.Fatalf("action %v", a)
					}
					if len(fc.in) != 0 || cs.closeAfter || cs.xfer != nil || cs.pending != nil {
						t.Fatalf("left %d bytes, closeAfter %v, transfer %v, waiting %v", len(fc.in), cs.closeAfter, cs.xfer != nil, cs.pending != nil)
					}
				}
				serve() // load the file and grow the buffers
				before := fc.written
				if n := testing.AllocsPerRun(200, serve); n != 0 {
					t.Fatalf("%v allocations per request, want 0", n)
				}
				if fc.written == before {
					t.Fatal("nothing written")
				}
			})
		}
	}
	// The responses are what they should be.
	rc := &recordConn{fakeConn: &fakeConn{}}
	rcs := newTestConn(l, rc)
	for req, want := range map[string]string{
		cases["gzip"]:      "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\nCache-Control: public, max-age=60\r\nX-Frame-Options: DENY\r\n\r\npretend gzip",
		cases["304"]:       "HTTP/1.1 304 Not Modified\r\n",
		cases["identity"]:  "Content-Length: 22000\r\n",
		cases["normalise"]: "Content-Length: 22000\r\n",
	} {
		rc.in, rc.got = []byte(req), nil
		rcs.serve()
		if !strings.Contains(string(rc.got), want) {
			t.Errorf("response lacks %q:\n%.600s", want, rc.got)
		}
	}
}

// recordConn is a fakeConn that keeps what is written.
type recordConn struct {
	*fakeConn
	got []byte
}

func (r *recordConn) Write(b []byte) (int, error) { r.got = append(r.got, b...); return len(b), nil }
func (r *recordConn) Writev(bs [][]byte) (int, error) {
	n := 0
	for _, b := range bs {
		r.got = append(r.got, b...)
		n += len(b)
	}
	return n, nil
}

// BenchmarkStaticHit128 is the loop's cost of a 128-byte file served from
// the cache on a kept-alive connection (the bench harness's static-128),
// without the syscalls, with the per-route metrics off and on.
func BenchmarkStaticHit128(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s128.bin"), make([]byte, 128), 0o644); err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Parse([]byte("listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /\n    static: {root: .}\n"), filepath.Join(dir, "gale.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	files := wire.NewFileCache(cfg, nil)
	defer files.Close()
	set, err := wire.Compile(cfg, handlers.WithCache(files))
	if err != nil {
		b.Fatal(err)
	}
	defer set.Router.Close()
	s := newShared()
	s.Set.Store(set)
	fc := &fakeConn{woke: make(chan struct{}, 1)}
	cs := newTestConn(newTestLoop(s), fc)
	raw := []byte("GET /s128.bin HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n")
	serve := func() {
		fc.in = raw
		cs.serve()
	}
	serve() // a miss: a cache worker loads the file and wakes the connection
	for cs.pending != nil || cs.xfer != nil {
		fc.awaitWake(b)
		cs.Traffic()
	}
	if serve(); cs.pending != nil || cs.xfer != nil {
		b.Fatal("the file is not served from the cache")
	}
	benchMetered(b, &s.Metered, serve)
}
