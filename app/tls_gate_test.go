package app

import (
	"net/netip"
	"testing"
	"time"
)

// TestShareKey groups IPv6 clients by /64 and IPv4 ones (mapped or not)
// by address.
func TestShareKey(t *testing.T) {
	cases := []struct{ a, b string }{
		{"[2001:db8:1:2:aaaa::1]:1", "[2001:db8:1:2:ffff::9]:2"},
		{"[2001:db8:1:2::1%eth0]:1", "[2001:db8:1:2::2]:1"},
		{"[::ffff:192.0.2.7]:1", "192.0.2.7:9"},
	}
	for _, c := range cases {
		ka, kb := shareKey(netip.MustParseAddrPort(c.a)), shareKey(netip.MustParseAddrPort(c.b))
		if ka != kb {
			t.Errorf("%s and %s: keys %v and %v, want one", c.a, c.b, ka, kb)
		}
	}
	for _, c := range [][2]string{
		{"[2001:db8:1:2::1]:1", "[2001:db8:1:3::1]:1"},
		{"192.0.2.7:1", "192.0.2.8:1"},
	} {
		if shareKey(netip.MustParseAddrPort(c[0])) == shareKey(netip.MustParseAddrPort(c[1])) {
			t.Errorf("%s and %s share a key", c[0], c[1])
		}
	}
}

// TestTLSGateBookkeeping: once handshakes have ended, whether they
// succeeded, were refused or waited and closed, no slot, claim or waiter
// is left.
func TestTLSGateBookkeeping(t *testing.T) {
	t.Parallel()
	yaml := `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT], max_handshakes: 2}}
` + tlsRoutes
	ts := startTLSServer(t, yaml, nil, nil)
	hello := captureClientHello(t)
	h1 := holdSlot(t, "127.0.0.1", ts.tlsAddr, hello)
	h2 := holdSlot(t, "127.0.0.2", ts.tlsAddr, hello)
	refused := dialFrom(t, "127.0.0.1", ts.tlsAddr)
	if _, err := refused.Write(hello); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, refused)
	queued := dialFrom(t, "127.0.0.3", ts.tlsAddr)
	if _, err := queued.Write(hello); err != nil {
		t.Fatal(err)
	}
	ts.waitTLSInput(3)
	g := ts.srv.listeners[0].tls.gate
	if a, w := g.active.Load(), g.waiting.Load(); a != 2 || w != 1 {
		t.Fatalf("active %d, waiting %d; want 2 and 1", a, w)
	}
	queued.Close()
	h1.Close()
	if err := ts.handshakeFrom("127.0.0.4"); err != nil {
		t.Fatal(err)
	}
	h2.Close()
	deadline := time.Now().Add(5 * time.Second)
	for g.active.Load() != 0 || g.waiting.Load() != 0 || claims(g) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("active %d, waiting %d, claims %d left", g.active.Load(), g.waiting.Load(), claims(g))
		}
		time.Sleep(time.Millisecond)
	}
}

func claims(g *handshakeGate) int {
	n := 0
	for i := range g.shards {
		s := &g.shards[i]
		s.mu.Lock()
		n += len(s.n)
		s.mu.Unlock()
	}
	return n
}
