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
)

// aliasSecret is in B's request target and fields.
const aliasSecret = "SECRET"

// aliasPad is a request whose body puts the next request's head 4000
// bytes further into the read buffer.
const aliasPad = "POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 4000\r\n\r\n"

// aliasCase is one bad last request of A: what it sends, the status it is
// answered with, and what its log line names of it (own: a substring of
// its target; "" for nothing).
type aliasCase struct {
	name   string
	req    string
	status int
	own    string
}

func aliasCases() []aliasCase {
	many := strings.Repeat("X-F: 1\r\n", 101)
	return []aliasCase{
		{"bare LF", "GET /own-lf HTTP/1.1\nHost: a\n\n", 400, ""},
		{"bare LF in a field", "GET /own-lf HTTP/1.1\r\nHost: a\nX: y\r\n\r\n", 400, ""},
		{"request line too long", "GET /own-" + strings.Repeat("l", 1100) + " HTTP/1.1\r\nHost: a\r\n\r\n", 414, ""},
		{"head too large", "GET /own-431 HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 2100) + "\r\n\r\n", 431, ""},
		{"too many fields", "GET /own-many HTTP/1.1\r\nHost: a\r\n" + many + "\r\n", 431, ""},
		{"invalid Content-Length", "POST /own-cl HTTP/1.1\r\nHost: a\r\nContent-Length: 1x\r\n\r\n", 400, ""},
		{"obs-fold", "GET /own-fold HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n", 400, ""},
		{"control byte in the target", "GET /own-\x01 HTTP/1.1\r\nHost: a\r\n\r\n", 400, ""},
		// The head is answered before the body is read: the line is
		// the request's own; the bad chunk then closes the connection.
		{"bad chunk", "POST /hello?own=chunk HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n", 200, "/hello?own=chunk"},
		// The proxy reads the body and answers the bad chunk itself.
		{"bad chunk, proxied", "POST /up/own-chunk HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n", 400, "/up/own-chunk"},
		// A head that never ends: 408 from the sweep.
		{"header timeout", "GET /own-slow HTTP/1.1\r\nHost: a\r\n", 408, ""},
	}
}

// aliasConfig is the part of the server config the tests share: one
// loop, small limits (so the bad requests stay short), a short
// read_header timeout, a respond route and a proxy route to upstream.
func aliasConfig(logPath, format, upstream string) string {
	return fmt.Sprintf(`server:
  event_loops: 1
  limits: {request_line: 1KiB, header_bytes: 2KiB}
  timeouts: {read_header: 500ms}
access_log: {path: %q, format: %s}
routes:
  - path: /hello
    respond: {status: 200, body: "hello\n"}
  - path: /up
    proxy: {to: [%q]}
`, logPath, format, upstream)
}

// startAliasUpstream starts an upstream that reads whole requests and
// answers 200.
func startAliasUpstream(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "up\n")
	})}
	go func() { _ = up.Serve(ln) }()
	t.Cleanup(func() { _ = up.Close() })
	return ln.Addr().String()
}

// TestAccessLogNamesNoOtherConnection checks that the access log line
// of a request that failed to parse names nothing of another
// connection's request. gnet's read buffer (and the TLS plaintext
// buffer) is shared by every connection of a loop: a parser that left
// the previous request's slices in place after a framing error made the
// error's log line print whatever another connection had since read into
// the same bytes.
//
// Connection A sends a request whose head sits far into the loop's
// buffer (behind a request with a 4000-byte body), then B sends the same
// shape with a secret where A's request was, then A sends a bad request
// short enough to leave B's bytes there. A's last log line must not
// contain the secret, and must name A's own request or nothing ("-").
// Framing errors found before the head is complete (bare LF, 414, 431,
// too many fields) and the 408 of a head that never ends printed B's
// bytes; the others (errors inside a complete head, a bad chunk after the
// head was answered or proxied) are the rest of the class, answered from
// the request's own bytes or a copy, and checked alike. Both formats,
// plain and TLS.
func TestAccessLogNamesNoOtherConnection(t *testing.T) {
	upstream := startAliasUpstream(t)
	for _, format := range []string{"combined", "json"} {
		t.Run("plain "+format, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "access.log")
			ts := startServer(t, aliasConfig(logPath, format, upstream), nil)
			dial := func() net.Conn { return ts.dial() }
			runAliasCases(t, dial, ts.stop, logPath, format)
		})
		t.Run("tls "+format, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "access.log")
			yaml := "listen:\n  - {address: \"127.0.0.1:0\", tls: {certificates: [$CERT]}}\n" +
				aliasConfig(logPath, format, upstream)
			ts := startTLSServer(t, yaml, nil, nil)
			dial := func() net.Conn { return ts.dialTLS(ts.clientConfig("localhost")) }
			runAliasCases(t, dial, ts.stop, logPath, format)
		})
	}
}

// runAliasCases runs every case over connections from dial, stops the
// server and checks A's last line of each case.
func runAliasCases(t *testing.T, dial func() net.Conn, stop func(), logPath, format string) {
	cases := aliasCases()
	for _, tc := range cases {
		runAliasCase(t, dial, tc)
	}
	stop()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	// Each case logs A's two requests, B's two, then A's last.
	if len(lines) != 5*len(cases) {
		t.Fatalf("%d log lines for %d cases:\n%s", len(lines), len(cases), data)
	}
	for _, line := range lines {
		checkNoControl(t, line)
	}
	for i, tc := range cases {
		if b := lines[5*i+3]; !strings.Contains(b, "token="+aliasSecret) {
			t.Fatalf("%s: B's line is not where expected: %q", tc.name, b)
		}
		checkAliasLine(t, tc, format, lines[5*i+4])
	}
}

// runAliasCase sends A's first requests, then B's, then A's bad one, and
// waits for A's answer and close.
func runAliasCase(t *testing.T, dial func() net.Conn, tc aliasCase) {
	t.Helper()
	pad := aliasPad + strings.Repeat("p", 4000)
	a := dial()
	ar := bufio.NewReader(a)
	if _, err := io.WriteString(a, pad+"GET /own-previous-request-of-a HTTP/1.1\r\nHost: a\r\nUser-Agent: agent-a\tx\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	readResponse(t, ar, "POST")
	readResponse(t, ar, "GET")

	b := dial()
	br := bufio.NewReader(b)
	secret := strings.Repeat(aliasSecret, 8)
	if _, err := io.WriteString(b, pad+"GET /hello?token="+aliasSecret+"0123456789 HTTP/1.1\r\nHost: a\r\n"+
		"Authorization: Bearer "+secret+"\r\nUser-Agent: "+secret+"\r\nReferer: "+secret+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	readResponse(t, br, "POST")
	readResponse(t, br, "GET")
	_ = b.Close()

	if _, err := io.WriteString(a, tc.req); err != nil {
		t.Fatal(err)
	}
	// Read the answer to the end: the connection closes after it.
	got, err := io.ReadAll(ar)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("%s: no close after the answer, read %q", tc.name, got)
	}
	if want := fmt.Sprintf("HTTP/1.1 %d ", tc.status); !strings.HasPrefix(string(got), want) {
		t.Fatalf("%s: answer %.80q, want %q", tc.name, got, want)
	}
	_ = a.Close()
}

// checkAliasLine checks A's last line: nothing of B, its status, and A's
// own target or nothing.
func checkAliasLine(t *testing.T, tc aliasCase, format, line string) {
	t.Helper()
	if strings.Contains(line, aliasSecret) {
		t.Errorf("%s: A's line names B's request: %q", tc.name, line)
	}
	var status, request string
	if format == "json" {
		status = fmt.Sprintf(`"status":%d}`, tc.status)
		request = `"proto":"","method":"","host":"","uri":""`
		if tc.own != "" {
			request = `"uri":"` + tc.own + `"`
		}
	} else {
		status = fmt.Sprintf(`" %d `, tc.status)
		request = `] "-" `
		if tc.own != "" {
			request = " " + tc.own + " HTTP/1.1\" "
		}
	}
	if !strings.Contains(line, status) || !strings.Contains(line, request) {
		t.Errorf("%s: A's line %q, want %s and %s", tc.name, line, status, request)
	}
}

// checkNoControl checks that a log line holds no raw control byte (A's
// first request sends a tab in its User-Agent).
func checkNoControl(t *testing.T, line string) {
	t.Helper()
	for _, c := range []byte(line) {
		if c < 0x20 || c == 0x7f {
			t.Errorf("raw control byte %#x in %q", c, line)
			return
		}
	}
}
