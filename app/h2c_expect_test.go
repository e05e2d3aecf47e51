package app

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// TestH2CUpstreamExpectContinue: an HTTP/1.1 client that sends
// "Expect: 100-continue" to an h2c proxy route gets 100 Continue, sends
// its body, and the upstream reads it whole; twice on one connection.
// (The HTTP/2 transport keeps the upstream's own 100 to itself, so the
// client used to wait for it while the upstream waited for the body,
// until the response header timeout answered 504.)
func TestH2CUpstreamExpectContinue(t *testing.T) {
	t.Parallel()
	up := h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d %s", len(b), b)
	}))
	ts := startServer(t, `listen: ["127.0.0.1:0"]
routes:
  - path: /
    proxy: {to: ["`+up+`"], protocol: h2c, timeouts: {response_header: 5s}}
`, nil)
	c := ts.dial()
	br := bufio.NewReader(c)
	for _, body := range []string{"abc", "defgh"} {
		fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", len(body))
		if resp, _ := readResponse(t, br, "POST"); resp.StatusCode != 100 {
			t.Fatalf("%q: %d before the body, want 100", body, resp.StatusCode)
		}
		io.WriteString(c, body)
		resp, got := readResponse(t, br, "POST")
		if want := fmt.Sprintf("%d %s", len(body), body); resp.StatusCode != 200 || got != want {
			t.Fatalf("%q: %d %q, want 200 %q", body, resp.StatusCode, got, want)
		}
	}
}
