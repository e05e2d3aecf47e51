//go:build !race

package h1

import (
	"runtime"
	"strings"
	"testing"
)

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
	f.cs.Loop.Shared.Metered = true // the per-route metrics too
	f.exchange(t)
	if n := testing.AllocsPerRun(200, func() { f.exchange(t) }); n != 0 {
		t.Fatalf("%v allocations per proxied request with metrics, want 0", n)
	}
	s := f.cs.Loop.Shared.Proxies.Stats()
	if s.Dials != 1 || s.Reused < 400 {
		t.Errorf("dials %d reused %d: the pooled connection was not reused", s.Dials, s.Reused)
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

// TestProxyEncodedSlashAllocs is TestProxyAllocs for a path with encoded
// slashes and a path parameter, forwarded as sent (keep) and decoded.
func TestProxyEncodedSlashAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, mode := range []string{"keep", "decode"} {
		t.Run(mode, func(t *testing.T) {
			f := newProxyFixture(t, `  - path: /api/
    encoded_slashes: `+mode+`
    proxy: {to: ["127.0.0.1:9"], strip_prefix: true}
`)
			f.req = []byte("GET /api%2Fv4/projects/group%2Fproject/x;jsessionid=1?id=7 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n")
			f.resp = []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
			f.exchange(t) // dials, grows the buffers
			if n := testing.AllocsPerRun(200, func() { f.exchange(t) }); n != 0 {
				t.Fatalf("%v allocations per proxied request, want 0", n)
			}
		})
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
	benchMetered(b, &f.cs.Loop.Shared.Metered, func() { f.exchange(b) })
}

// TestProxyHashAllocs is TestProxyAllocs under the hashing policies, which
// read a field or a cookie of every request and rank the upstreams.
func TestProxyHashAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, policy := range []string{"client-ip-hash", "header-hash, hash_header: X-User", "cookie-hash, hash_cookie: sid"} {
		t.Run(policy[:strings.IndexByte(policy+",", ',')], func(t *testing.T) {
			f := newProxyFixture(t, `  - path: /api/
    proxy: {to: ["127.0.0.1:9"], load_balancing: `+policy+`}
`)
			f.req = []byte("GET /api/users HTTP/1.1\r\nHost: example.com\r\nX-User: u7\r\nCookie: a=b; sid=s7\r\n\r\n")
			f.resp = []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
			f.exchange(t) // dials, grows the buffers
			if n := testing.AllocsPerRun(200, func() { f.exchange(t) }); n != 0 {
				t.Fatalf("%v allocations per proxied request, want 0", n)
			}
		})
	}
}
