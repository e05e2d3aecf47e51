package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReverseProxyUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"reverse-proxy"}, 2, "usage: gale reverse-proxy"},
		{[]string{"reverse-proxy", "--to", ","}, 1, "to: expected at least one upstream"},
		{[]string{"reverse-proxy", "--to", "https://x.example"}, 1, "https upstreams are not supported yet"},
		{[]string{"reverse-proxy", "--from", "nowhere", "--to", "127.0.0.1:1"}, 1, "listen: expected an address"},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.err) {
			t.Errorf("%v: exit %d stderr %q, want %d and %q", tc.args, code, errOut.String(), tc.code, tc.err)
		}
	}
}

// TestReverseProxyBinary runs `gale reverse-proxy` in front of two
// upstreams and takes requests through it.
func TestReverseProxyBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "a"+r.URL.Path) }))
	defer a.Close()
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "b"+r.URL.Path) }))
	defer b.Close()
	dir := t.TempDir()
	bin := filepath.Join(dir, "gale")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "reverse-proxy", "--from", "127.0.0.1:0", "--to", a.URL+", "+strings.TrimPrefix(b.URL, "http://"))
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
	got := map[string]bool{}
	for range 4 {
		resp, err := http.Get(base + "/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got[string(body)] = true
	}
	if !got["a/x"] || !got["b/x"] || len(got) != 2 {
		t.Errorf("answers %v, want a/x and b/x", got)
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
