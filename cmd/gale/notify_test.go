package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gale/sdnotify"
)

// TestServeNotifiesServiceManager runs gale as systemd runs a
// Type=notify-reload service, with $NOTIFY_SOCKET naming a unixgram socket
// the test listens on, and checks the datagrams: READY=1 once it serves,
// RELOADING=1 with MONOTONIC_USEC then READY=1 around a SIGHUP reload
// (the new config answering by the time READY=1 arrives), STOPPING=1 on
// SIGTERM.
func TestServeNotifiesServiceManager(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	receive := func() string {
		t.Helper()
		buf := make([]byte, 4096)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // failsafe only
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return string(buf[:n])
	}
	file := filepath.Join(dir, "gale.yaml")
	write := func(body string) {
		t.Helper()
		doc := "listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /\n    respond: {body: \"" + body + "\"}\n"
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	get := func(base string) string {
		t.Helper()
		resp, err := http.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	write("one")
	cmd := exec.Command(galeBinary(t), "serve", "-c", file)
	cmd.Env = append(os.Environ(), sdnotify.EnvSocket+"="+sock)
	p := startCommand(t, cmd)

	if got := receive(); got != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", got)
	}
	if got := get(p.base); got != "one" {
		t.Fatalf("after READY=1: body %q, want one", got)
	}

	write("two")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	got := receive()
	if first, usec, ok := strings.Cut(got, "\n"); !ok || first != "RELOADING=1" || !strings.HasPrefix(usec, "MONOTONIC_USEC=") || len(usec) <= len("MONOTONIC_USEC=") {
		t.Fatalf("on SIGHUP: %q, want RELOADING=1 and MONOTONIC_USEC=...", got)
	}
	if got := receive(); got != "READY=1" {
		t.Fatalf("after the reload: %q, want READY=1", got)
	}
	if got := get(p.base); got != "two" {
		t.Fatalf("after the reload's READY=1: body %q, want two", got)
	}

	// A reload that fails keeps the running config and still ends with
	// READY=1, or systemd would wait for it until it times out.
	if err := os.WriteFile(file, []byte("listen: nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Process.Signal(syscall.SIGHUP)
	if got := receive(); !strings.HasPrefix(got, "RELOADING=1\n") {
		t.Fatalf("on a bad reload: %q, want RELOADING=1", got)
	}
	if got := receive(); got != "READY=1" {
		t.Fatalf("after a bad reload: %q, want READY=1", got)
	}

	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if got := receive(); got != "STOPPING=1" {
		t.Fatalf("on SIGTERM: %q, want STOPPING=1", got)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v; stderr: %s", err, p.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("gale did not exit on SIGTERM")
	}
}
