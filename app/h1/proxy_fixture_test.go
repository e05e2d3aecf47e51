package h1

import (
	"testing"

	"github.com/panjf2000/gnet/v2"

	"gale/app/wire"
	"gale/config"
)

// proxyFixture drives a proxied exchange by hand: the client and the
// upstream are fake connections (fakeConn, alloc_test.go), the upstream
// connection is "dialed" by handing it the fake at once.
type proxyFixture struct {
	cs   *Conn
	cl   *fakeConn // the client
	up   *fakeConn // the upstream
	uc   wire.Upstream
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
	set, err := wire.Compile(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	s := newShared()
	s.Set.Store(set)
	f := &proxyFixture{cl: &fakeConn{}, up: &fakeConn{}}
	s.Proxies.Dial = func(uc wire.Upstream) {
		f.uc = uc
		uc.OnOpen(f.up) // connected at once
	}
	f.cs = newTestConn(newTestLoop(s), f.cl)
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

// proxyPending reports whether a proxied response is pending on cs.
func (cs *Conn) proxyPending() bool { return cs.pending != nil }
