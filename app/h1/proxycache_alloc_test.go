//go:build !race

package h1

import (
	"runtime"
	"testing"

	"github.com/panjf2000/gnet/v2"
)

// TestProxyCacheHitAllocs proves that a hit of a route's cache allocates
// nothing: the key, the loop's view, the freshness check and the
// response with its Age and Cache-Status fields, rendered like any other;
// a byte range of it too.
func TestProxyCacheHitAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f := newProxyFixture(t, `  - path: /
    cache: {}
    proxy: {to: ["127.0.0.1:9"]}
`)
	f.req = []byte("GET /page?id=7 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nAccept-Encoding: gzip\r\n\r\n")
	f.resp = []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nCache-Control: max-age=600\r\nVary: Accept-Encoding\r\n" +
		"Content-Length: 5\r\n\r\nhello")
	f.exchange(t) // a miss: forwarded and stored
	hit := func() {
		f.cl.in = f.req
		before, up := f.cl.written, f.up.written
		if a := f.cs.serve(); a != gnet.None {
			t.Fatalf("serve: action %v", a)
		}
		if f.cs.proxyPending() || f.up.written != up || f.cl.written-before < 100 {
			t.Fatalf("not answered from the cache: pending %v, %d bytes upstream, %d to the client", f.cs.proxyPending(), f.up.written-up, f.cl.written-before)
		}
	}
	hit()
	if n := testing.AllocsPerRun(200, hit); n != 0 {
		t.Fatalf("%v allocations per cache hit, want 0", n)
	}
	f.req = []byte("GET /page?id=7 HTTP/1.1\r\nHost: example.com\r\nAccept-Encoding: gzip\r\nRange: bytes=1-3\r\n\r\n")
	hit()
	if n := testing.AllocsPerRun(200, hit); n != 0 {
		t.Fatalf("%v allocations per ranged cache hit, want 0", n)
	}
}
