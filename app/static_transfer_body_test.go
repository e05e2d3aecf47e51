package app

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// TestStaticTransferWhileBodyArrives: a large file asked for with a large
// request body (which the static route discards) is sent whole while the
// body keeps arriving, and the connection serves the next request, over
// plain TCP and TLS, with the body framed by length and chunked. (The
// loop reads nothing while a transfer is under way, and closed the
// connection, cutting the file short, once more than a megabyte of the
// body waited.)
func TestStaticTransferWhileBodyArrives(t *testing.T) {
	t.Parallel()
	ts := startTLSServer(t, `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT]}}
  - "127.0.0.1:0"
server: {max_buffered_output: 256KiB}
cache: {max_file_bytes: 64KiB}
routes:
  - path: /
    static: {root: ./site}
`, nil, nil)
	big := pseudoRandom(6<<20, 5)
	writeSettled(t, filepath.Join(ts.dir, "site", "big.bin"), big)
	body := pseudoRandom(5<<20, 6)
	for _, secure := range []bool{false, true} {
		for _, chunked := range []bool{false, true} {
			name := fmt.Sprintf("tls=%v chunked=%v", secure, chunked)
			c, err := net.DialTimeout("tcp", ts.srv.Addrs()[map[bool]int{true: 0, false: 1}[secure]], 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if secure {
				c = tls.Client(c, &tls.Config{RootCAs: ts.ca.pool, ServerName: "localhost", NextProtos: []string{"http/1.1"}})
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(c)
			// A first request, answered, so that the TLS handshake is over
			// on both sides before the large one comes.
			fmt.Fprintf(c, "HEAD /big.bin HTTP/1.1\r\nHost: a\r\n\r\n")
			if resp, _ := readResponse(t, br, "HEAD"); resp.StatusCode != 200 {
				t.Fatalf("%s: HEAD: %d", name, resp.StatusCode)
			}
			framing, wire := fmt.Sprintf("Content-Length: %d", len(body)), body
			if chunked {
				framing = "Transfer-Encoding: chunked"
				wire = append(fmt.Appendf(nil, "%x\r\n", len(body)), body...)
				wire = append(wire, "\r\n0\r\n\r\n"...)
			}
			req := append([]byte("GET /big.bin HTTP/1.1\r\nHost: a\r\n"+framing+"\r\n\r\n"), wire...)
			written := make(chan error, 1)
			go func() { _, err := c.Write(req); written <- err }()
			resp, got := readResponse(t, br, "GET")
			if resp.StatusCode != 200 || resp.Close || !bytes.Equal([]byte(got), big) {
				t.Fatalf("%s: %d close=%v, %d bytes, whole %v", name, resp.StatusCode, resp.Close, len(got), bytes.Equal([]byte(got), big))
			}
			if err := <-written; err != nil {
				t.Fatalf("%s: writing the body: %v", name, err)
			}
			fmt.Fprintf(c, "GET /big.bin HTTP/1.1\r\nHost: a\r\n\r\n")
			if resp, got := readResponse(t, br, "GET"); resp.StatusCode != 200 || !bytes.Equal([]byte(got), big) {
				t.Fatalf("%s: next request: %d, %d bytes", name, resp.StatusCode, len(got))
			}
		}
	}
}
