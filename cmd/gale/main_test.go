package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /\n    respond: {body: \"hi\\n\"}\n"), 0o644)
	os.WriteFile(bad, []byte("listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /\n    respond: {bodyy: \"hi\\n\"}\n"), 0o644)
	cases := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"validate", "-c", good}, 0, "ok\n"},
		{[]string{"validate", "-c", bad}, 1, "bad.yaml:4:15: routes[0].respond.bodyy: unknown key \"bodyy\"; did you mean \"body\"?"},
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
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "gale")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "gale.yaml")
	write := func(body string) {
		text := "listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /hello\n    respond: {body: " + body + "}\n"
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`"one\n"`)
	cmd := exec.Command(bin, "serve", "-c", cfg)
	stdout, _ := cmd.StdoutPipe()
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	addrRE := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	lines := bufio.NewScanner(stdout)
	var base string
	deadline := time.Now().Add(10 * time.Second)
	for base == "" && time.Now().Before(deadline) && lines.Scan() {
		if m := addrRE.FindStringSubmatch(lines.Text()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("no listening line; stderr: %s", stderr.String())
	}
	go io.Copy(io.Discard, stdout)
	get := func() string {
		resp, err := http.Get(base + "/hello")
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
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool { return get() == "two\n" })
	os.WriteFile(cfg, []byte("listen: nope\n"), 0o644)
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "keeping the running config") })
	if got := get(); got != "two\n" {
		t.Fatalf("after a bad reload: %q", got)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("gale did not exit on SIGTERM")
	}
}

// lockedBuffer is a bytes.Buffer that exec's copying goroutine and the
// test may use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("condition not met within 5s")
}
