package proxy_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gale/config"
)

// tlsUpstream is a net/http server over TLS that requires a client
// certificate of the pki's client CA, echoes request bodies, and says
// whether its TLS session was resumed.
type tlsUpstream struct {
	*httptest.Server
	conns   atomic.Int64
	resumed atomic.Int64 // requests on a resumed session
}

func newTLSUpstream(t *testing.T, p *pki, cert *leaf) *tlsUpstream {
	t.Helper()
	u := &tlsUpstream{}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS.DidResume {
			u.resumed.Add(1)
		}
		w.Header().Set("X-Resumed", fmt.Sprint(r.TLS.DidResume))
		w.Header().Set("X-Client", r.TLS.PeerCertificates[0].Subject.CommonName)
		w.Header().Set("X-SNI", r.TLS.ServerName)
		w.Header().Set("X-Proto", r.Proto)
		body, _ := io.ReadAll(r.Body)
		if r.URL.Query().Get("chunked") != "" {
			w.(http.Flusher).Flush() // no Content-Length: chunked
		}
		_, _ = w.Write(body)
	}))
	u.TLS = &tls.Config{
		Certificates: []tls.Certificate{cert.pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p.clientCA.pool,
	}
	u.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.conns.Add(1)
		}
	}
	u.EnableHTTP2 = true // offered by ALPN: protocol h2 routes choose it, http1 ones do not
	u.StartTLS()
	t.Cleanup(u.Close)
	return u
}

func (u *tlsUpstream) hostport() string { return strings.TrimPrefix(u.URL, "https://") }

// tlsRoute is a proxy route to u with the pki's files, with extra keys
// in its tls section.
func tlsRoute(p *pki, u *tlsUpstream, extra string, maxIdle int) string {
	return fmt.Sprintf(`routes:
  - path: /
    proxy:
      to: https://%s
      max_idle_per_upstream: %d
      retries: 0
      tls: {server_name: app.test, ca: %s, certificate: %s, key: %s%s}
`, u.hostport(), maxIdle, p.serverCA.file, p.client.certFile, p.client.keyFile, extra)
}

// TestTLSUpstreamBodies sends bodies of many sizes both ways, with a
// Content-Length and chunked, through one kept-alive TLS connection to
// the upstream, and compares the bytes.
func TestTLSUpstreamBodies(t *testing.T) {
	p := newPKI(t)
	u := newTLSUpstream(t, p, p.server)
	g := startGale(t, tlsRoute(p, u, "", 8))
	c := newClient()
	for _, size := range []int{1, 100, 16<<10 - 1, 16 << 10, 16<<10 + 1, 100 << 10, 1 << 20} {
		for _, chunked := range []bool{false, true} {
			body := make([]byte, size)
			_, _ = rand.Read(body)
			var rd io.Reader = bytes.NewReader(body)
			path := "/echo"
			if chunked {
				rd = io.MultiReader(rd) // no length: the client sends it chunked
				path += "?chunked=1"
			}
			req, _ := http.NewRequest("POST", g.url(path), rd)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("size %d chunked %v: %v", size, chunked, err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || !bytes.Equal(got, body) {
				t.Fatalf("size %d chunked %v: status %d, %d bytes back (err %v), equal %v\n%s", size, chunked, resp.StatusCode, len(got), err, bytes.Equal(got, body), g.logs.String())
			}
			if resp.Header.Get("X-Client") != "gale.client" || resp.Header.Get("X-SNI") != "app.test" {
				t.Fatalf("client %q SNI %q", resp.Header.Get("X-Client"), resp.Header.Get("X-SNI"))
			}
		}
	}
	if n := u.conns.Load(); n != 1 {
		t.Errorf("%d connections to the upstream, want 1 reused", n)
	}
}

// TestTLSUpstreamResumption: a new connection to the upstream resumes
// the session of the one before (no idle connection is kept, so each
// request dials).
func TestTLSUpstreamResumption(t *testing.T) {
	p := newPKI(t)
	u := newTLSUpstream(t, p, p.server)
	g := startGale(t, tlsRoute(p, u, "", 0))
	c := newClient()
	for i := 0; i < 4; i++ {
		if code, _ := g.get(c, "/"); code != 200 {
			t.Fatalf("request %d: %d\n%s", i, code, g.logs.String())
		}
	}
	if n := u.conns.Load(); n != 4 {
		t.Errorf("%d connections, want one per request", n)
	}
	if n := u.resumed.Load(); n < 2 {
		t.Errorf("%d of 4 connections resumed a session, want at least 2", n)
	}
}

// TestTLSUpstreamChurnResumes counts handshakes under connection churn:
// with no idle connection kept, each of 20 requests dials the upstream
// anew, and every new connection after the first resumes a session (a
// ticket from the connection before) instead of a full handshake.
func TestTLSUpstreamChurnResumes(t *testing.T) {
	const n = 20
	p := newPKI(t)
	u := newTLSUpstream(t, p, p.server)
	g := startGale(t, tlsRoute(p, u, "", 0))
	c := newClient()
	for i := range n {
		if code, _ := g.get(c, "/"); code != 200 {
			t.Fatalf("request %d: %d\n%s", i, code, g.logs.String())
		}
	}
	conns, resumed := u.conns.Load(), u.resumed.Load()
	t.Logf("%d requests: %d connections, %d full handshakes, %d resumed", n, conns, conns-resumed, resumed)
	if conns != n {
		t.Errorf("%d connections, want one per request", conns)
	}
	if resumed < n-1 {
		t.Errorf("%d of %d connections resumed a session, want all but the first", resumed, conns)
	}
}

// TestTLSUpstreamVerifyFails: an upstream whose certificate does not
// verify gets no request; the client gets 502 and the log one line naming
// the upstream and why.
func TestTLSUpstreamVerifyFails(t *testing.T) {
	p := newPKI(t)
	good := newTLSUpstream(t, p, p.server)
	expired := newTLSUpstream(t, p, p.expired)
	cases := []struct {
		name string
		u    *tlsUpstream
		tls  string // replaces the route's tls section
		why  string
	}{
		{"wrong CA", good, fmt.Sprintf("{server_name: app.test, ca: %s, certificate: %s, key: %s}", p.otherCA.file, p.client.certFile, p.client.keyFile), "certificate signed by unknown authority"},
		{"expired", expired, fmt.Sprintf("{server_name: app.test, ca: %s, certificate: %s, key: %s}", p.serverCA.file, p.client.certFile, p.client.keyFile), "expired"},
		{"name mismatch", good, fmt.Sprintf("{server_name: other.test, ca: %s, certificate: %s, key: %s}", p.serverCA.file, p.client.certFile, p.client.keyFile), "not other.test"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := startGale(t, fmt.Sprintf("routes:\n  - path: /\n    proxy: {to: \"https://%s\", retries: 0, tls: %s}\n", tc.u.hostport(), tc.tls))
			if code, _ := g.get(newClient(), "/"); code != 502 {
				t.Fatalf("status %d, want 502", code)
			}
			eventually(t, 3*time.Second, "the failure logged", func() bool {
				return strings.Contains(g.logs.String(), "upstream failed")
			})
			var line string
			for _, l := range strings.Split(g.logs.String(), "\n") {
				if strings.Contains(l, "upstream failed") {
					line = l
				}
			}
			if !strings.Contains(line, "https://"+tc.u.hostport()) || !strings.Contains(line, tc.why) || !strings.Contains(line, "tls handshake") {
				t.Errorf("log line %q does not name the upstream and %q", line, tc.why)
			}
		})
	}
}

// TestTLSUpstreamNeedsClientCert: without the client certificate, the
// upstream refuses the handshake; the client gets 502.
func TestTLSUpstreamNeedsClientCert(t *testing.T) {
	p := newPKI(t)
	u := newTLSUpstream(t, p, p.server)
	for _, tlsSec := range []string{
		fmt.Sprintf("{server_name: app.test, ca: %s}", p.serverCA.file),
		fmt.Sprintf("{server_name: app.test, ca: %s, certificate: %s, key: %s}", p.serverCA.file, p.strangeClient.certFile, p.strangeClient.keyFile),
	} {
		g := startGale(t, fmt.Sprintf("routes:\n  - path: /\n    proxy: {to: \"https://%s\", retries: 0, max_idle_per_upstream: 0, tls: %s}\n", u.hostport(), tlsSec))
		if code, _ := g.get(newClient(), "/"); code != 502 {
			t.Fatalf("%s: status %d, want 502", tlsSec, code)
		}
	}
}

// TestTLSUpstreamPlainPoolApart: a plain and a TLS route to one address
// keep their connections apart (the plain one fails against a TLS
// server, the TLS one is unaffected).
func TestTLSUpstreamPlainPoolApart(t *testing.T) {
	p := newPKI(t)
	u := newTLSUpstream(t, p, p.server)
	g := startGale(t, fmt.Sprintf(`routes:
  - path: /plain/
    proxy: {to: "%s", retries: 0}
  - path: /tls/
    proxy: {to: "https://%s", tls: {server_name: app.test, ca: %s, certificate: %s, key: %s}}
`, u.hostport(), u.hostport(), p.serverCA.file, p.client.certFile, p.client.keyFile))
	c := newClient()
	for i := 0; i < 3; i++ {
		if code, _ := g.get(c, "/tls/x"); code != 200 {
			t.Fatalf("tls: %d\n%s", code, g.logs.String())
		}
		if code, _ := g.get(c, "/plain/x"); code == 200 {
			t.Fatal("a plain request went through a TLS connection")
		}
	}
}

// TestTLSUpstreamWebSocket: a WebSocket through a TLS upstream (wss
// towards it): the tunnel carries the TLS session off the loop, with the
// bytes that came with the 101.
func TestTLSUpstreamWebSocket(t *testing.T) {
	p := newPKI(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{p.server.pair}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); wsEcho(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	g := startGale(t, fmt.Sprintf("routes:\n  - path: /\n    proxy: {to: \"https://%s\", tls: {server_name: app.test, ca: %s}}\n", ln.Addr(), p.serverCA.file))
	rc := g.dial()
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	rc.send("GET /chat HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n")
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 || resp.Header.Get("Sec-WebSocket-Accept") != wsAccept(key) {
		t.Fatalf("handshake: %d %v\n%s", resp.StatusCode, resp.Header, g.logs.String())
	}
	if op, msg, err := readFrame(rc.br); err != nil || op != 1 || string(msg) != "welcome" {
		t.Fatalf("greeting: %d %q %v", op, msg, err)
	}
	big := bytes.Repeat([]byte("0123456789"), 100_000)
	for _, msg := range [][]byte{[]byte("hello"), big, []byte("bye")} {
		if err := writeFrame(rc.c, 2, msg, true); err != nil {
			t.Fatal(err)
		}
		op, got, err := readFrame(rc.br)
		if err != nil || op != 2 || !bytes.Equal(got, msg) {
			t.Fatalf("echo of %d bytes: op %d, %d bytes, %v", len(msg), op, len(got), err)
		}
	}
	if err := writeFrame(rc.c, 8, []byte{3, 232}, true); err != nil {
		t.Fatal(err)
	}
	if op, _, err := readFrame(rc.br); err != nil || op != 8 {
		t.Fatalf("close: op %d %v", op, err)
	}
}

// TestTLSUpstreamHandoff: a large response from a TLS upstream to a
// client that falls behind leaves the loop (the session goes on over a
// duplicate of the socket), and arrives whole, with each framing.
func TestTLSUpstreamHandoff(t *testing.T) {
	const size = 8 << 20
	p := newPKI(t)
	cfg := &tls.Config{Certificates: []tls.Certificate{p.server.pair}}
	for _, framing := range []string{"length", "chunked"} {
		t.Run(framing, func(t *testing.T) {
			up := newRawUpstream(t, func(c net.Conn) {
				tc := tls.Server(c, cfg)
				defer tc.Close()
				br := bufio.NewReader(tc)
				for readHead(br) != "" {
					if framing == "length" {
						fmt.Fprintf(tc, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size)
					} else {
						io.WriteString(tc, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
					}
					buf := make([]byte, 64<<10)
					for off := int64(0); off < size; off += int64(len(buf)) {
						pattern(buf, off)
						var err error
						if framing == "chunked" {
							_, err = fmt.Fprintf(tc, "%x\r\n%s\r\n", len(buf), buf)
						} else {
							_, err = tc.Write(buf)
						}
						if err != nil {
							return
						}
					}
					if framing == "chunked" {
						io.WriteString(tc, "0\r\n\r\n")
					}
				}
			})
			g := startGale(t, fmt.Sprintf("routes:\n  - path: /\n    proxy: {to: \"https://%s\", tls: {server_name: app.test, ca: %s}}\n", up.addr(), p.serverCA.file))
			conn, err := net.Dial("tcp", g.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.(*net.TCPConn).SetReadBuffer(64 << 10)
			br := bufio.NewReaderSize(conn, 64<<10)
			for round := 0; round < 2; round++ {
				fmt.Fprintf(conn, "GET /%d HTTP/1.1\r\nHost: a\r\n\r\n", round)
				eventually(t, 10*time.Second, "the handoff", func() bool { return g.srv.ProxyStats().Handoffs > uint64(round) })
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				if err != nil || len(body) != size {
					t.Fatalf("round %d: %d bytes, %v\n%s", round, len(body), err, g.logs.String())
				}
				if bad := checkPattern(body, 0); bad >= 0 {
					t.Fatalf("round %d: wrong byte at %d", round, bad)
				}
			}
		})
	}
}

// TestH2UpstreamOverTLS: protocol: h2 speaks HTTP/2 to a net/http server
// over TLS, resuming sessions; a wrong CA is 502 with a log line, and an
// upstream that does not choose h2 by ALPN (nginx's http/1.1-only
// server here: net/http with HTTP/2 off) is refused the same way.
func TestH2UpstreamOverTLS(t *testing.T) {
	p := newPKI(t)
	u := newTLSUpstream(t, p, p.server)
	route := func(ca string, target *tlsUpstream) string {
		return fmt.Sprintf("routes:\n  - path: /\n    proxy: {to: \"https://%s\", protocol: h2, retries: 0, tls: {server_name: app.test, ca: %s, certificate: %s, key: %s}}\n",
			target.hostport(), ca, p.client.certFile, p.client.keyFile)
	}
	g := startGale(t, route(p.serverCA.file, u))
	c := newClient()
	for i := 0; i < 3; i++ {
		req, _ := http.NewRequest("POST", g.url("/echo"), strings.NewReader("over h2"))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "over h2" || resp.Header.Get("X-Client") != "gale.client" {
			t.Fatalf("status %d body %q\n%s", resp.StatusCode, body, g.logs.String())
		}
	}

	bad := startGale(t, route(p.otherCA.file, u))
	if code, _ := bad.get(newClient(), "/"); code != 502 {
		t.Fatalf("wrong CA: status %d, want 502", code)
	}
	eventually(t, 3*time.Second, "the failure logged", func() bool {
		l := bad.logs.String()
		return strings.Contains(l, "upstream failed") && strings.Contains(l, "certificate signed by unknown authority")
	})

	h1only := &tlsUpstream{Server: httptest.NewUnstartedServer(http.NotFoundHandler())}
	h1only.TLS = &tls.Config{Certificates: []tls.Certificate{p.server.pair}}
	h1only.StartTLS() // HTTP/1.1 only: ALPN http/1.1
	t.Cleanup(h1only.Close)
	g1 := startGale(t, route(p.serverCA.file, h1only))
	if code, _ := g1.get(newClient(), "/"); code != 502 {
		t.Fatalf("upstream without h2: status %d, want 502", code)
	}
	eventually(t, 3*time.Second, "the refusal logged", func() bool {
		l := g1.logs.String()
		return strings.Contains(l, "upstream failed") && (strings.Contains(l, "not h2") || strings.Contains(l, "no application protocol"))
	})
}

// TestTLSUpstreamReloadCA: a reload reads the CA file again: an upstream
// refused with the old bundle is reached with the new one, on a new pool
// (the old settings' connections never serve the new route).
func TestTLSUpstreamReloadCA(t *testing.T) {
	p := newPKI(t)
	u := newTLSUpstream(t, p, p.server)
	caFile := filepath.Join(p.dir, "reloaded-ca.pem")
	copyFile := func(from string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, caFile, b)
	}
	copyFile(p.otherCA.file)
	route := fmt.Sprintf("routes:\n  - path: /\n    proxy: {to: \"https://%s\", retries: 0, tls: {server_name: app.test, ca: %s, certificate: %s, key: %s}}\n",
		u.hostport(), caFile, p.client.certFile, p.client.keyFile)
	g := startGale(t, route)
	c := newClient()
	if code, _ := g.get(c, "/"); code != 502 {
		t.Fatalf("with the wrong CA: %d", code)
	}
	copyFile(p.serverCA.file)
	cfg, err := config.Parse([]byte("listen: [\""+g.addr+"\"]\nserver: {event_loops: 1}\n"+route), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if code, _ := g.get(c, "/"); code != 200 {
		t.Fatalf("after the reload with the right CA: %d\n%s", code, g.logs.String())
	}
}

// TestTLSUpstreamHealthCheck: active checks speak TLS to the upstream
// with the route's settings: a certificate that does not verify takes it
// out, with the reason logged.
func TestTLSUpstreamHealthCheck(t *testing.T) {
	p := newPKI(t)
	u := newTLSUpstream(t, p, p.server)
	bad := startGale(t, fmt.Sprintf("routes:\n  - path: /\n    proxy: {to: \"https://%s\", health_check: {path: /, interval: 50ms, fails: 1, passes: 1}, tls: {server_name: app.test, ca: %s, certificate: %s, key: %s}}\n",
		u.hostport(), p.otherCA.file, p.client.certFile, p.client.keyFile))
	eventually(t, 5*time.Second, "the upstream taken out", func() bool {
		return strings.Contains(bad.logs.String(), "upstream out of service")
	})
	if !strings.Contains(bad.logs.String(), "certificate signed by unknown authority") {
		t.Errorf("the check's failure does not say why:\n%s", bad.logs.String())
	}
}

// TestAutoUpstream: protocol: auto speaks what the upstream picks by
// ALPN: HTTP/2 to a server that offers it, HTTP/1.1 to one that does
// not, bodies intact both ways with either framing.
func TestAutoUpstream(t *testing.T) {
	p := newPKI(t)
	h2up := newTLSUpstream(t, p, p.server)
	h1up := &tlsUpstream{}
	h1up.Server = httptest.NewUnstartedServer(h2up.Config.Handler)
	h1up.TLS = h2up.TLS.Clone()
	h1up.TLS.NextProtos = nil
	h1up.StartTLS() // ALPN http/1.1 only
	t.Cleanup(h1up.Close)
	route := func(u *tlsUpstream) string {
		return fmt.Sprintf("  - path: /%s/\n    proxy: {to: \"https://%s\", protocol: auto, strip_prefix: true, tls: {server_name: app.test, ca: %s, certificate: %s, key: %s}}\n",
			map[*tlsUpstream]string{h2up: "h2", h1up: "h1"}[u], u.hostport(), p.serverCA.file, p.client.certFile, p.client.keyFile)
	}
	g := startGale(t, "routes:\n"+route(h2up)+route(h1up))
	c := newClient()
	for _, tc := range []struct{ prefix, proto string }{{"/h2/", "HTTP/2.0"}, {"/h1/", "HTTP/1.1"}} {
		for _, size := range []int{0, 1, 70 << 10, 1 << 20} {
			for _, chunked := range []bool{false, true} {
				body := make([]byte, size)
				_, _ = rand.Read(body)
				var rd io.Reader = bytes.NewReader(body)
				path := tc.prefix + "echo"
				if chunked {
					rd = io.MultiReader(rd)
					path += "?chunked=1"
				}
				req, _ := http.NewRequest("POST", g.url(path), rd)
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || !bytes.Equal(got, body) || resp.Header.Get("X-Proto") != tc.proto {
					t.Fatalf("%s size %d chunked %v: status %d proto %q, %d bytes back (%v)\n%s", tc.prefix, size, chunked, resp.StatusCode, resp.Header.Get("X-Proto"), len(got), err, g.logs.String())
				}
			}
		}
	}
}
