package app

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// rawUpstream listens on 127.0.0.1 and runs serve on each connection.
func rawUpstream(t *testing.T, serve func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// readHead reads a request head from c.
func readHead(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil || line == "\r\n" {
			return
		}
	}
}

// Each upstream is counted by route and address: attempts, retries,
// failures by kind (a refused connect, a response-header timeout, a
// connection closed before answering, a response that does not parse),
// its health and its idle pool.
func TestMetricsUpstreams(t *testing.T) {
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	t.Cleanup(good.Close)
	goodAddr := strings.TrimPrefix(good.URL, "http://")
	dead := deadAddr(t)
	garbage := rawUpstream(t, func(c net.Conn) { readHead(c); c.Write([]byte("HTTP/1.1 abc\r\n\r\n")) })
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	silent := rawUpstream(t, func(c net.Conn) { readHead(c); <-stop })
	closer := rawUpstream(t, func(c net.Conn) { readHead(c) })
	cfg := baseListen + `
server: {event_loops: 1}
metrics: {listen: "127.0.0.1:0"}
routes:
  - name: pair
    path: /pair/
    proxy: {to: ["http://` + goodAddr + `", "http://` + dead + `"], retries: 1, health_check: {passive: {fails: 1, cooldown: 1m}}}
  - name: bad
    path: /bad/
    proxy: {to: ["http://` + garbage + `"], retries: 0}
  - name: slow
    path: /slow/
    proxy: {to: ["http://` + silent + `"], retries: 0, timeouts: {response_header: 200ms}}
  - path: /reset/
    proxy: {to: ["http://` + closer + `"], retries: 0}
`
	ts := startServer(t, cfg, nil)
	do(t, "GET", ts.url("/pair/a"), "", 200)
	do(t, "GET", ts.url("/pair/b"), "", 200)
	do(t, "GET", ts.url("/bad/x"), "", 502)
	do(t, "GET", ts.url("/slow/x"), "", 504)
	do(t, "GET", ts.url("/reset/x"), "", 502)

	fams := waitRequests(t, ts, 5)
	goodAddr, dead = "http://"+goodAddr, "http://"+dead // labelled as configured
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"gale_upstream_server_attempts_total", []string{"route", "pair", "upstream", goodAddr}, 2},
		{"gale_upstream_server_attempts_total", []string{"route", "pair", "upstream", dead}, 1},
		{"gale_upstream_server_failures_total", []string{"route", "pair", "upstream", dead, "kind", "connect"}, 1},
		{"gale_upstream_server_failures_total", []string{"route", "pair", "upstream", goodAddr}, 0},
		{"gale_upstream_server_retries_total", []string{"route", "pair", "upstream", dead}, 1},
		{"gale_upstream_server_retries_total", []string{"route", "pair", "upstream", goodAddr}, 0},
		{"gale_upstream_server_healthy", []string{"route", "pair", "upstream", goodAddr}, 1},
		{"gale_upstream_server_healthy", []string{"route", "pair", "upstream", dead}, 0},
		{"gale_upstream_server_idle_connections", []string{"route", "pair", "upstream", goodAddr}, 1},
		{"gale_upstream_server_failures_total", []string{"route", "bad", "kind", "bad_response"}, 1},
		{"gale_upstream_server_failures_total", []string{"route", "slow", "kind", "timeout"}, 1},
		{"gale_upstream_server_failures_total", []string{"route", "3", "kind", "reset"}, 1},
		{"gale_upstream_server_failures_total", nil, 4},
	} {
		if got := sum(fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}
