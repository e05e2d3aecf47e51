package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gale file-server lists directories only with --browse.
func TestFileServerBrowse(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "gale")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "<notes>.txt"), []byte("n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args   []string
		status int
	}{{[]string{"--browse"}, 200}, {nil, 404}} {
		args := append([]string{"file-server", "--root", root, "--listen", "127.0.0.1:0"}, tt.args...)
		cmd := exec.Command(bin, args...)
		stdout, _ := cmd.StdoutPipe()
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
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
			cmd.Process.Kill()
			t.Fatalf("%v: no listening line; stderr: %s", args, stderr.String())
		}
		go io.Copy(io.Discard, stdout)
		resp, err := http.Get(base + "/sub/")
		if err != nil {
			cmd.Process.Kill()
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("%v: GET /sub/ = %d; want %d", tt.args, resp.StatusCode, tt.status)
		}
		if tt.status == 200 && !strings.Contains(string(body), `<a href="%3Cnotes%3E.txt">&lt;notes&gt;.txt</a>`) {
			t.Errorf("listing: %s", body)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Fatal("gale did not exit on SIGTERM")
		}
	}
}
