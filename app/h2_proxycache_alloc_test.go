//go:build !race

package app

import (
	"runtime"
	"testing"

	"github.com/panjf2000/gnet/v2"

	"gale/upstream"
)

// TestH2ProxyCacheHitAllocs proves that an HTTP/2 request answered from a
// route's cache allocates nothing once the buffers have grown: the first
// request is forwarded and stored (public: the requests carry a cookie),
// the others never reach the upstream.
func TestH2ProxyCacheHitAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s, _ := compiledServer(t, `
listen: ["127.0.0.1:0"]
routes:
  - path: /
    cache: {}
    proxy: {to: ["127.0.0.1:9"]}
`, t.TempDir())
	fc, up := &fakeConn{}, &fakeConn{}
	l := newLoop(s, nil)
	var uc *upstream.Conn
	l.Proxy().SetDial(func(u *upstream.Conn) {
		uc = u
		u.OnOpen(up)
	})
	cs := newConn(l, fc)
	start, reqs := h2Frames(t, "/page?id=7", 300)
	fc.in = start
	cs.onTraffic()
	if cs.h2 == nil {
		t.Fatal("the preface did not start HTTP/2")
	}
	fc.in = reqs[0]
	cs.onTraffic()
	if up.written == 0 || cs.h2.Pending() != 1 {
		t.Fatalf("first request not forwarded (pending %d)", cs.h2.Pending())
	}
	up.in = []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nCache-Control: public, max-age=600\r\nVary: Accept-Encoding\r\nContent-Length: 5\r\n\r\nhello")
	if a := uc.OnTraffic(up); a != gnet.None {
		t.Fatalf("upstream: action %v", a)
	}
	cs.onTraffic()
	if cs.h2.Pending() != 0 {
		t.Fatal("first response not relayed")
	}
	next := 1
	hit := func() {
		fc.in = reqs[next]
		next++
		forwarded, relayed := up.written, fc.written
		cs.onTraffic()
		if up.written != forwarded || cs.h2.Pending() != 0 || fc.written-relayed < 5 {
			t.Fatalf("not answered from the cache: %d bytes upstream, pending %d", up.written-forwarded, cs.h2.Pending())
		}
	}
	for range 20 {
		hit()
	}
	if n := testing.AllocsPerRun(200, hit); n != 0 {
		t.Fatalf("%v allocations per HTTP/2 cache hit, want 0", n)
	}
}
