package app

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// awaitLogLines waits (at most 10 s) until the access log at path holds
// n lines, and returns them.
func awaitLogLines(t *testing.T, path string, n int) []string {
	t.Helper()
	var data []byte
	var lines []string
	if !waitUntil(10*time.Second, func() bool {
		data, _ = os.ReadFile(path)
		lines = strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		return len(data) > 0 && len(lines) >= n
	}) {
		t.Fatalf("the access log holds %d lines, want %d:\n%s", strings.Count(string(data), "\n"), n, data)
	}
	return lines
}

// TestClientAddrOneForm: a client named as an IPv4-mapped IPv6 address (a
// PROXY v2 header over TCP6 here; a dual-stack listener reports IPv4
// clients so too) is one IPv4 address everywhere: to the access rules, in
// the forwarded fields and in the access log, in both formats.
func TestClientAddrOneForm(t *testing.T) {
	up := netUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "xff=%s", r.Header.Get("X-Forwarded-For"))
	}))
	for _, format := range []string{"json", "combined"} {
		logPath := filepath.Join(t.TempDir(), "access.log")
		ts := startServer(t, fmt.Sprintf(`listen: [{address: "127.0.0.1:0", proxy_protocol: true}]
access_log: {path: %q, format: %s}
routes:
  - path: /denied/
    access: [{deny: [6.6.6.6/32]}]
    respond: {status: 200, body: "open\n"}
  - path: /
    proxy: {to: [%q]}
`, logPath, format, up), nil)
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(proxyV2Header(netip.MustParseAddrPort("[::ffff:6.6.6.6]:4000"))); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		ask := func(path string) (int, string) {
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(body)
		}
		if st, _ := ask("/denied/x"); st != 403 {
			t.Errorf("%s: the deny rule for 6.6.6.6 answered %d", format, st)
		}
		if st, body := ask("/fwd"); st != 200 || body != "xff=6.6.6.6" {
			t.Errorf("%s: forwarded %d %q, want xff=6.6.6.6", format, st, body)
		}
		c.Close()
		for _, line := range awaitLogLines(t, logPath, 2) {
			if strings.Contains(line, "::ffff:") || !strings.Contains(line, "6.6.6.6") {
				t.Errorf("%s: the access log names the client otherwise than 6.6.6.6: %s", format, line)
			}
		}
		ts.stop()
	}
}

// TestH2RefusedRequestsLogged: HTTP/2 requests the protocol core refuses
// as malformed (reset with PROTOCOL_ERROR, never served) leave an access
// log line each, as HTTP/1.1's unparsable requests do ("-" 400), and
// count as parse errors.
func TestH2RefusedRequestsLogged(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "access.log")
	ts := startServer(t, fmt.Sprintf(`access_log: {path: %q}
routes:
  - path: /
    respond: {status: 200, body: "hi\n"}
`, logPath), nil)
	before := ts.srv.Stats().ParseErrors
	hc := dialH2C(t, ts.addr, 65535, 0)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	malformed := [][][2]string{
		{{":method", "GET"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/"}, {"Upper", "1"}},          // uppercase name
		{{":method", "GET"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/"}, {"connection", "close"}}, // connection-specific
		{{":method", "GET"}, {":scheme", "http"}, {":authority", "x"}},                                          // no :path
	}
	for i, fields := range malformed {
		hb.Reset()
		for _, f := range fields {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	hc.id = uint32(2*len(malformed) + 1)
	hc.get("/ok")
	lines := awaitLogLines(t, logPath, len(malformed)+1)
	refused := 0
	for _, line := range lines {
		if strings.Contains(line, `"-" 400 `) {
			refused++
		}
	}
	if refused != len(malformed) {
		t.Errorf("%d lines of refused requests, want %d:\n%s", refused, len(malformed), strings.Join(lines, "\n"))
	}
	if n := ts.srv.Stats().ParseErrors - before; n != uint64(len(malformed)) {
		t.Errorf("%d parse errors counted, want %d", n, len(malformed))
	}
}
