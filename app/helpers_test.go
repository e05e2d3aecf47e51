package app

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gale/config"
	"gale/internal/tcpq"
)

// testServer is a real gale server on 127.0.0.1 with its files in a temp
// directory.
type testServer struct {
	t    *testing.T
	srv  *Server
	addr string
	dir  string
	done chan error
	once sync.Once
}

// baseConfig is prepended to every test config; routes come from the test.
const baseListen = "listen: [\"127.0.0.1:0\"]\n"

// startServer writes files (path -> content) under a temp dir's site/,
// loads yamlText (listen is added when missing) from that dir and runs it.
func startServer(t *testing.T, yamlText string, files map[string]string) *testServer {
	t.Helper()
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	if err := os.MkdirAll(site, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		p := filepath.Join(site, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeSettled(t, p, []byte(body))
	}
	if !strings.Contains(yamlText, "listen:") {
		yamlText = baseListen + yamlText
	}
	return runServer(t, writeConfig(t, dir, yamlText), dir)
}

// writeConfig writes yamlText to dir/gale.yaml and loads it.
func writeConfig(t *testing.T, dir, yamlText string) *config.Config {
	t.Helper()
	file := filepath.Join(dir, "gale.yaml")
	if err := os.WriteFile(file, []byte(yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// writeSettled writes a site file dated an hour ago, as a deployed file
// is: a file modified a moment ago is within its racy window
// (cache.Version.Racy), and its first requests wait for the window to
// pass, which tests about other things should not depend on.
func writeSettled(t *testing.T, p string, body []byte) {
	t.Helper()
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

func runServer(t *testing.T, cfg *config.Config, dir string) *testServer {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv, err := New(cfg, log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := &testServer{t: t, srv: srv, addr: srv.Addrs()[0], dir: dir, done: boot(t, srv)}
	t.Cleanup(ts.stop)
	return ts
}

// boot runs srv and waits until it accepts connections; Run's error
// arrives on the returned channel.
func boot(t *testing.T, srv *Server) chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- srv.Run() }()
	select {
	case <-srv.Booted():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("server did not boot")
	}
	return done
}

func (ts *testServer) stop() { ts.once.Do(ts.stopOnce) }

func (ts *testServer) stopOnce() { stopServer(ts.t, ts.srv, ts.done) }

// stopServer stops srv and waits for its Run to return on done.
func stopServer(t *testing.T, srv *Server, done chan error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Stop(ctx)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("server did not stop")
	}
}

func (ts *testServer) url(path string) string { return "http://" + ts.addr + path }

// dial opens a raw connection with a deadline for the whole test step.
func (ts *testServer) dial() net.Conn {
	ts.t.Helper()
	c, err := net.DialTimeout("tcp", ts.addr, 2*time.Second)
	if err != nil {
		ts.t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	ts.t.Cleanup(func() { c.Close() })
	return c
}

// readResponse reads one response from br with net/http's reader, body
// included.
func readResponse(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp, string(body)
}

// expectClosed asserts the peer closes c (EOF, or a reset) with no more
// bytes than allowed.
func expectClosed(t *testing.T, r io.Reader) {
	t.Helper()
	buf := make([]byte, 1024)
	n, err := r.Read(buf)
	if err == nil || n > 0 {
		t.Fatalf("connection not closed: read %d bytes %q, err %v", n, buf[:n], err)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection not closed: timed out waiting")
	}
}

// client returns an HTTP client that keeps one connection alive.
func client() *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			MaxIdleConnsPerHost: 1,
			MaxConnsPerHost:     1,
			DisableCompression:  true,
		},
	}
}

// peerRead waits until the server's end of c has read everything c sent
// so far (see inFlight). What c writes next then reaches the server in a
// read of its own.
func peerRead(t testing.TB, c net.Conn) {
	t.Helper()
	if !waitUntil(5*time.Second, func() bool { return inFlight(c.LocalAddr(), c.RemoteAddr()) == 0 }) {
		t.Fatalf("%d bytes from %s not read by the server yet", inFlight(c.LocalAddr(), c.RemoteAddr()), c.LocalAddr())
	}
}

// inFlight returns the bytes the connection's end at from wrote and its
// end at to has not read yet, as the kernel counts them (tcpq.InFlight).
func inFlight(from, to net.Addr) int { return tcpq.InFlight(from, to) }
