package main

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func startTestUpstream(t *testing.T) (string, *upstream) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := newUpstream(map[string][]byte{"a.bin": []byte("hello"), "b.bin": []byte(strings.Repeat("x", 20000))})
	go u.serve(ln)
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), u
}

func TestUpstreamKeepAliveAndPipelining(t *testing.T) {
	addr, u := startTestUpstream(t)
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	// Three pipelined requests, the second with a body to skip.
	fmt.Fprintf(c, "GET /a.bin HTTP/1.1\r\nHost: x\r\n\r\nPOST /b.bin HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /a.bin?q=1 HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	for i, want := range []string{"hello", strings.Repeat("x", 20000), "hello"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != want || resp.Close || resp.Header.Get("Date") == "" {
			t.Fatalf("response %d: status %d close %v body %d bytes", i, resp.StatusCode, resp.Close, len(body))
		}
	}
	if s := u.stats(); s.Conns != 1 || s.Requests != 3 || s.CloseRequests != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestUpstreamCached checks that the files under /cached/ say a shared
// cache may store them for an hour, and that the plain paths say nothing.
func TestUpstreamCached(t *testing.T) {
	addr, _ := startTestUpstream(t)
	for path, want := range map[string]string{"/cached/a.bin": "max-age=3600", "/a.bin": ""} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "hello" || resp.Header.Get("Cache-Control") != want {
			t.Errorf("%s: status %d, body %q, Cache-Control %q, want %q", path, resp.StatusCode, body, resp.Header.Get("Cache-Control"), want)
		}
	}
}

func TestUpstreamClose(t *testing.T) {
	tests := []struct {
		name, req  string
		wantStatus int
		wantConn   string
	}{
		{"connection close", "GET /a.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 200, "close"},
		{"http/1.0", "GET /a.bin HTTP/1.0\r\n\r\n", 200, "close"},
		{"http/1.0 keep-alive then EOF", "GET /a.bin HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 200, "keep-alive"},
		{"not found", "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", 404, "close"},
		{"chunked", "POST /a.bin HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 501, "close"},
		{"garbage", "HELLO\r\n\r\n", 400, "close"},
		{"bad length", "GET /a.bin HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "close"},
	}
	addr, _ := startTestUpstream(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(c, tt.req)
			if tt.wantConn == "keep-alive" {
				c.(*net.TCPConn).CloseWrite()
			}
			raw, err := io.ReadAll(c) // the server must close in every case
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(raw))), nil)
			if err != nil {
				t.Fatalf("%v: %q", err, raw)
			}
			gotConn := resp.Header.Get("Connection")
			if resp.Close {
				gotConn = "close" // net/http moves "Connection: close" into Close
			}
			if resp.StatusCode != tt.wantStatus || !strings.EqualFold(gotConn, tt.wantConn) {
				t.Fatalf("status %d Connection %q, want %d %q", resp.StatusCode, gotConn, tt.wantStatus, tt.wantConn)
			}
		})
	}
}

func TestUpstreamStatsEndpoint(t *testing.T) {
	addr, _ := startTestUpstream(t)
	for i := 0; i < 3; i++ {
		resp, err := checkClient.Get("http://" + addr + "/a.bin")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	s, err := fetchUpstreamStats(addr)
	if err != nil {
		t.Fatal(err)
	}
	// checkClient opens a connection per request; stats requests are not counted.
	if s.Conns != 3 || s.Requests != 3 {
		t.Fatalf("stats %+v", s)
	}
}

// Pipelined requests whose header lines cross the reader's buffer refills
// are each answered for their own path: the request line is not read back
// from a buffer the header lines have overwritten.
func TestUpstreamPipelinedAcrossRefills(t *testing.T) {
	addr, _ := startTestUpstream(t)
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	pad := strings.Repeat("p", 3000)
	var reqs strings.Builder
	const n = 40 // about 120 KiB of requests: several refills of a 16 KiB buffer
	for i := range n {
		path := "/a.bin"
		if i%2 == 1 {
			path = "/b.bin"
		}
		fmt.Fprintf(&reqs, "GET %s HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\nX-Pad2: %s\r\n\r\n", path, pad[:1000+i*37], pad)
	}
	go io.WriteString(c, reqs.String())
	br := bufio.NewReader(c)
	for i := range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		want := 5
		if i%2 == 1 {
			want = 20000
		}
		if resp.StatusCode != 200 || len(body) != want {
			t.Fatalf("response %d: status %d, %d bytes, want 200 and %d", i, resp.StatusCode, len(body), want)
		}
	}
}

// TestUpstreamTLSCountsHandshakes serves the upstream over TLS 1.3 and
// counts handshakes: a client that keeps its session tickets makes one
// full handshake, then resumes on each new connection.
func TestUpstreamTLSCountsHandshakes(t *testing.T) {
	cert, err := writeBenchCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := listenTLS("127.0.0.1:0", cert.CertFile, cert.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	u := newUpstream(map[string][]byte{"a.bin": []byte("hello")})
	go u.serve(ln)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true, // a connection per request
		TLSClientConfig:   &tls.Config{RootCAs: cert.pool, ClientSessionCache: tls.NewLRUClientSessionCache(8)},
	}}
	const n = 4
	for i := range n {
		resp, err := c.Get("https://" + ln.Addr().String() + "/a.bin")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "hello" || resp.TLS.Version != tls.VersionTLS13 {
			t.Fatalf("request %d: status %d body %q version %x", i, resp.StatusCode, body, resp.TLS.Version)
		}
	}
	// The last connection's counts are added before its response is
	// written, so they are all in once the client read it.
	if s := u.stats(); s.Conns != n || s.TLSFull != 1 || s.TLSResumed != n-1 {
		t.Fatalf("stats %+v, want %d connections: 1 full handshake, %d resumed", s, n, n-1)
	}
}
