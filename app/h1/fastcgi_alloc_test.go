//go:build !race

package h1

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/panjf2000/gnet/v2"

	"gale/app/wire"
	"gale/config"
	"gale/fastcgi"
	"gale/gateway"
)

// fastcgiFixture drives a FastCGI exchange by hand: the client and the
// application are fake connections, the application's connection is
// "dialed" by handing it the fake.
type fastcgiFixture struct {
	cs   *Conn
	cl   *fakeConn
	app  *fakeConn
	conn wire.Upstream // the connection the handler dialed
	req  []byte
	resp []byte
}

func newFastCGIFixture(tb testing.TB, route string) *fastcgiFixture {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "www"), 0o755); err != nil {
		tb.Fatal(err)
	}
	cfg, err := config.Parse([]byte("listen: [\"127.0.0.1:0\"]\nserver: {event_loops: 1}\nroutes:\n"+route), dir+"/gale.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	set, err := wire.Compile(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	s := newShared()
	s.Set.Store(set)
	f := &fastcgiFixture{cl: &fakeConn{}, app: &fakeConn{}}
	s.Proxies.Dial = func(c wire.Upstream) { f.conn = c }
	f.cs = newTestConn(newTestLoop(s), f.cl)
	if _, ok := set.Router.Routes()[0].Handler.(*gateway.Handler); !ok {
		tb.Fatalf("route handler %T", set.Router.Routes()[0].Handler)
	}
	return f
}

// exchange serves f.req and answers it with f.resp.
func (f *fastcgiFixture) exchange(tb testing.TB) {
	f.cl.in = f.req
	before, sent := f.cl.written, f.app.written
	if a := f.cs.serve(); a != gnet.None {
		tb.Fatalf("serve: action %v", a)
	}
	if !f.cs.proxyPending() {
		tb.Fatal("request not sent")
	}
	if f.app.written == sent {
		f.conn.OnOpen(f.app) // the first request dials
	}
	if f.app.written == sent {
		tb.Fatal("nothing written to the application")
	}
	f.app.in = f.resp
	if a := f.conn.OnTraffic(f.app); a != gnet.None {
		tb.Fatalf("application: action %v", a)
	}
	if f.cs.proxyPending() || f.cl.written-before < 40 || len(f.app.in) != 0 || f.cs.closeAfter {
		tb.Fatalf("response not relayed: pending %v, %d bytes written, closeAfter %v", f.cs.proxyPending(), f.cl.written-before, f.cs.closeAfter)
	}
}

// cgiResponse is a small script's answer: its head and body on
// FCGI_STDOUT, the stream's end, FCGI_END_REQUEST.
func cgiResponse(head, body string) []byte {
	out := head + "\r\n" + body
	b := fastcgi.AppendStream(nil, fastcgi.TypeStdout, 1, []byte(out))
	b = fastcgi.AppendHeader(b, fastcgi.TypeStdout, 1, 0)
	b = fastcgi.AppendHeader(b, fastcgi.TypeEndRequest, 1, 8)
	return append(b, 0, 0, 0, 0, fastcgi.StatusRequestComplete, 0, 0, 0)
}

// TestFastCGIAllocs proves that a GET run through a pooled FastCGI
// connection allocates nothing: routing, the CGI environment and the
// records, the CGI head parse, the relay and the completion that puts
// the connection back in the pool.
func TestFastCGIAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f := newFastCGIFixture(t, `  - path: /
    headers: {response: {set: {X-Frame-Options: DENY}}}
    fastcgi: {to: "127.0.0.1:9", root: www, env: {APP_ENV: prod}}
`)
	f.req = []byte("GET /index.php/a/b?id=7 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: wrk\r\nAccept: */*\r\n" +
		"Accept-Encoding: gzip\r\nCookie: a=b\r\nCookie: c=d\r\n\r\n")
	f.resp = cgiResponse("X-Powered-By: PHP/8.2\r\nContent-type: text/html; charset=UTF-8\r\n", "Hello, World!")
	f.exchange(t) // dials, grows the buffers
	if n := testing.AllocsPerRun(200, func() { f.exchange(t) }); n != 0 {
		t.Fatalf("%v allocations per FastCGI request, want 0", n)
	}
}

// BenchmarkFastCGIExchange is the loop's whole cost of one FastCGI
// request with a small response, excluding the syscalls.
func BenchmarkFastCGIExchange(b *testing.B) {
	f := newFastCGIFixture(b, `  - path: /
    fastcgi: {to: "127.0.0.1:9", root: www}
`)
	f.req = []byte("GET /hello.php HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n")
	f.resp = cgiResponse("Content-type: text/html; charset=UTF-8\r\n", "Hello, World!")
	f.exchange(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.exchange(b)
	}
}
