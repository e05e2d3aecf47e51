package app

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTrustedProxiesClient: behind server.trusted_proxies the client is
// the rightmost X-Forwarded-For address that is not trusted, for access
// rules, the forwarded fields and the access log, request by request on
// one connection; from an untrusted peer the field changes nothing.
func TestTrustedProxiesClient(t *testing.T) {
	t.Parallel()
	up := netUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "xff=%s real=%s", r.Header.Get("X-Forwarded-For"), r.Header.Get("X-Real-IP"))
	}))
	dir := t.TempDir()
	logFile := filepath.Join(dir, "access.log")
	ts := startServer(t, `listen: ["127.0.0.1:0"]
server: {trusted_proxies: [127.0.0.1/32, 10.0.0.0/8]}
access_log: {path: `+logFile+`}
routes:
  - path: /only/
    access: [{allow: [203.0.113.0/24]}]
    respond: {status: 200, body: "allowed\n"}
  - path: /
    proxy: {to: ["`+up+`"]}
`, nil)
	dial := func(local string) (net.Conn, *bufio.Reader) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 2 * time.Second}
		c, err := d.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		return c, bufio.NewReader(c)
	}
	ask := func(c net.Conn, br *bufio.Reader, path, xff string) (int, string) {
		t.Helper()
		field := ""
		if xff != "" {
			field = "X-Forwarded-For: " + xff + "\r\n"
		}
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n", path, field); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	c, br := dial("127.0.0.1") // a trusted proxy
	for _, tc := range []struct {
		path, xff string
		status    int
		body      string
	}{
		{"/only/", "203.0.113.7, 10.1.2.3", 200, "allowed\n"},
		{"/only/", "", 403, ""}, // the next request on the connection: no field, the peer
		{"/p", "203.0.113.7, 10.1.2.3", 200, "xff=203.0.113.7, 10.1.2.3, 127.0.0.1 real=203.0.113.7"},
		{"/p", "bogus, 203.0.113.9", 200, "xff=bogus, 203.0.113.9, 127.0.0.1 real=203.0.113.9"},
		{"/p", "bogus", 200, "xff=bogus, 127.0.0.1 real=127.0.0.1"},
		{"/p", "10.9.9.9", 200, "xff=10.9.9.9, 127.0.0.1 real=10.9.9.9"}, // every one trusted: the leftmost
	} {
		st, body := ask(c, br, tc.path, tc.xff)
		if st != tc.status || tc.body != "" && body != tc.body {
			t.Errorf("trusted peer, %s with %q: %d %q, want %d %q", tc.path, tc.xff, st, body, tc.status, tc.body)
		}
	}
	c2, br2 := dial("127.0.0.2") // not trusted
	if st, _ := ask(c2, br2, "/only/", "203.0.113.7"); st != 403 {
		t.Errorf("untrusted peer naming an allowed client: %d, want 403", st)
	}
	if _, body := ask(c2, br2, "/p", "203.0.113.7"); body != "xff=127.0.0.2 real=127.0.0.2" {
		t.Errorf("untrusted peer: %q", body)
	}
	// HTTP/2 streams too.
	req, _ := http.NewRequest("GET", ts.url("/only/"), nil)
	req.Header.Set("X-Forwarded-For", "203.0.113.8")
	resp, err := h2cClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 {
		t.Errorf("h2c: %s %d", resp.Proto, resp.StatusCode)
	}
	// The access log names the client, not the proxy.
	eventually(t, 5*time.Second, "the access log lines", func() bool {
		b, _ := os.ReadFile(logFile)
		return strings.Count(string(b), "\n") >= 9
	})
	// Each loop writes its own lines in order; the other connections' (the
	// untrusted peer's, the HTTP/2 one's) may come first.
	b, _ := os.ReadFile(logFile)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.HasPrefix(l, "127.0.0.2 ") && !strings.Contains(l, "HTTP/2.0") {
			lines = append(lines, l)
		}
	}
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "203.0.113.7 ") || !strings.HasPrefix(lines[1], "127.0.0.1 ") {
		t.Errorf("access log of the trusted peer's connection: %q", lines)
	}
}
