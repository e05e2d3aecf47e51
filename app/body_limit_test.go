package app

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// bodyLimitSite serves a local route and a proxy route under a small
// limits.body_bytes, on a TLS listener that speaks HTTP/1.1, h2 and
// HTTP/3 and a plain one that speaks HTTP/1.1 and h2c.
const bodyLimitSite = `listen:
  - {address: "127.0.0.1:0", http3: true, tls: {certificates: [$CERT]}}
  - "127.0.0.1:0"
server: {limits: {body_bytes: 1000}}
routes:
  - path: /up/
    proxy: {to: ["$UP"]}
  - path: /
    respond: {status: 200, body: "ok\n"}
`

// TestBodyLimitEveryProtocol: on every protocol, a request body of
// exactly limits.body_bytes is served, to a local route and through a
// proxy route (whose upstream gets it whole), and one byte more is
// refused with 413, whether its length is declared or not. The limit is
// enforced where each protocol frames bodies: the codec for HTTP/1.1, the
// h2 core, the HTTP/3 adapter.
func TestBodyLimitEveryProtocol(t *testing.T) {
	up := netUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n)
	}))
	ts := startTLSServer(t, strings.ReplaceAll(bodyLimitSite, "$UP", up), nil, nil)
	clients := map[string]struct {
		c    *http.Client
		base string
	}{
		"h1":     {limitClient(t, &http.Transport{}), "http://" + ts.srv.Addrs()[1]},
		"h1 tls": {limitClient(t, tlsTransport(ts, false)), "https://" + ts.tlsAddr},
		"h2 tls": {limitClient(t, tlsTransport(ts, true)), "https://" + ts.tlsAddr},
		"h2c":    {h2cClient(t), "http://" + ts.srv.Addrs()[1]},
		"h3":     {h3Client(t, ts), "https://" + ts.tlsAddr},
	}
	for name, cl := range clients {
		for _, path := range []string{"/local", "/up/x"} {
			for _, declared := range []bool{true, false} {
				for _, size := range []int{1000, 1001} {
					want, wantBody := 413, ""
					if size == 1000 || path == "/local" && !declared && strings.HasPrefix(name, "h1") {
						// An HTTP/1.1 local route answers before a chunked
						// body is read; the body is dropped after, and one
						// over the limit closes the connection then
						// (TestBodyLimitChunkedAfterAnswer).
						want, wantBody = 200, "ok\n"
					}
					if size == 1000 {
						want, wantBody = 200, "ok\n"
						if path == "/up/x" {
							wantBody = "1000"
						}
					}
					var body io.Reader = bytes.NewReader(bytes.Repeat([]byte("b"), size))
					if !declared {
						body = io.MultiReader(body) // hides the length: chunked on HTTP/1.1, none on h2 and h3
					}
					resp, err := cl.c.Post(cl.base+path, "application/octet-stream", body)
					if err != nil {
						t.Errorf("%s %s declared %v, %d bytes: %v", name, path, declared, size, err)
						continue
					}
					got, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					cl.c.CloseIdleConnections() // one connection per request
					if resp.StatusCode != want || want == 200 && string(got) != wantBody {
						t.Errorf("%s %s declared %v, %d bytes: %d %q, want %d %q", name, path, declared, size, resp.StatusCode, got, want, wantBody)
					}
				}
			}
		}
	}
}

// tlsTransport speaks HTTP/2 (h2) or HTTP/1.1 only to ts's TLS listener.
func tlsTransport(ts *tlsTestServer, h2 bool) *http.Transport {
	tr := &http.Transport{TLSClientConfig: ts.clientConfig("localhost"), DisableCompression: true}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetHTTP1(!h2)
	tr.Protocols.SetHTTP2(h2)
	return tr
}

// limitClient wraps tr, closing its connections when the test ends.
func limitClient(t *testing.T, tr *http.Transport) *http.Client {
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// TestBodyLimitChunkedAfterAnswer: over HTTP/1.1, a local route answers
// before it reads a chunked body; the body is read and dropped after the
// answer, and one byte over limits.body_bytes closes the connection
// (the codec refuses it while framing).
func TestBodyLimitChunkedAfterAnswer(t *testing.T) {
	ts := startTLSServer(t, strings.ReplaceAll(bodyLimitSite, "$UP", "127.0.0.1:9"), nil, nil)
	for _, size := range []int{1000, 1001} {
		c, err := net.DialTimeout("tcp", ts.srv.Addrs()[1], 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		req := fmt.Sprintf("POST /local HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", size, bytes.Repeat([]byte("b"), size))
		req += "GET /local HTTP/1.1\r\nHost: a\r\n\r\n"
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		if resp, body := readResponse(t, br, "POST"); resp.StatusCode != 200 || body != "ok\n" {
			t.Fatalf("%d bytes: %d %q", size, resp.StatusCode, body)
		}
		if size == 1000 {
			if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || body != "ok\n" {
				t.Fatalf("the request after %d bytes: %d %q", size, resp.StatusCode, body)
			}
		} else {
			expectClosed(t, br)
		}
		c.Close()
	}
}
