package app

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// TestHTTP3BodyToH2CUpstream: request bodies of undeclared length that
// take more than the one read app/h3 makes before deciding whether the
// length is known reach an h2c upstream whole. (The h2c exchange takes
// that first buffer while the request is served, before the body's
// reader starts; the reader then read twice in a row and overwrote a
// buffer the loop had not taken: a piece of every such body went
// missing.)
func TestHTTP3BodyToH2CUpstream(t *testing.T) {
	t.Parallel()
	up := h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
	}))
	ts := startTLSServer(t, `listen:
  - {address: "127.0.0.1:0", http3: true, tls: {certificates: [$CERT]}}
routes:
  - path: /
    proxy: {to: ["`+up+`"], protocol: h2c}
`, nil, nil)
	c := h3Client(t, ts)
	for _, size := range []int{1, 32 << 10, 33 << 10, 64 << 10, 1 << 20} {
		body := make([]byte, size)
		for i := range body {
			body[i] = byte(i*7 + i>>10)
		}
		req, _ := http.NewRequest("POST", "https://"+ts.tlsAddr+"/sum", io.NopCloser(bytes.NewReader(body)))
		req.ContentLength = -1 // no content-length
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%d: %v", size, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("%d %x", size, sha256.Sum256(body)); resp.StatusCode != 200 || string(got) != want {
			t.Fatalf("%d bytes: %d %q, want %q", size, resp.StatusCode, got, want)
		}
	}
}
