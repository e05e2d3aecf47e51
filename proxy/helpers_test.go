package proxy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gale/app"
	"gale/config"
	"gale/internal/poll"
	"gale/internal/tcpq"
)

// gale is a real server on 127.0.0.1 started by a test.
type gale struct {
	t    testing.TB
	srv  *app.Server
	addr string
	logs *syncBuffer
}

// syncBuffer collects log output from the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startGale runs a server from yamlText (listen is added when missing),
// with one event loop unless the text says otherwise.
func startGale(t testing.TB, yamlText string) *gale {
	t.Helper()
	if !strings.Contains(yamlText, "listen:") {
		yamlText = "listen: [\"127.0.0.1:0\"]\n" + yamlText
	}
	if !strings.Contains(yamlText, "server:") {
		yamlText += "\nserver: {event_loops: 1}\n"
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "gale.yaml")
	if err := os.WriteFile(file, []byte(yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return runGale(t, cfg)
}

func runGale(t testing.TB, cfg *config.Config) *gale {
	t.Helper()
	logs := &syncBuffer{}
	var w io.Writer = logs
	if testing.Verbose() {
		w = io.MultiWriter(logs, os.Stderr)
	}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := app.New(cfg, log)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run() }()
	select {
	case <-srv.Booted():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("server did not boot")
	}
	g := &gale{t: t, srv: srv, addr: srv.Addrs()[0], logs: logs}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Stop(ctx)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("server did not stop")
		}
	})
	return g
}

// url returns the URL of path on the server.
func (g *gale) url(path string) string { return "http://" + g.addr + path }

// client is an HTTP client that does not share connections between tests.
func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}, Timeout: 10 * time.Second}
}

// get fetches path and returns the status and body.
func (g *gale) get(c *http.Client, path string) (int, string) {
	g.t.Helper()
	resp, err := c.Get(g.url(path))
	if err != nil {
		g.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatalf("GET %s: body: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// upstream is a net/http server on 127.0.0.1 counting its connections.
type upstream struct {
	*httptest.Server
	conns atomic.Int64 // connections accepted
	reqs  atomic.Int64
}

func newUpstream(t *testing.T, h http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.reqs.Add(1)
		h(w, r)
	}))
	u.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.conns.Add(1)
		}
	}
	u.Start()
	t.Cleanup(u.Close)
	return u
}

// hostport returns the upstream's "127.0.0.1:port".
func (u *upstream) hostport() string { return strings.TrimPrefix(u.URL, "http://") }

// named answers with its name, for balancing tests.
func named(t *testing.T, name string) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream", name)
		io.WriteString(w, name)
	})
}

// rawUpstream is a TCP server whose connections are served by fn, for
// upstreams that misbehave on purpose.
type rawUpstream struct {
	ln    net.Listener
	conns atomic.Int64
	wg    sync.WaitGroup
}

func newRawUpstream(t *testing.T, fn func(c net.Conn)) *rawUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &rawUpstream{ln: ln}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.conns.Add(1)
			u.wg.Add(1)
			go func() {
				defer u.wg.Done()
				defer c.Close()
				fn(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		done := make(chan struct{})
		go func() { u.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("raw upstream handlers did not end")
		}
	})
	return u
}

func (u *rawUpstream) addr() string { return u.ln.Addr().String() }

// readHead reads one request head from br (through the empty line) and
// returns it; "" at EOF.
func readHead(br *bufio.Reader) string {
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			return ""
		}
		if line == "\r\n" {
			return b.String()
		}
	}
}

// rawConn is a client connection to the server for byte-exact exchanges.
type rawConn struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

func (g *gale) dial() *rawConn {
	g.t.Helper()
	c, err := net.DialTimeout("tcp", g.addr, 5*time.Second)
	if err != nil {
		g.t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	g.t.Cleanup(func() { c.Close() })
	return &rawConn{t: g.t, c: c, br: bufio.NewReader(c)}
}

func (rc *rawConn) send(s string) {
	rc.t.Helper()
	if _, err := rc.c.Write([]byte(s)); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// response reads one response; method is the request's (for HEAD).
func (rc *rawConn) response(method string) (*http.Response, string) {
	rc.t.Helper()
	resp, err := http.ReadResponse(rc.br, &http.Request{Method: method})
	if err != nil {
		rc.t.Fatalf("read response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		rc.t.Fatalf("read body: %v", err)
	}
	return resp, string(b)
}

// eventually polls cond for up to d (see waitUntil) and fails the test
// if it never held.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !waitUntil(d, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// waitUntil polls cond (poll.Until) until it holds or d has passed, and
// reports whether it held: cond reads a counter, a log or the kernel, none
// of which announces a change.
func waitUntil(d time.Duration, cond func() bool) bool { return poll.Until(d, cond) }

// inFlight returns the bytes the connection's end at from wrote and its
// end at to has not read yet, as the kernel counts them (tcpq.InFlight).
func inFlight(from, to net.Addr) int { return tcpq.InFlight(from, to) }

func proxyRoute(to ...string) string {
	q := make([]string, len(to))
	for i, s := range to {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "routes:\n  - path: /\n    proxy:\n      to: [" + strings.Join(q, ", ") + "]\n"
}

// readToEnd reads c until EOF or an error, with a deadline as a failsafe
// only, and reports whether the connection ended (rather than the
// deadline passing).
func readToEnd(c net.Conn, failsafe time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(failsafe))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}
