package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gale/internal/poll"
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /\n    respond: {body: \"hi\\n\"}\n"), 0o644)
	os.WriteFile(bad, []byte("listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /\n    respond: {bodyy: \"hi\\n\"}\n"), 0o644)
	// Refused when the routes are built, not when the file is decoded:
	// validate must refuse it as serve does.
	unnormal := filepath.Join(dir, "unnormal.yaml")
	os.WriteFile(unnormal, []byte("listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /%7euser/\n    respond: {body: \"hi\\n\"}\n"), 0o644)
	h2 := filepath.Join(dir, "h2.yaml")
	os.WriteFile(h2, []byte("listen: [\"127.0.0.1:0\"]\nserver:\n  http2: {enabled: true, max_concurrent_streams: 100, initial_stream_window: 1MiB, initial_connection_window: 64KiB,\n    max_frame_size: 16KiB, max_header_list_size: 32KiB, max_requests: 1000}\nroutes:\n  - path: /\n    respond: {}\n"), 0o644)
	h2bad := filepath.Join(dir, "h2bad.yaml")
	os.WriteFile(h2bad, []byte("listen: [\"127.0.0.1:0\"]\nserver:\n  http2: {max_frame_size: 16MiB, max_streams: 10}\nroutes:\n  - path: /\n    respond: {}\n"), 0o644)
	// listen[].protocols: a listener without h1 needs HTTP/2, which
	// server.http2.enabled: false (refused by config) and a proxy route
	// (refused when the server is compiled) keep off.
	h2c := filepath.Join(dir, "h2c.yaml")
	os.WriteFile(h2c, []byte("listen: [{address: \"127.0.0.1:0\", protocols: [h2c]}]\nroutes:\n  - path: /\n    respond: {}\n"), 0o644)
	h2cOff := filepath.Join(dir, "h2coff.yaml")
	os.WriteFile(h2cOff, []byte("listen: [{address: \"127.0.0.1:0\", protocols: [h2c]}]\nserver: {http2: {enabled: false}}\nroutes:\n  - path: /\n    respond: {}\n"), 0o644)
	h2cProxy := filepath.Join(dir, "h2cproxy.yaml")
	os.WriteFile(h2cProxy, []byte("listen: [{address: \"127.0.0.1:0\", protocols: [h2c]}]\nroutes:\n  - path: /\n    fastcgi: {to: \"127.0.0.1:1\", root: .}\n"), 0o644)
	cases := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"validate", "-c", good}, 0, "ok\n"},
		{[]string{"validate", "-c", h2}, 0, "ok\n"},
		{[]string{"validate", "-c", h2bad}, 1, "h2bad.yaml:3:27: server.http2.max_frame_size: must be at most 16777215B, got 16MiB\n" +
			h2bad + ":3:34: server.http2.max_streams: unknown key \"max_streams\""},
		{[]string{"validate", "-c", h2c}, 0, "ok\n"},
		{[]string{"validate", "-c", h2cOff}, 1, "h2coff.yaml:1:46: listen[0].protocols: [h2c] needs HTTP/2, which server.http2.enabled: false turns off; add h1 or enable HTTP/2\n"},
		{[]string{"validate", "-c", h2cProxy}, 0, "ok\n"},
		{[]string{"validate", "-c", bad}, 1, "bad.yaml:4:15: routes[0].respond.bodyy: unknown key \"bodyy\"; did you mean \"body\"?"},
		{[]string{"validate", "-c", unnormal}, 1, "unnormal.yaml:3:5: route host \"\" path \"/%7euser/\": handlers: route path is not in normal form"},
		{[]string{"validate"}, 2, ""},
		{[]string{"validate", "-c", filepath.Join(dir, "missing.yaml")}, 1, "missing.yaml"},
		{[]string{"frobnicate"}, 2, ""},
		{[]string{"version"}, 0, "gale "},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		code := run(tc.args, &out, &errOut)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (stdout %q, stderr %q)", tc.args, code, tc.code, out.String(), errOut.String())
		}
		if !strings.Contains(out.String(), tc.out) {
			t.Errorf("%v: stdout %q, want it to contain %q", tc.args, out.String(), tc.out)
		}
	}
}

// TestServeBinary builds gale and runs it as a user would: it prints the
// bound address, serves, reloads on SIGHUP (keeping the running config
// when the new file is invalid) and exits 0 on SIGTERM.
func TestServeBinary(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gale.yaml")
	write := func(body string) {
		text := "listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /hello\n    respond: {body: " + body + "}\n"
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`"one\n"`)
	p := startGale(t, "serve", "-c", cfg)
	get := func() string {
		resp, err := http.Get(p.base + "/hello")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := get(); got != "one\n" {
		t.Fatalf("before reload: %q", got)
	}
	write(`"two\n"`)
	_ = p.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool { return get() == "two\n" })
	_ = os.WriteFile(cfg, []byte("listen: nope\n"), 0o644)
	_ = p.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool { return strings.Contains(p.stderr.String(), "keeping the running config") })
	if got := get(); got != "two\n" {
		t.Fatalf("after a bad reload: %q", got)
	}
	p.stop(t)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	eventually(t, 5*time.Second, "the condition", cond)
}

// eventually polls cond (poll.Must) for up to d: cond reads a log, a
// file or the kernel's view of the process, none of which announces a
// change.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.Must(t, d, what, cond)
}
