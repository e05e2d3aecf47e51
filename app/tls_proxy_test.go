package app

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestTLSProxy proxies requests that arrive over TLS: a small response on
// the loop, a large one that leaves the loop (the copy encrypts through
// the connection's TLS state over a duplicate of the socket) followed by
// a request on the same connection, and a 101 tunnel whose bytes are
// encrypted both ways.
func TestTLSProxy(t *testing.T) {
	t.Parallel()
	big := make([]byte, 8<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	sum := sha256.Sum256(big)
	mux := http.NewServeMux()
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) {
		if p := r.Header.Get("X-Forwarded-Proto"); p != "https" {
			http.Error(w, "X-Forwarded-Proto: "+p, 500)
			return
		}
		_, _ = io.WriteString(w, "small\n")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(big)))
		_, _ = w.Write(big)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.Copy(c, brw)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: mux}
	go func() { _ = up.Serve(ln) }()
	defer up.Close()

	yaml := `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT]}}
server: {max_buffered_output: 64KiB}
routes:
  - path: /
    proxy: {to: ["` + ln.Addr().String() + `"], upgrade: [echo]}
`
	ts := startTLSServer(t, yaml, nil, nil)
	c := ts.dialTLS(ts.clientConfig("localhost"))
	br := bufio.NewReader(c)
	if resp, body := getOver(t, c, br, "/small"); resp.StatusCode != 200 || body != "small\n" {
		t.Fatalf("small: %d %q", resp.StatusCode, body)
	}
	// Read nothing of the large body until the client's output has
	// filled and the copy left the loop.
	if _, err := fmt.Fprintf(c, "GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the copy to leave the loop", func() bool { return ts.srv.ProxyStats().Handoffs >= 1 })
	resp, body := readResponse(t, br, "GET")
	if resp.StatusCode != 200 || len(body) != len(big) || sha256.Sum256([]byte(body)) != sum {
		t.Fatalf("big: %d, %d bytes", resp.StatusCode, len(body))
	}
	if resp, body := getOver(t, c, br, "/small"); resp.StatusCode != 200 || body != "small\n" {
		t.Fatalf("small after big: %d %q", resp.StatusCode, body)
	}
	if n := ts.srv.ProxyStats().Handoffs; n != 1 {
		t.Errorf("%d bodies copied off the loop, want 1", n)
	}

	// A tunnel.
	tc := ts.dialTLS(ts.clientConfig("localhost"))
	if _, err := io.WriteString(tc, "GET /echo HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	tbr := bufio.NewReader(tc)
	resp, err = http.ReadResponse(tbr, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	for i := 0; i < 3; i++ {
		msg := strings.Repeat(fmt.Sprint(i), 1000+i*20000)
		if _, err := io.WriteString(tc, msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(tbr, got); err != nil || string(got) != msg {
			t.Fatalf("echo %d: %v", i, err)
		}
	}
	if n := ts.srv.ProxyStats().Tunnels; n != 1 {
		t.Errorf("%d tunnels, want 1", n)
	}
}
