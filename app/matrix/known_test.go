package matrix

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// TestMatrixTLSLargeFirstRequest sends a large request as the first of
// new HTTP/1.1 TLS connections, in the write that completes the
// handshake (as curl -T does).
//
// Known bug: a TLS 1.3 client may send application data as soon as it
// sent its Finished, before the server's handshake goroutine has read
// that Finished; what arrives meanwhile is held as handshake input, and
// past maxHandshakeInput (256 KiB, app/tlsconn/conn.go) the connection is
// failed as a bad record and closed without an answer. Raising the bound,
// or leaving the excess in gnet's buffer, trades against what the bound
// is for (input held while a handshake waits, for instance for a
// certificate being obtained), so the fix is a design decision. The
// matrix sends a small request first on new TLS connections meanwhile
// (rawClient.prelude). GALE_MATRIX_KNOWN=1 runs this test.
func TestMatrixTLSLargeFirstRequest(t *testing.T) {
	if os.Getenv("GALE_MATRIX_KNOWN") == "" {
		t.Skip("known bug: request bytes past 256 KiB that arrive before the server finished the TLS handshake close the connection unanswered (app/tlsconn maxHandshakeInput); GALE_MATRIX_KNOWN=1 runs it")
	}
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
