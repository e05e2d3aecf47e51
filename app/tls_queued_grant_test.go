package app

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// slowFinish is a client connection whose second write (the client's
// Finished, after the server's flight) waits delay: a client on a slow
// path, still well within handshake_timeout.
type slowFinish struct {
	net.Conn
	delay  time.Duration
	writes int
}

func (c *slowFinish) Write(b []byte) (int, error) {
	if c.writes++; c.writes == 2 {
		time.Sleep(c.delay)
	}
	return c.Conn.Write(b)
}

// TestTLSGrantedHandshakeGetsItsTime: a client that queued for the only
// handshake slot behind a client that stalls its handshake gets the slot
// when the staller's handshake_timeout closes it, and then has a whole
// handshake_timeout for its handshake. Before, its deadline counted from
// its accept, waiting included, so what was left of it once the slot came
// depended on when it had arrived: a handshake that needed a little longer
// was cut off (an unexpected EOF), in some runs and not in others.
func TestTLSGrantedHandshakeGetsItsTime(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out handshake timeouts: not in -short")
	}
	t.Parallel()
	yaml := `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT], handshake_timeout: 3s, max_handshakes: 1}}
` + tlsRoutes
	ts := startTLSServer(t, yaml, nil, nil)
	hello := captureClientHello(t)
	start := time.Now()
	holdSlot(t, "127.0.0.2", ts.tlsAddr, hello) // stalls from here on
	// The client arrives a second after the staller: it waits about
	// 2 s for the slot, and its handshake then takes 2 s more (its
	// Finished is slow), within one handshake_timeout of the grant but
	// not of its accept.
	time.Sleep(time.Until(start.Add(time.Second)))
	raw := &slowFinish{Conn: dialFrom(t, "127.0.0.3", ts.tlsAddr), delay: 2 * time.Second}
	c := tls.Client(raw, ts.clientConfig("localhost"))
	if err := c.Handshake(); err != nil {
		t.Fatalf("the handshake that waited for its slot: %v (after %v)", err, time.Since(start).Round(time.Millisecond))
	}
	// A TLS 1.3 client is done once it sent its Finished: the request
	// tells whether the server took it.
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("after the handshake that waited for its slot: %v (after %v)", err, time.Since(start).Round(time.Millisecond))
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("after the handshake: %d", resp.StatusCode)
	}
	t.Logf("handshake done %v after the staller's accept", time.Since(start).Round(time.Millisecond))
}
