package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gale/app"
	"gale/config"
	"gale/gateway/fpmtest"
	"gale/internal/poll"
)

// The tests of this package run a real PHP-FPM (Debian's php-fpm
// package), started by the test in the foreground with a pool of its own
// in the test's temp dir (package fpmtest), and a real gale server in
// front of it.

// fpm is a running PHP-FPM master with one pool.
type fpm struct {
	*fpmtest.FPM
	listen string // as gale's fastcgi.to takes it: "unix:/..." or "127.0.0.1:port"
}

// stop stops the master and waits for it to exit.
func (f *fpm) stop() { f.Stop() }

// lockedBuf is a strings.Builder safe for concurrent writers.
type lockedBuf = fpmtest.LockedBuf

// startFPM starts PHP-FPM with a static pool of children workers,
// listening on a unix socket in dir (tcp false) or on 127.0.0.1 (tcp
// true). name is the pool's POOL environment variable.
func startFPM(t *testing.T, dir, name string, tcp bool, children int, extra ...string) *fpm {
	t.Helper()
	f := fpmtest.Start(t, "gateway", dir, name, tcp, children, extra...)
	return &fpm{FPM: f, listen: f.Listen}
}

// eventually polls cond (poll.Must) for up to d: cond reads a counter or
// a file that announces nothing.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.Must(t, d, what, cond)
}

// gale is a gale server on 127.0.0.1 for a test.
type gale struct {
	srv  *app.Server
	addr string
	done chan error
}

// startGale loads yamlText (listen added) from dir and runs it.
func startGale(t *testing.T, dir, yamlText string, log *slog.Logger) *gale {
	t.Helper()
	if !strings.Contains(yamlText, "listen:") {
		yamlText = "listen: [\"127.0.0.1:0\"]\n" + yamlText
	}
	file := filepath.Join(dir, "gale.yaml")
	if err := os.WriteFile(file, []byte(yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
		if testing.Verbose() {
			log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	}
	srv, err := app.New(cfg, log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	g := &gale{srv: srv, addr: srv.Addrs()[0], done: make(chan error, 1)}
	go func() { g.done <- srv.Run() }()
	select {
	case <-srv.Booted():
	case err := <-g.done:
		t.Fatalf("Run: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("server did not boot")
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Stop(ctx)
		<-g.done
	})
	return g
}

func (g *gale) url(p string) string { return "http://" + g.addr + p }

// writeFiles writes name -> content under root.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// httpClient keeps connections alive, with a bound on every request.
func httpClient() *http.Client {
	return &http.Client{
		Timeout:       20 * time.Second,
		Transport:     &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// get fetches url and returns the response and its body.
func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", url, err)
	}
	return resp, string(b)
}
