package matrix

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestMatrixTLSLargeFirstRequest sends a large request as the first of
// new HTTP/1.1 TLS connections, in the write that completes the
// handshake (as curl -T does): a TLS 1.3 client sends it right after its
// Finished, before the server's handshake goroutine has read that
// Finished, and what passes the handshake's input bound (256 KiB) must
// wait for the request path, not close the connection unanswered
// (app/tlsconn feedHandshake).
func TestMatrixTLSLargeFirstRequest(t *testing.T) {
	s := startSite(t, "")
	body := make([]byte, 4<<20)
	want := digest(body)
	for i := range 5 {
		raw, err := net.DialTimeout("tcp", s.tls, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c := tls.Client(raw, s.tlsConfig("http/1.1"))
		_ = c.SetDeadline(time.Now().Add(requestTimeout))
		req := fmt.Appendf(nil, "POST /plain/up1/echo HTTP/1.1\r\nHost: matrix.test\r\nContent-Length: %d\r\n\r\n", len(body))
		go func() { _, _ = c.Write(append(req, body...)) }()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Errorf("connection %d: %v", i, err)
		} else if got := resp.Header.Get("X-Got"); resp.StatusCode != 200 || got != want {
			t.Errorf("connection %d: %d %q", i, resp.StatusCode, got)
		}
		_ = c.Close()
	}
}
