// Package fpmtest starts a real PHP-FPM (Debian's php-fpm package) for
// tests: in the foreground, with a static pool of its own in the test's
// temp dir, stopped when the test ends. Tests of gateway and of app/matrix
// share it.
package fpmtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Binary finds php-fpm, or skips the test naming pkg (the package whose
// tests need it).
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	for _, name := range []string{"php-fpm", "php-fpm8.4", "php-fpm8.3", "php-fpm8.2", "php-fpm8.1"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		if p := "/usr/sbin/" + name; fileExists(p) {
			return p
		}
	}
	t.Skip(pkg + ": php-fpm not installed (Debian package php-fpm); .ci/run installs it")
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// FPM is a running PHP-FPM master with one pool.
type FPM struct {
	Listen string     // as gale's fastcgi.to takes it: "unix:/..." or "127.0.0.1:port"
	Dir    string     // where its config, log and socket are
	Log    *LockedBuf // its standard output and error
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited
}

// LockedBuf is a strings.Builder safe for concurrent writers.
type LockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write implements io.Writer; it is safe for concurrent use.
func (l *LockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far; it is safe for concurrent use.
func (l *LockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Start starts PHP-FPM with a static pool of children workers, listening
// on a unix socket in dir (tcp false) or on 127.0.0.1 (tcp true). name
// is the pool's POOL environment variable; extra lines go at the end of
// the pool's section. pkg names the calling package in the skip message
// when php-fpm is missing. The process stops when the test ends.
func Start(t testing.TB, pkg, dir, name string, tcp bool, children int, extra ...string) *FPM {
	t.Helper()
	bin := Binary(t, pkg)
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
	f := &FPM{Listen: to, Dir: dir, done: make(chan struct{}), Log: &LockedBuf{}}
	f.cmd = exec.Command(bin, "-F", "-O", "-R", "-n", "-y", file)
	f.cmd.Stdout, f.cmd.Stderr = f.Log, f.Log
	if err := f.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	go func() { _ = f.cmd.Wait(); close(f.done) }()
	t.Cleanup(f.Stop)
	f.waitListening(t, tcp, listen)
	return f
}

// waitListening waits until the pool accepts connections.
func (f *FPM) waitListening(t testing.TB, tcp bool, addr string) {
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
			t.Fatalf("php-fpm exited: %s", f.Log.String())
		case <-time.After(20 * time.Millisecond): // polling a socket that has no readiness event to wait on
		}
	}
	t.Fatalf("php-fpm did not listen on %s: %s", addr, f.Log.String())
}

// Stop stops the master (SIGINT, then SIGKILL after 5s) and waits for
// it to exit. It may be called more than once.
func (f *FPM) Stop() {
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
