package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gale/app"
	"gale/config"
)

// The tests of this package run a real PHP-FPM (Debian's php-fpm
// package), started by the test in the foreground with a pool of its own
// in the test's temp dir, and a real gale server in front of it.

// fpmBinary finds php-fpm, or skips the test.
func fpmBinary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"php-fpm", "php-fpm8.4", "php-fpm8.3", "php-fpm8.2", "php-fpm8.1"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		if p := "/usr/sbin/" + name; fileExists(p) {
			return p
		}
	}
	t.Skip("php-fpm not installed (Debian package php-fpm); .ci/run installs it")
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// fpm is a running PHP-FPM master with one pool.
type fpm struct {
	listen string // as gale's fastcgi.to takes it: "unix:/..." or "127.0.0.1:port"
	dir    string
	cmd    *exec.Cmd
	done   chan struct{}
	log    *lockedBuf
}

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startFPM starts PHP-FPM with a static pool of children workers,
// listening on a unix socket in dir (tcp false) or on 127.0.0.1 (tcp
// true). name is the pool's POOL environment variable.
func startFPM(t *testing.T, dir, name string, tcp bool, children int, extra ...string) *fpm {
	t.Helper()
	bin := fpmBinary(t)
	listen := filepath.Join(dir, name+".sock")
	to := "unix:" + listen
	if tcp {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listen = l.Addr().String()
		to = listen
		_ = l.Close()
	}
	conf := fmt.Sprintf(`[global]
error_log = %[1]s/%[2]s-fpm.log
pid = %[1]s/%[2]s-fpm.pid
daemonize = no
[%[2]s]
listen = %[3]s
pm = static
pm.max_children = %[4]d
catch_workers_output = yes
decorate_workers_output = no
clear_env = yes
env[POOL] = %[2]s
php_admin_value[output_buffering] = 0
php_admin_value[upload_max_filesize] = 16M
php_admin_value[post_max_size] = 16M
php_admin_value[memory_limit] = 128M
php_admin_value[max_execution_time] = 0
php_admin_flag[log_errors] = on
pm.status_path = /fpm-status
`, dir, name, listen, children) + strings.Join(extra, "\n") + "\n"
	file := filepath.Join(dir, name+"-fpm.conf")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fpm{listen: to, dir: dir, done: make(chan struct{}), log: &lockedBuf{}}
	f.cmd = exec.Command(bin, "-F", "-O", "-R", "-n", "-y", file)
	f.cmd.Stdout, f.cmd.Stderr = f.log, f.log
	if err := f.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	go func() { _ = f.cmd.Wait(); close(f.done) }()
	t.Cleanup(f.stop)
	f.waitListening(t, tcp, listen)
	return f
}

// waitListening waits until the pool accepts connections.
func (f *fpm) waitListening(t *testing.T, tcp bool, addr string) {
	t.Helper()
	network := "unix"
	if tcp {
		network = "tcp"
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout(network, addr, time.Second); err == nil {
			_ = c.Close()
			return
		}
		select {
		case <-f.done:
			t.Fatalf("php-fpm exited: %s", f.log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("php-fpm did not listen on %s: %s", addr, f.log.String())
}

// eventually polls cond every 10 ms for up to d. The sleep is the
// polling interval: cond reads a counter or a file that announces
// nothing.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (f *fpm) stop() {
	if f.cmd.Process != nil {
		_ = f.cmd.Process.Signal(os.Interrupt)
	}
	select {
	case <-f.done:
	case <-time.After(5 * time.Second):
		_ = f.cmd.Process.Kill()
		<-f.done
	}
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
