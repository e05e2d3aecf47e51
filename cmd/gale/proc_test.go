package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildOut  []byte
)

// galeBinary builds the command once per test run and returns its path.
// Tests that run it skip under -short.
func galeBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gale-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "gale")
		buildOut, buildErr = exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return builtBin
}

// TestMain removes the built binary after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		_ = os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// galeProc is a running gale process.
type galeProc struct {
	cmd    *exec.Cmd
	base   string        // "http://127.0.0.1:PORT" from the first listening line
	stderr *lockedBuffer // everything it logged
}

var listeningRE = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)

// startGale runs the binary with args and waits (up to 10 s) for the
// address it prints. The process is killed when the test ends if it is
// still running.
func startGale(t *testing.T, args ...string) *galeProc {
	t.Helper()
	return startCommand(t, exec.Command(galeBinary(t), args...))
}

// startCommand runs cmd, which runs the binary (through a wrapper such as
// prlimit that execs it), and waits like startGale.
func startCommand(t *testing.T, cmd *exec.Cmd) *galeProc {
	t.Helper()
	args := cmd.Args[1:]
	p := &galeProc{cmd: cmd, stderr: &lockedBuffer{}}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	lines := bufio.NewScanner(stdout)
	deadline := time.Now().Add(10 * time.Second)
	for p.base == "" && time.Now().Before(deadline) && lines.Scan() {
		if m := listeningRE.FindStringSubmatch(lines.Text()); m != nil {
			p.base = m[1]
		}
	}
	if p.base == "" {
		t.Fatalf("%v: no listening line; stderr: %s", args, p.stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return p
}

// stop sends SIGTERM and requires a clean exit within 10 s.
func (p *galeProc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
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
