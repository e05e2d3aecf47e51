package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"gale/config"

	"golang.org/x/sys/unix"
)

// TestRefused answers 502 at once when the upstream refuses, keeps the
// client's connection, and leaks nothing.
func TestRefused(t *testing.T) {
	t.Parallel()
	// A connect timeout far above the bound below: an answer that
	// waited for it, rather than for the refusals, cannot pass.
	g := startGale(t, proxyRoute(deadAddr(t))+"      retries: 2\n      timeouts: {connect: 30s}\n")
	rc := g.dial()
	for range 3 {
		start := time.Now()
		rc.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		resp, body := rc.response("GET")
		if resp.StatusCode != 502 || resp.Close || !strings.Contains(body, "502") {
			t.Fatalf("refused: %d close %v %q", resp.StatusCode, resp.Close, body)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("refused upstream answered after %v, as if after the connect timeout", d)
		}
	}
	if s := g.srv.ProxyStats(); s.Errors != 3 || s.DialFails != 9 {
		t.Errorf("errors %d dial failures %d, want 3 and 9 (three attempts each)", s.Errors, s.DialFails)
	}
}

// TestBadUpstreams covers upstreams that reset, speak garbage, or stop in
// the middle of a response.
func TestBadUpstreams(t *testing.T) {
	t.Parallel()
	reset := newRawUpstream(t, func(c net.Conn) {
		readHead(bufio.NewReader(c))
		c.(*net.TCPConn).SetLinger(0) // RST on close
	})
	garbage := newRawUpstream(t, func(c net.Conn) {
		readHead(bufio.NewReader(c))
		io.WriteString(c, "hello, this is not HTTP\r\n\r\n")
	})
	splitting := newRawUpstream(t, func(c net.Conn) {
		readHead(bufio.NewReader(c))
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
	})
	closeEarly := newRawUpstream(t, func(c net.Conn) {
		readHead(bufio.NewReader(c))
	})
	for _, c := range []struct {
		name string
		up   string
	}{
		{"reset", reset.addr()},
		{"garbage", garbage.addr()},
		{"length and chunked", splitting.addr()},
		{"closed before answering", closeEarly.addr()},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := startGale(t, proxyRoute(c.up))
			rc := g.dial()
			rc.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
			if resp, _ := rc.response("GET"); resp.StatusCode != 502 {
				t.Errorf("%d, want 502", resp.StatusCode)
			}
			noUpstreamOpen(t, g)
		})
	}
}

// TestTruncatedResponse closes the client's connection when the upstream
// stops in the middle of a body: the client must not take it for whole.
func TestTruncatedResponse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, resp string }{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789"},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n"},
		{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\nzz\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := newRawUpstream(t, func(conn net.Conn) {
				readHead(bufio.NewReader(conn))
				io.WriteString(conn, c.resp)
				// The end of the stream after the bytes, then wait for
				// gale to close: a close with gale's bytes unread would
				// be a reset, which may discard the response in flight.
				conn.(*net.TCPConn).CloseWrite()
				io.Copy(io.Discard, conn)
			})
			g := startGale(t, proxyRoute(up.addr()))
			rc := g.dial()
			rc.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
			resp, err := http.ReadResponse(rc.br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || err == nil {
				t.Fatalf("status %d, body %q read in full (%v); want a failed read", resp.StatusCode, body, err)
			}
			if string(body) != "0123456789" {
				t.Errorf("body %q", body)
			}
			if n, err := rc.br.Read(make([]byte, 1)); err == nil {
				t.Errorf("connection still open (%d bytes)", n)
			}
			noUpstreamOpen(t, g)
		})
	}
}

// TestResponseHeaderTimeout answers 504 when the upstream takes too long.
func TestResponseHeaderTimeout(t *testing.T) {
	t.Parallel()
	up := newRawUpstream(t, func(c net.Conn) {
		readHead(bufio.NewReader(c))
		io.Copy(io.Discard, c) // never answers; until gale gives up and closes
	})
	g := startGale(t, proxyRoute(up.addr())+"      timeouts: {response_header: 300ms}\n")
	rc := g.dial()
	start := time.Now()
	rc.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, _ := rc.response("GET")
	// Not before the timeout (less a margin for its clock's tick); the
	// upstream never answers, so any later answer is the timeout's, and
	// the upper bound only catches a timer ignored for many times its
	// length.
	if d := time.Since(start); resp.StatusCode != 504 || d < 250*time.Millisecond || d > 10*time.Second {
		t.Errorf("status %d after %v, want 504 after about 300ms", resp.StatusCode, d)
	}
	noUpstreamOpen(t, g)
}

// blackhole returns an address whose listener never accepts and whose
// accept queue is full, so that connecting hangs.
func blackhole(t *testing.T) string {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, _ := unix.Getsockname(fd)
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port)
	for i := 0; i < 8; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return addr // the queue is full: connects now hang
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Skip("could not fill a listen queue; connects do not hang here")
	return ""
}

// TestConnectTimeout answers 504 when connecting takes too long.
func TestConnectTimeout(t *testing.T) {
	t.Parallel()
	hole := blackhole(t)
	g := startGale(t, proxyRoute(hole)+"      retries: 0\n      timeouts: {connect: 300ms}\n")
	rc := g.dial()
	start := time.Now()
	rc.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, _ := rc.response("GET")
	// The connect hangs for ever: any 504 is the timeout's; the bound
	// only catches a timer ignored for many times its length.
	if d := time.Since(start); resp.StatusCode != 504 || d > 10*time.Second {
		t.Errorf("status %d after %v, want 504 after about 300ms", resp.StatusCode, d)
	}
}

// TestRetries: a request that reached no upstream is retried on another
// one; without retries it fails.
func TestRetries(t *testing.T) {
	t.Parallel()
	a := named(t, "a")
	dead := deadAddr(t)
	for _, c := range []struct {
		retries   int
		want502   bool
		wantCount int
	}{{1, false, 10}, {0, true, 5}} {
		t.Run(fmt.Sprint("retries ", c.retries), func(t *testing.T) {
			g := startGale(t, proxyRoute(dead, a.hostport())+fmt.Sprintf("      retries: %d\n      health_check: {passive: {fails: 0}}\n", c.retries))
			cl := newClient()
			ok := 0
			for range 10 {
				if code, _ := g.get(cl, "/"); code == 200 {
					ok++
				} else if code != 502 {
					t.Fatalf("status %d", code)
				}
			}
			if ok != c.wantCount {
				t.Errorf("%d of 10 succeeded, want %d", ok, c.wantCount)
			}
		})
	}
}

// staleUpstream answers the first request of each connection and closes
// the connection when the second arrives, without answering: a pooled
// connection closed just as it is reused.
func staleUpstream(t *testing.T) *rawUpstream {
	return newRawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh")
		readHead(br)
	})
}

// TestStalePooledConnection retries a request safe to repeat on a fresh
// connection, and answers 502 for one that is not.
func TestStalePooledConnection(t *testing.T) {
	t.Parallel()
	up := staleUpstream(t)
	g := startGale(t, proxyRoute(up.addr()))
	rc := g.dial()
	rc.send("GET /1 HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, body := rc.response("GET"); resp.StatusCode != 200 || body != "fresh" {
		t.Fatalf("first: %d %q", resp.StatusCode, body)
	}
	rc.send("GET /2 HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, body := rc.response("GET"); resp.StatusCode != 200 || body != "fresh" {
		t.Fatalf("GET on a stale connection: %d %q, want a retry on a fresh one", resp.StatusCode, body)
	}
	if s := g.srv.ProxyStats(); s.Retries != 1 || up.conns.Load() != 2 {
		t.Errorf("retries %d, upstream connections %d; want 1 and 2", s.Retries, up.conns.Load())
	}
	rc.send("POST /3 HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx")
	if resp, _ := rc.response("POST"); resp.StatusCode != 502 {
		t.Errorf("POST on a stale connection: %d, want 502 (not safe to repeat)", resp.StatusCode)
	}
}

// TestReuse sends 200 requests one after another: they share a pooled
// upstream connection instead of opening 200.
func TestReuse(t *testing.T) {
	t.Parallel()
	up := named(t, "a")
	g := startGale(t, proxyRoute(up.hostport()))
	cl := newClient()
	for i := range 200 {
		if code, body := g.get(cl, fmt.Sprint("/", i)); code != 200 || body != "a" {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
	}
	if n := up.conns.Load(); n > 2 {
		t.Errorf("200 requests opened %d upstream connections", n)
	}
	if s := g.srv.ProxyStats(); s.Reused < 198 {
		t.Errorf("reused %d times", s.Reused)
	}
}

// TestUnixSocket proxies to an upstream on a Unix socket.
func TestUnixSocket(t *testing.T) {
	t.Parallel()
	sock := t.TempDir() + "/up.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "unix "+r.Host)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	g := startGale(t, proxyRoute("unix:"+sock))
	cl := newClient()
	for range 3 {
		if code, body := g.get(cl, "/"); code != 200 || body != "unix localhost" {
			t.Fatalf("%d %q", code, body)
		}
	}
}

// TestClientBodyTimeout answers 408 when the client stops sending its
// body, without holding it against the upstream.
func TestClientBodyTimeout(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	})
	g := startGale(t, proxyRoute(up.hostport())+"      health_check: {passive: {fails: 1}}\n"+
		"server: {event_loops: 1, timeouts: {read_body: 300ms}}\n")
	rc := g.dial()
	start := time.Now()
	rc.send("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc")
	resp, _ := rc.response("POST")
	// The client never sends the rest: any 408 is the timeout's; the
	// bound only catches a timer ignored for many times its length.
	if d := time.Since(start); resp.StatusCode != 408 || !resp.Close || d > 10*time.Second {
		t.Errorf("status %d close %v after %v, want 408 and close after about 300ms", resp.StatusCode, resp.Close, d)
	}
	if strings.Contains(g.logs.String(), "out of service") {
		t.Errorf("the upstream was blamed:\n%s", g.logs.String())
	}
}

// noUpstreamOpen checks that no upstream connection is left open.
func noUpstreamOpen(t *testing.T, g *gale) {
	t.Helper()
	eventually(t, 2*time.Second, "upstream connections to close", func() bool { return g.srv.ProxyStats().Open == 0 })
}

// TestIdlePool closes pooled connections idle for longer than
// timeouts.idle, and keeps none with max_idle_per_upstream: 0.
func TestIdlePool(t *testing.T) {
	t.Parallel()
	up := named(t, "a")
	g := startGale(t, proxyRoute(up.hostport())+"      timeouts: {idle: 200ms}\n")
	cl := newClient()
	g.get(cl, "/")
	if s := g.srv.ProxyStats(); s.Open != 1 {
		t.Fatalf("open %d after a request, want 1 pooled", s.Open)
	}
	noUpstreamOpen(t, g)

	up2 := named(t, "b")
	g2 := startGale(t, proxyRoute(up2.hostport())+"      max_idle_per_upstream: 0\n")
	for range 5 {
		g2.get(cl, "/")
	}
	if n := up2.conns.Load(); n != 5 {
		t.Errorf("%d upstream connections for 5 requests without pooling", n)
	}
	noUpstreamOpen(t, g2)
}

// TestReloadProxy swaps the upstream of a route on reload: new requests
// go to the new one, and the old one's pooled connections close.
func TestReloadProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a reload's grace period: not in -short")
	}
	t.Parallel()
	a, b := named(t, "a"), named(t, "b")
	g := startGale(t, proxyRoute(a.hostport()))
	cl := newClient()
	if _, body := g.get(cl, "/"); body != "a" {
		t.Fatalf("before reload: %q", body)
	}
	cfg, err := config.Parse([]byte("listen: [\""+g.addr+"\"]\nserver: {event_loops: 1}\n"+proxyRoute(b.hostport())), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if _, body := g.get(cl, "/"); body != "b" {
		t.Errorf("after reload: %q", body)
	}
	// The old route retires after the server's grace period; its idle
	// connection then closes at the next sweep.
	eventually(t, 8*time.Second, "the old upstream's connection to close", func() bool { return g.srv.ProxyStats().Open == 1 })
}

// TestAccessLogProxied writes access log lines for proxied requests, with
// the request as it came and the status the upstream gave.
func TestAccessLogProxied(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(201)
		io.WriteString(w, "made")
	})
	dir := t.TempDir()
	g := startGale(t, fmt.Sprintf("access_log: {path: %q}\n", dir+"/access.log")+proxyRoute(up.hostport()))
	rc := g.dial()
	rc.send("POST /things?x=1 HTTP/1.1\r\nHost: a\r\nUser-Agent: tester/1\r\nReferer: http://r/\r\nContent-Length: 2\r\n\r\nhi")
	if resp, _ := rc.response("POST"); resp.StatusCode != 201 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	eventually(t, 3*time.Second, "the access log line", func() bool {
		b, _ := os.ReadFile(dir + "/access.log")
		return strings.Contains(string(b), `"POST /things?x=1 HTTP/1.1" 201 4 "http://r/" "tester/1"`)
	})
}
