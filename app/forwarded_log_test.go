package app

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestForwardedBodyBytesLogged: a forwarded response's body bytes are
// counted once in the access log, whichever protocol the client speaks
// (HTTP/1.1 plain and over TLS, h2 over TLS, h2c, HTTP/3) and whichever
// the upstream (HTTP/1.1, h2c): each engine counts what went through its
// sink, and the handler reports only what it sent past it. Forwarded
// responses of the TLS listener advertise HTTP/3 (Alt-Svc) as its local
// ones do, on HTTP/1.1 and HTTP/2.
func TestForwardedBodyBytesLogged(t *testing.T) {
	t.Parallel()
	const size = 1000
	body := strings.Repeat("x", size)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		_, _ = io.WriteString(w, body)
	})
	up, up2 := netUpstream(t, h), h2cUpstream(t, h)
	ts := startTLSServer(t, `listen:
  - {address: "127.0.0.1:0", http3: true, tls: {certificates: [$CERT]}}
  - "127.0.0.1:0"
access_log: {path: access.log, format: combined}
routes:
  - path: /h1/
    proxy: {to: ["`+up+`"]}
  - path: /h2c/
    proxy: {to: ["`+up2+`"], protocol: h2c}
`, nil, nil)
	plain := "http://" + ts.srv.Addrs()[1]
	secure := "https://" + ts.tlsAddr
	h1 := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableCompression: true,
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}}
	h1tls := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableCompression: true,
		TLSClientConfig: ts.clientConfig("localhost"), TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}}
	t.Cleanup(h1tls.CloseIdleConnections)
	t.Cleanup(h1.CloseIdleConnections)
	h2 := h2Clients(t, ts)
	_, port, _ := strings.Cut(ts.tlsAddr, ":")
	altSvc := `h3=":` + port + `"; ma=86400`
	h3 := h3Client(t, ts)
	clients := []struct {
		name  string
		c     *http.Client
		base  string
		proto string
	}{
		{"h1", h1, plain, "HTTP/1.1"},
		{"h1tls", h1tls, secure, "HTTP/1.1"},
		{"h2", h2["tls"].c, secure, "HTTP/2.0"},
		{"h2c", h2["h2c"].c, plain, "HTTP/2.0"},
		{"h3", h3, secure, "HTTP/3.0"},
	}
	var want []string
	for _, cl := range clients {
		for _, route := range []string{"h1", "h2c"} {
			target := "/" + route + "/x?client=" + cl.name
			resp, err := cl.c.Get(cl.base + target)
			if err != nil {
				t.Fatalf("%s %s: %v", cl.name, target, err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || len(b) != size || resp.Proto != cl.proto {
				t.Fatalf("%s %s: %s, %d bytes, %v", cl.name, target, resp.Proto, len(b), err)
			}
			if adv := cl.base == secure && cl.proto != "HTTP/3.0"; (resp.Header.Get("Alt-Svc") == altSvc) != adv {
				t.Errorf("%s %s: Alt-Svc %q, advertised: %v", cl.name, target, resp.Header.Get("Alt-Svc"), adv)
			}
			want = append(want, fmt.Sprintf(`"GET %s %s" 200 %d `, target, cl.proto, size))
		}
	}
	ts.stop()
	data, err := os.ReadFile(filepath.Join(ts.dir, "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(string(data), w) {
			t.Errorf("access log has no %q", w)
		}
	}
	if t.Failed() {
		t.Logf("access log:\n%s", data)
	}
}
