package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// openFDs counts the descriptors process pid holds.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("descriptors of gale: %v", err)
	}
	return len(ents)
}

// fetchStatus sends one GET on a new connection and returns the status
// code, or 0 when the connection closed (or was reset) without a
// response. Its deadline is a failsafe; running into it fails the test.
func fetchStatus(t *testing.T, c net.Conn, path string) int {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		return 0
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("GET %s: no answer and no close", path)
	}
	var code int
	if _, err := fmt.Sscanf(line, "HTTP/1.1 %d ", &code); err != nil {
		return 0
	}
	return code
}

// TestDescriptorLimitKeepsServing runs gale with 96 descriptors and has
// 40 clients each start an 8 MiB download they do not read (each would
// hold a connection, the file and the socket's duplicates), then 20 more
// clients: gnet v2.9.7 ends the engine on the first EMFILE from accept,
// so without a budget gale exits. With one, clients beyond it are
// answered 503 (or closed), gale stays up, its descriptors come back once
// the clients close, and a new client is served in full.
func TestDescriptorLimitKeepsServing(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("needs prlimit (util-linux)")
	}
	bin := galeBinary(t)
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	if err := os.MkdirAll(site, 0o755); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 512<<10) // 8 MiB
	if err := os.WriteFile(filepath.Join(site, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(site, "small.txt"), []byte("small\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "gale.yaml")
	conf := `listen: ["127.0.0.1:0"]
server: {event_loops: 2, max_buffered_output: 64KiB}
routes:
  - path: /
    static: {root: ./site}
`
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startCommand(t, exec.Command("prlimit", "--nofile=96:96", "--", bin, "serve", "-c", file))
	pid := p.cmd.Process.Pid
	addr := strings.TrimPrefix(p.base, "http://")
	if code := fetchStatus(t, dial(t, addr), "/small.txt"); code != 200 {
		t.Fatalf("first request: %d", code)
	}
	baseline := openFDs(t, pid)

	var held []net.Conn
	downloads, others := map[int]int{}, map[int]int{}
	for range 40 {
		c := dial(t, addr)
		_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
		held = append(held, c)
		downloads[fetchStatus(t, c, "/big.bin")]++ // 200: the body waits unread
	}
	for range 20 {
		c := dial(t, addr)
		held = append(held, c)
		others[fetchStatus(t, c, "/small.txt")]++
	}
	t.Logf("by status (0 = closed): downloads %v, other clients %v; %d descriptors held after the last answer",
		downloads, others, openFDs(t, pid))
	if downloads[200] == 0 || downloads[503]+downloads[0]+others[503]+others[0] == 0 {
		t.Fatalf("downloads %v, others %v: want some served and some refused", downloads, others)
	}
	for _, m := range []map[int]int{downloads, others} {
		for s := range m {
			if s != 200 && s != 503 && s != 0 {
				t.Fatalf("downloads %v, others %v: only 200, 503 or a close are answers", downloads, others)
			}
		}
	}
	if strings.Contains(p.stderr.String(), "engine is being shutdown") {
		t.Fatalf("the engine stopped: %s", p.stderr.String())
	}

	for _, c := range held {
		c.Close()
	}
	closedAt := time.Now()
	eventually(t, 10*time.Second, fmt.Sprintf("the descriptors back to the %d at the start", baseline), func() bool {
		return openFDs(t, pid) <= baseline
	})
	t.Logf("descriptors back to %d within %v of the clients' close", baseline, time.Since(closedAt).Round(time.Millisecond))
	resp, err := http.Get(p.base + "/big.bin")
	if err != nil {
		t.Fatalf("after the clients left: %v; stderr: %s", err, p.stderr.String())
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || n != int64(len(big)) {
		t.Fatalf("after the clients left: %d, %d bytes, %v", resp.StatusCode, n, err)
	}
	p.stop(t)
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestDescriptorExhaustionLogsOnce runs gale with 256 descriptors against
// 1,000 clients that connect at once and hold their connections: gale
// refuses those beyond its budget (503, or a close), keeps serving the
// connections it had, logs the run of refusals in one line (and its end,
// with the count, in another) rather than a line per refused accept, and
// serves new clients once the crowd left.
func TestDescriptorExhaustionLogsOnce(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("needs prlimit (util-linux)")
	}
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	if err := os.MkdirAll(site, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(site, "small.txt"), []byte("small\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "gale.yaml")
	conf := "listen: [\"127.0.0.1:0\"]\nserver: {event_loops: 2, reuse_port: true}\nroutes:\n  - path: /\n    static: {root: ./site}\n"
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startCommand(t, exec.Command("prlimit", "--nofile=256:256", "--", galeBinary(t), "serve", "-c", file))
	addr := strings.TrimPrefix(p.base, "http://")

	established := make([]*keptConn, 20)
	for i := range established {
		established[i] = keep(t, addr)
		if code := established[i].get(t, "/small.txt"); code != 200 {
			t.Fatalf("established connection %d: %d", i, code)
		}
	}
	crowd := make(chan net.Conn, 1000)
	var served, refused, dialFailed atomic.Int64
	var wg sync.WaitGroup
	for range 1000 {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				dialFailed.Add(1)
				return
			}
			crowd <- c
			if fetchStatus(t, c, "/small.txt") == 200 {
				served.Add(1)
			} else {
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	close(crowd)
	for i, kc := range established {
		if code := kc.get(t, "/small.txt"); code != 200 {
			t.Fatalf("established connection %d during the crowd: %d", i, code)
		}
	}
	for c := range crowd {
		c.Close()
	}
	t.Logf("crowd: %d served, %d refused, %d could not connect", served.Load(), refused.Load(), dialFailed.Load())
	if refused.Load() < 100 {
		t.Fatalf("only %d of 1,000 refused with 256 descriptors", refused.Load())
	}
	var ended string
	waitFor(t, func() bool {
		ended = lineWith(p.stderr.String(), "accepting new connections again")
		return ended != ""
	})
	logs := p.stderr.String()
	if n := strings.Count(logs, "refusing new connections"); n != 1 {
		t.Fatalf("%d log lines for one run of refusals, want 1:\n%s", n, logs)
	}
	if dialFailed.Load() == 0 && !strings.Contains(ended, fmt.Sprintf("refused=%d", refused.Load())) {
		t.Errorf("the end of the run reports %q, want refused=%d", ended, refused.Load())
	}
	if code := fetchStatus(t, dial(t, addr), "/small.txt"); code != 200 {
		t.Fatalf("a new client after the crowd left: %d", code)
	}
	p.stop(t)
}

// keptConn is a keep-alive client connection for several requests.
type keptConn struct {
	c  net.Conn
	br *bufio.Reader
}

func keep(t *testing.T, addr string) *keptConn {
	c := dial(t, addr)
	return &keptConn{c: c, br: bufio.NewReader(c)}
}

// get sends one GET and returns its status (0 when the connection ended).
func (k *keptConn) get(t *testing.T, path string) int {
	t.Helper()
	_ = k.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(k.c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		return 0
	}
	resp, err := http.ReadResponse(k.br, nil)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// lineWith returns the first line of logs that contains s, or "".
func lineWith(logs, s string) string {
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}
