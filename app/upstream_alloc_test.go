//go:build !race

package app

import (
	"io"
	"log/slog"
	"runtime"
	"testing"

	"github.com/panjf2000/gnet/v2"

	"gale/config"
	"gale/proxy"
)

// proxyFixture drives a proxied exchange by hand: the client and the
// upstream are fake connections (fakeConn, alloc_test.go), the upstream
// connection is "dialed" by handing it the fake at once.
type proxyFixture struct {
	cs   *conn
	cl   *fakeConn // the client
	up   *fakeConn // the upstream
	uc   *proxy.UpstreamConn
	req  []byte
	resp []byte
}

func newProxyFixture(tb testing.TB, routes string) *proxyFixture {
	tb.Helper()
	dir := tb.TempDir()
	cfg, err := config.Parse([]byte("listen: [\"127.0.0.1:0\"]\nserver: {event_loops: 1}\nroutes:\n"+routes), dir+"/gale.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	set, err := compile(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.set.Store(set)
	f := &proxyFixture{cl: &fakeConn{}, up: &fakeConn{}}
	f.cs = newConn(newLoop(s, nil), f.cl)
	f.cs.ProxyLoop().SetDial(func(uc *proxy.UpstreamConn) {
		f.uc = uc
		uc.OnOpen(f.up) // connected at once
	})
	return f
}

// exchange serves f.req and answers it with f.resp; it fails the test
// unless the response went to the client and the connection is ready for
// the next request.
func (f *proxyFixture) exchange(tb testing.TB) {
	f.cl.in = f.req
	before := f.cl.written
	if a := f.cs.serve(); a != gnet.None {
		tb.Fatalf("serve: action %v", a)
	}
	if !f.cs.proxyPending() || f.up.written == 0 {
		tb.Fatal("request not forwarded")
	}
	f.up.in = f.resp
	if a := f.uc.OnTraffic(f.up); a != gnet.None {
		tb.Fatalf("upstream: action %v", a)
	}
	if f.cs.proxyPending() || f.cl.written-before < len(f.resp)/2 || len(f.up.in) != 0 || f.cs.closeAfter {
		tb.Fatalf("response not relayed: pending %v, %d bytes written, closeAfter %v", f.cs.proxyPending(), f.cl.written-before, f.cs.closeAfter)
	}
}

// TestProxyAllocs proves that forwarding a small GET through a pooled
// upstream connection and relaying its small response allocates nothing:
// routing, the request rewrite into the upstream's output (hop-by-hop
// removal, X-Forwarded-*, rules), the response head parse, its rewrite and
// relay, and the completion that readies the client connection.
func TestProxyAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f := newProxyFixture(t, `  - path: /api/
    headers: {request: {set: {X-Env: prod}}, response: {set: {X-Frame-Options: DENY}}}
    proxy: {to: ["127.0.0.1:9"], strip_prefix: true}
`)
	f.req = []byte("GET /api/users?id=7 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: wrk\r\nAccept: */*\r\n" +
		"Accept-Encoding: gzip\r\nConnection: keep-alive\r\nCookie: a=b\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n")
	f.resp = []byte("HTTP/1.1 200 OK\r\nServer: up\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\nContent-Type: application/json\r\n" +
		"Connection: keep-alive\r\nKeep-Alive: timeout=5\r\nContent-Length: 13\r\n\r\n{\"id\":7,\"a\":1}")
	f.resp = f.resp[:len(f.resp)-1] // 13 bytes of body
	f.exchange(t)                   // dials, grows the buffers
	if n := testing.AllocsPerRun(200, func() { f.exchange(t) }); n != 0 {
		t.Fatalf("%v allocations per proxied request, want 0", n)
	}
	s := &f.cs.ProxyLoop().Stats
	if s.Dials.Load() != 1 || s.Reused.Load() < 200 {
		t.Errorf("dials %d reused %d: the pooled connection was not reused", s.Dials.Load(), s.Reused.Load())
	}
}

// TestProxyNormalisingAllocs is TestProxyAllocs for a path that needs
// normalising before it is routed and forwarded.
func TestProxyNormalisingAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f := newProxyFixture(t, `  - path: /api/
    proxy: {to: ["127.0.0.1:9"], strip_prefix: true}
`)
	f.req = []byte("GET //api/./v1//x/../users%7e%2A?id=7 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n")
	f.resp = []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	f.exchange(t) // dials, grows the buffers
	if n := testing.AllocsPerRun(200, func() { f.exchange(t) }); n != 0 {
		t.Fatalf("%v allocations per proxied request, want 0", n)
	}
}

// BenchmarkProxyExchange is the loop's whole cost of one proxied request
// with a small response, excluding the syscalls (fake connections).
func BenchmarkProxyExchange(b *testing.B) {
	f := newProxyFixture(b, `  - path: /
    proxy: {to: ["127.0.0.1:9"]}
`)
	f.req = []byte("GET /128.bin HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n")
	body := make([]byte, 128)
	f.resp = append([]byte("HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\n"+
		"Content-Type: application/octet-stream\r\nContent-Length: 128\r\nConnection: keep-alive\r\n\r\n"), body...)
	f.exchange(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(f.req) + len(f.resp)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.exchange(b)
	}
}
