package app

import (
	"testing"
	"time"
)

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
	ln := ts.srv.listeners[0].tls
	if c := ln.Handshakes(); c.Active != 2 || c.Waiting != 1 {
		t.Fatalf("active %d, waiting %d; want 2 and 1", c.Active, c.Waiting)
	}
	queued.Close()
	h1.Close()
	if err := ts.handshakeFrom("127.0.0.4"); err != nil {
		t.Fatal(err)
	}
	h2.Close()
	if !waitUntil(5*time.Second, func() bool { c := ln.Handshakes(); return c.Active == 0 && c.Waiting == 0 && c.Claims == 0 }) {
		c := ln.Handshakes()
		t.Fatalf("active %d, waiting %d, claims %d left", c.Active, c.Waiting, c.Claims)
	}
}
