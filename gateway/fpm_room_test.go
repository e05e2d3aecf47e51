package gateway_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFPMRelayGoesOnWhenRoomReturns streams a response from PHP in pieces
// through a small output bound and small read buffers, so that the relay
// keeps stopping for want of the client's room with records left behind.
// (Records left when the flush that ended the run made room again waited
// for an event that never came: PHP had sent its last, and the response
// stalled without its end, or in the middle.)
func TestFPMRelayGoesOnWhenRoomReturns(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "www"), map[string]string{
		"stream.php": `<?php $b = file_get_contents('php://input'); header('X-Got: ' . strlen($b));
foreach (str_split(str_repeat('x', 16384 * (int)$_GET['n']), 16384) as $p) { echo $p; flush(); }`,
	})
	f := startFPM(t, dir, "a", false, 1)
	g := startGale(t, dir, `
server: {event_loops: 1, max_buffered_output: 16KiB, read_buffer: 16KiB, socket_send_buffer: 16KiB}
routes:
  - path: /
    fastcgi: {to: "`+f.listen+`", root: www}
`, nil)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	for _, n := range []int{1, 4, 1, 4, 2, 4, 3, 64} {
		resp, err := c.Post(g.url("/stream.php?n="+strconv.Itoa(n)), "text/plain", strings.NewReader("body"))
		if err != nil {
			t.Fatalf("%d pieces: %v", n, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || len(body) != n*16384 {
			t.Fatalf("%d pieces: %d of %d bytes, err %v", n, len(body), n*16384, err)
		}
	}
}
