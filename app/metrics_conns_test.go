package app

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Open connections are counted by the protocol they chose and by what
// they are doing: idle keep-alive connections of each protocol, one in
// the middle of a request head, one in its TLS handshake.
func TestMetricsConnections(t *testing.T) {
	files := map[string]string{"index.html": "<h1>home</h1>\n", "404.html": "not here\n"}
	ts := startTLSServer(t, h2Site+"metrics: {listen: \"127.0.0.1:0\"}\n", files, nil)
	// HTTP/2 over TLS and h2c, each idle after one request.
	for _, cl := range h2Clients(t, ts) {
		h2get(t, cl.c, "GET", cl.base+"/hello", nil)
	}
	// HTTP/1.1 over cleartext, idle after one request.
	plain := dialKeep(t, ts.plainAddr(), nil)
	// HTTP/1.1 over TLS, likewise.
	dialKeep(t, ts.tlsAddr, ts.clientConfig("localhost"))
	// A request head that has not ended.
	partial, err := net.Dial("tcp", ts.plainAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer partial.Close()
	fmt.Fprintf(partial, "GET /hello HTTP/1.1\r\nHost: a\r\n")
	// A TLS handshake that has not begun.
	hs, err := net.Dial("tcp", ts.tlsAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()

	want := map[string]float64{"idle": 4, "reading": 1, "handshake": 1, "writing": 0}
	var fams map[string]*dto.MetricFamily
	waitUntil(5*time.Second, func() bool { // the sweep publishes every 100 ms
		fams = scrape(t, ts.testServer)
		ok := true
		for st, n := range want {
			ok = ok && sum(fams, "gale_connections_state", "state", st) == n
		}
		return ok
	})
	for st, n := range want {
		if got := sum(fams, "gale_connections_state", "state", st); got != n {
			t.Errorf("connections in state %s: %v, want %v", st, got, n)
		}
	}
	for p, n := range map[string]float64{"h1": 2, "h1-tls": 1, "h2": 1, "h2c": 1} {
		if got := sum(fams, "gale_connections_protocol_open", "protocol", p); got != n {
			t.Errorf("open %s connections: %v, want %v", p, got, n)
		}
		if got := sum(fams, "gale_connections_protocol_total", "protocol", p); got != n {
			t.Errorf("%s connections ever: %v, want %v", p, got, n)
		}
	}
	// A closed connection leaves its protocol's gauge.
	plain.Close()
	eventually(t, 5*time.Second, "the closed connection to leave the open count", func() bool {
		return sum(scrape(t, ts.testServer), "gale_connections_protocol_open", "protocol", "h1") == 1
	})
}

// dialKeep sends one HTTP/1.1 request on a new connection (TLS when cfg
// is not nil) and returns the connection, kept alive.
func dialKeep(t *testing.T, addr string, cfg *tls.Config) net.Conn {
	t.Helper()
	var c net.Conn
	var err error
	if cfg != nil {
		cfg = cfg.Clone()
		cfg.NextProtos = []string{"http/1.1"}
		c, err = tls.Dial("tcp", addr, cfg)
	} else {
		c, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s: %v %v", addr, resp, err)
	}
	resp.Body.Close()
	return c
}
