package app

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// fakeUpstream runs serve on each connection to a new upstream, with a
// reader over it, for upstreams that misbehave in ways net/http will not.
func fakeUpstream(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	return rawUpstream(t, func(c net.Conn) { serve(c, bufio.NewReader(c)) })
}

// TestH2ProxyFailures: upstream failures are answered on their own
// stream (502 down, garbage or reset before the head; 504 after the
// response-header timeout; RST_STREAM when the upstream dies mid-body),
// while a download on another stream of the same connection goes on,
// and the connection serves requests afterwards.
func TestH2ProxyFailures(t *testing.T) {
	t.Parallel()
	garbage := fakeUpstream(t, func(c net.Conn, br *bufio.Reader) {
		_, _ = http.ReadRequest(br)
		_, _ = io.WriteString(c, "SMTP ready\r\n\r\n")
	})
	reset := fakeUpstream(t, func(c net.Conn, br *bufio.Reader) {
		_, _ = http.ReadRequest(br)
		c.(*net.TCPConn).SetLinger(0)
	})
	silent := fakeUpstream(t, func(c net.Conn, br *bufio.Reader) {
		_, _ = http.ReadRequest(br)
		_, _ = io.Copy(io.Discard, br) // never answers; the proxy gives up
	})
	midBody := fakeUpstream(t, func(c net.Conn, br *bufio.Reader) {
		_, _ = http.ReadRequest(br)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"+strings.Repeat("a", 1000))
	})
	// The slow upstream sends a byte of its body at each failure on the
	// other streams, and the rest once they are over.
	step, rest := make(chan struct{}), make(chan struct{})
	slow := fakeUpstream(t, func(c net.Conn, br *bufio.Reader) {
		_, _ = http.ReadRequest(br)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n")
		for i := 0; i < 20; i++ {
			select {
			case <-step:
			case <-rest:
			}
			if _, err := io.WriteString(c, "s"); err != nil {
				return
			}
		}
	})
	t.Cleanup(func() { // on an early failure too
		select {
		case <-rest:
		default:
			close(rest)
		}
	})
	nudge := func() {
		select {
		case step <- struct{}{}:
		case <-time.After(10 * time.Second): // a failsafe
			t.Fatal("the slow download is not under way")
		}
	}
	yaml := `listen:
  - "127.0.0.1:0"
routes:
  - path: /down/
    proxy: {to: ["` + deadAddr(t) + `"]}
  - path: /garbage/
    proxy: {to: ["` + garbage + `"]}
  - path: /reset/
    proxy: {to: ["` + reset + `"]}
  - path: /silent/
    proxy: {to: ["` + silent + `"], timeouts: {response_header: 300ms}}
  - path: /midbody/
    proxy: {to: ["` + midBody + `"]}
  - path: /slow/
    proxy: {to: ["` + slow + `"]}
`
	ts := startServer(t, yaml, nil)
	hc := dialH2C(t, ts.addr, 1<<20, 0).decodeHeaders()
	slowID := hc.get("/slow/")
	for _, c := range []struct {
		path   string
		status string
	}{{"/down/", "502"}, {"/garbage/", "502"}, {"/reset/", "502"}, {"/silent/", "504"}} {
		nudge()
		id := hc.get(c.path)
		code, status, _ := hc.awaitStream(id)
		if code != -1 || status != c.status {
			t.Errorf("%s: reset %d, status %q; want %s", c.path, code, status, c.status)
		}
	}
	nudge()
	id := hc.get("/midbody/")
	code, status, body := hc.awaitStream(id)
	if code != int(http2.ErrCodeInternal) || status != "200" || len(body) != 1000 {
		t.Errorf("/midbody/: reset %d, status %q, %d bytes; want 200, 1000 bytes, then INTERNAL_ERROR", code, status, len(body))
	}
	close(rest)
	if code, status, body := hc.awaitStream(slowID); code != -1 || status != "200" || body != strings.Repeat("s", 20) {
		t.Errorf("/slow/ beside the failures: reset %d, %q %q", code, status, body)
	}
	if _, err := http.Get(ts.url("/down/")); err != nil {
		t.Fatalf("HTTP/1.1 beside: %v", err)
	}
}

// TestH2ProxyRetryAndBalance: a request that reached no upstream is
// tried on the next one, and round robin spreads HTTP/2 streams as it
// spreads HTTP/1.1 requests.
func TestH2ProxyRetryAndBalance(t *testing.T) {
	t.Parallel()
	var addrs []string
	for i := 0; i < 2; i++ {
		i := i
		addrs = append(addrs, netUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%d", i)
		})))
	}
	yaml := `listen:
  - "127.0.0.1:0"
routes:
  - path: /
    proxy: {to: ["` + deadAddr(t) + `", "` + addrs[0] + `", "` + addrs[1] + `"], retries: 2}
`
	ts := startServer(t, yaml, nil)
	c := h2cClient(t)
	seen := map[string]int{}
	for i := 0; i < 30; i++ {
		resp, err := c.Get(ts.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
			t.Fatalf("request %d: %s %d %q", i, resp.Proto, resp.StatusCode, body)
		}
		seen[string(body)]++
	}
	if seen["0"] == 0 || seen["1"] == 0 {
		t.Errorf("answers by upstream %v, want both", seen)
	}
}

// TestH2ProxyCloseDelimited: a response whose body ends where the
// upstream closes reaches an HTTP/2 client whole, ended by END_STREAM.
func TestH2ProxyCloseDelimited(t *testing.T) {
	t.Parallel()
	up := fakeUpstream(t, func(c net.Conn, br *bufio.Reader) {
		_, _ = http.ReadRequest(br)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"+strings.Repeat("z", 100000))
	})
	ts := startServer(t, `listen: ["127.0.0.1:0"]
routes:
  - path: /
    proxy: {to: ["`+up+`"]}
`, nil)
	c := h2cClient(t)
	for i := 0; i < 3; i++ {
		resp, err := c.Get(ts.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || string(body) != strings.Repeat("z", 100000) {
			t.Fatalf("%d: %v %d, %d bytes", i, err, resp.StatusCode, len(body))
		}
	}
}
