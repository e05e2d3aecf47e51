package app

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestH2CUpstreamSlowHTTP1Client: an HTTP/1.1 client that falls behind
// while a large response comes from an h2c upstream gets all of it once
// it reads again. (A body buffer that arrived while the client's output
// was full waited for a resume, and an HTTP/1.1 client that only reads
// sends nothing to cause one: the response stalled for good.)
func TestH2CUpstreamSlowHTTP1Client(t *testing.T) {
	if testing.Short() {
		t.Skip("a large response to a slow client: not in -short")
	}
	t.Parallel()
	big := pseudoRandom(1<<20, 9)
	up := h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(big)))
		_, _ = w.Write(big)
	}))
	ts := startServer(t, `listen: ["127.0.0.1:0"]
server: {socket_send_buffer: 16KiB}
routes:
  - path: /
    proxy: {to: ["`+up+`"], protocol: h2c}
`, nil)
	c := ts.dial()
	_ = c.(*net.TCPConn).SetReadBuffer(16 << 10) // so that the kernel holds little of what the client does not read
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReaderSize(c, 1024)
	for i := 0; i < 2; i++ {
		io.WriteString(c, "GET /big HTTP/1.1\r\nHost: a\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The client stops reading until the output filled up (gale's
		// output stops moving) and the upstream's next buffer waits.
		outputSettled(t, ts.srv)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(got, big) {
			t.Fatalf("response %d: %d of %d bytes, err %v", i, len(got), len(big), err)
		}
	}
}
