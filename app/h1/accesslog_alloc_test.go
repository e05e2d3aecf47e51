//go:build !race

package h1

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/panjf2000/gnet/v2"

	"gale/accesslog"
	"gale/app/wire"
	"gale/config"
)

// allocsOnce runs f as testing.AllocsPerRun does, a second time when the
// first run allocated: the access log renders its timestamp once a
// second, and a run that crosses a second allocates that once.
func allocsOnce(f func()) float64 {
	n := testing.AllocsPerRun(200, f)
	if n != 0 {
		n = testing.AllocsPerRun(200, f)
	}
	return n
}

// openTestLog opens an access log in format under a temporary directory,
// closed when the test ends. The tests below empty the loop's buffer
// themselves, so its writer never receives a line.
func openTestLog(t *testing.T, format string) *accesslog.Log {
	t.Helper()
	a, err := accesslog.Open(config.AccessLog{Path: filepath.Join(t.TempDir(), "access.log"), Format: format}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// TestServeAllocsAccessLog proves that the access log line of a request
// answered on the loop (the record filled from the request, the line
// formatted into the loop's buffer) allocates nothing, in both formats.
func TestServeAllocsAccessLog(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, json := range []bool{false, true} {
		cfg, err := config.Parse([]byte("listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /hello\n    respond: {body: \"hello\\n\"}\n"),
			t.TempDir()+"/gale.yaml")
		if err != nil {
			t.Fatal(err)
		}
		set, err := wire.Compile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		format := "combined"
		if json {
			format = "json"
		}
		s := newShared()
		s.Access = openTestLog(t, format)
		s.Set.Store(set)
		l := newTestLoop(s)
		fc := &fakeConn{}
		cs := newTestConn(l, fc)
		raw := []byte("GET /hello?q=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: wrk\r\nReferer: http://example.com/\r\n\r\n")
		serve := func() {
			fc.in = raw
			l.Alog = l.Alog[:0] // no hand-off to a writer
			if a := cs.serve(); a != gnet.None || len(fc.in) != 0 {
				t.Fatalf("action %v, %d bytes left", a, len(fc.in))
			}
			if len(l.Alog) == 0 {
				t.Fatal("no access log line")
			}
		}
		serve() // grow the buffers
		if n := allocsOnce(serve); n != 0 {
			t.Fatalf("json %v: %v allocations per logged request, want 0", json, n)
		}
	}
}

// TestProxyAllocsAccessLog proves the same of a proxied request, whose
// record is copied into the connection's memory when the exchange starts
// and logged when it completes.
func TestProxyAllocsAccessLog(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f := newProxyFixture(t, `  - path: /api/
    proxy: {to: ["127.0.0.1:9"]}
`)
	l := f.cs.loop
	l.Shared.Access = openTestLog(t, "combined")
	f.req = []byte("GET /api/users?id=7 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: wrk\r\nReferer: http://example.com/\r\n\r\n")
	f.resp = []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	exchange := func() {
		l.Alog = l.Alog[:0] // no hand-off to a writer
		f.exchange(t)
		if len(l.Alog) == 0 {
			t.Fatal("no access log line")
		}
	}
	exchange() // dials, grows the buffers
	if n := allocsOnce(exchange); n != 0 {
		t.Fatalf("%v allocations per logged proxied request, want 0", n)
	}
}
