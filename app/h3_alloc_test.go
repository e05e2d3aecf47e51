//go:build !race

package app

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestAltSvcAllocs proves that advertising HTTP/3 (the listener's Alt-Svc
// field, rendered once) keeps HTTP/1.1 and HTTP/2 responses at zero
// allocations, for a respond route and a cached static file, and that
// the field is written: each response grows by it.
func TestAltSvcAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/index.html", []byte("<h1>hello</h1>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC) // a file changed just now is not kept in memory
	if err := os.Chtimes(dir+"/index.html", old, old); err != nil {
		t.Fatal(err)
	}
	s, cfg := compiledServer(t, `
listen: ["127.0.0.1:0"]
routes:
  - path: /
    static: {root: .}
  - path: /hello
    respond: {status: 200, body: "hello\n"}
`, dir)
	altSvc := altSvcValue(8443, cfg.Server.HTTP3)
	for _, path := range []string{"/hello", "/index.html"} {
		for _, proto := range []string{"h1", "h2"} {
			t.Run(proto+path, func(t *testing.T) {
				plain := altSvcServe(t, s, proto, path, nil)
				with := altSvcServe(t, s, proto, path, altSvc)
				if with <= plain {
					t.Fatalf("with Alt-Svc %d bytes per response, without %d", with, plain)
				}
			})
		}
	}
}

// altSvcServe serves path over proto on a connection advertising
// altSvc, fails on any allocation per request, and returns the bytes
// written per request.
func altSvcServe(t *testing.T, s *Server, proto, path string, altSvc []byte) int {
	fc := &fakeConn{}
	cs := newConn(newLoop(s, nil), fc)
	cs.h1.SetAltSvc(altSvc)
	cs.altSvc = altSvc
	var reqs [][]byte
	if proto == "h2" {
		var start []byte
		start, reqs = h2Frames(t, path, 400)
		fc.in = start
		cs.onTraffic()
	} else {
		for range 400 {
			reqs = append(reqs, []byte("GET "+path+" HTTP/1.1\r\nHost: example.com\r\n\r\n"))
		}
	}
	next := 0
	serve := func() {
		fc.in = reqs[next]
		next++
		cs.onTraffic()
		if len(fc.in) != 0 {
			t.Fatalf("left %d bytes", len(fc.in))
		}
	}
	if proto == "h2" {
		for range 20 {
			serve() // grow the buffers (and load the file into the cache)
		}
		waitCached(t, cs, serve)
	} else {
		h1Warm(t, cs, fc, reqs[0])
	}
	before := fc.written
	if n := testing.AllocsPerRun(200, serve); n != 0 {
		t.Fatalf("%v allocations per request, want 0", n)
	}
	return (fc.written - before) / 201
}

// h1Warm serves req on cs until it is answered within one event (the
// file reached the cache: the first request waits for the load, and the
// connection parses nothing further meanwhile), then a few more times to
// grow the buffers.
func h1Warm(t *testing.T, cs *conn, fc *fakeConn, req []byte) {
	t.Helper()
	fc.in = req
	eventually(t, 5*time.Second, "the file to reach the cache", func() bool {
		cs.onTraffic()
		return len(fc.in) == 0
	})
	for range 20 {
		fc.in = req
		cs.onTraffic()
	}
}
