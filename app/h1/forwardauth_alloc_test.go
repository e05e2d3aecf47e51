//go:build !race

package h1

import (
	"runtime"
	"testing"

	"github.com/panjf2000/gnet/v2"
)

// TestForwardAuthAllocs proves that asking an authentication service
// about a request, on a pooled connection, allocates nothing: the
// subrequest's head with the client's fields, the answer's parse and the
// verdict, the copy_headers field onto the request, and the response.
func TestForwardAuthAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f := newProxyFixture(t, `  - path: /app/
    forward_auth: {to: "127.0.0.1:9", uri: /verify, copy_headers: [X-User]}
    respond: {status: 200, body: "ok\n"}
`)
	f.req = []byte("GET /app/page?q=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: wrk\r\nAccept: */*\r\n" +
		"Accept-Language: fr\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nCookie: session=alice\r\n" +
		"X-Forwarded-For: 10.0.0.1\r\nX-User: mallory\r\nX-Custom: 7\r\n\r\n")
	f.resp = []byte("HTTP/1.1 200 OK\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\nX-User: alice\r\nContent-Length: 0\r\n\r\n")
	ask := func() {
		f.cl.in = f.req
		before, asked := f.cl.written, f.up.written
		if a := f.cs.serve(); a != gnet.None {
			t.Fatalf("serve: action %v", a)
		}
		if !f.cs.proxyPending() || f.up.written == asked {
			t.Fatal("the service was not asked")
		}
		f.up.in = f.resp
		if a := f.uc.OnTraffic(f.up); a != gnet.None {
			t.Fatalf("service: action %v", a)
		}
		if a := f.cs.Traffic(); a != gnet.None {
			t.Fatalf("resume: action %v", a)
		}
		if f.cs.proxyPending() || f.cl.written == before || len(f.up.in) != 0 || f.cs.closeAfter {
			t.Fatalf("not answered: pending %v, %d bytes written", f.cs.proxyPending(), f.cl.written-before)
		}
	}
	ask() // dials, grows the buffers
	if n := testing.AllocsPerRun(200, ask); n != 0 {
		t.Fatalf("%v allocations per request asked about, want 0", n)
	}
	if s := f.cs.Loop.Shared.Proxies.Stats(); s.Dials != 1 || s.Auths < 200 {
		t.Errorf("dials %d, subrequests %d: the pooled connection was not reused", s.Dials, s.Auths)
	}
}
