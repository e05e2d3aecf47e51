package proxy_test

import (
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// openTunnel upgrades a new client connection to a WebSocket through the
// proxy and reads the upstream's greeting.
func openTunnel(t *testing.T, g *gale) *rawConn {
	t.Helper()
	rc := g.dial()
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	rc.send("GET /chat HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n")
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 {
		t.Fatalf("handshake: %d", resp.StatusCode)
	}
	if op, p, err := readFrame(rc.br); err != nil || op != 1 || string(p) != "welcome" {
		t.Fatalf("greeting: %d %q %v", op, p, err)
	}
	return rc
}

// closeTunnel ends a tunnel from the client: a close frame, echoed by the
// upstream, which then closes; the client reads to EOF.
func closeTunnel(t *testing.T, rc *rawConn) {
	t.Helper()
	if err := writeFrame(rc.c, 8, []byte{3, 232}, true); err != nil {
		t.Fatal(err)
	}
	if op, _, err := readFrame(rc.br); err != nil || op != 8 {
		t.Fatalf("close: op %d %v", op, err)
	}
	if _, err := io.Copy(io.Discard, rc.br); err != nil {
		t.Fatalf("after close: %v; want EOF", err)
	}
	rc.c.Close()
}

// expectRefused reads what a refused client gets: a 503 then the close,
// or the close alone (a reset when its request was unread). Anything else,
// a 101 in particular, fails. The connection's deadline is a failsafe.
func expectRefused(t *testing.T, rc *rawConn) {
	t.Helper()
	b, err := io.ReadAll(rc.br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("not refused: timed out after %q", b)
	}
	if len(b) > 0 && !strings.HasPrefix(string(b), "HTTP/1.1 503 ") {
		t.Fatalf("not refused: %q", b)
	}
}

// TestTunnelsHoldConnectionPlaces: a WebSocket tunnel keeps its client's
// place under limits.connections after the socket left gnet, so with
// connections: 3 the fourth client is refused while three tunnels run,
// in whichever way it asks (an upgrade, a plain request, nothing at all),
// and is served again once a tunnel ended. Every place and descriptor is
// given back when the tunnels end.
func TestTunnelsHoldConnectionPlaces(t *testing.T) {
	t.Parallel()
	up := wsEchoUpstream(t)
	g := startGale(t, proxyRoute(up.addr())+"server: {event_loops: 1, limits: {connections: 3}}\n")
	base := g.srv.Stats().Budget
	var tunnels []*rawConn
	for range 3 {
		tunnels = append(tunnels, openTunnel(t, g))
	}
	eventually(t, 5*time.Second, "three tunnels out of gnet", func() bool {
		s := g.srv.Stats()
		return s.Open == 0 && s.Budget.Conns == 3
	})
	for _, req := range []string{
		"GET /chat HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: eA==\r\nSec-WebSocket-Version: 13\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"",
	} {
		rc := g.dial()
		if req != "" {
			rc.send(req)
		}
		expectRefused(t, rc)
	}
	if s := g.srv.Stats(); s.Rejected != 3 || s.Budget.Full != 3 {
		t.Fatalf("rejected %d, refused by the cap %d; want 3 and 3", s.Rejected, s.Budget.Full)
	}
	// The tunnels still carry data.
	if err := writeFrame(tunnels[0].c, 1, []byte("still here"), true); err != nil {
		t.Fatal(err)
	}
	if _, p, err := readFrame(tunnels[0].br); err != nil || string(p) != "still here" {
		t.Fatalf("echo: %q %v", p, err)
	}
	closeTunnel(t, tunnels[0])
	eventually(t, 5*time.Second, "the ended tunnel's place back", func() bool {
		return g.srv.Stats().Budget.Conns == 2
	})
	tunnels[0] = openTunnel(t, g)
	for _, rc := range tunnels {
		closeTunnel(t, rc)
	}
	eventually(t, 5*time.Second, "every place and descriptor back", func() bool {
		s := g.srv.Stats().Budget
		return s.Conns == 0 && s.Used == base.Used
	})
}
