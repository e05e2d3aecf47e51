package app

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gale/config"
)

const tlsRoutes = `routes:
  - path: /hello
    respond: {body: "hello\n"}
  - path: /
    static: {root: ./site}
`

const tlsOnly = `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT]}}
` + tlsRoutes

// dialTLS connects with cfg and completes the handshake.
func (ts *tlsTestServer) dialTLS(cfg *tls.Config) *tls.Conn {
	ts.t.Helper()
	d := &net.Dialer{Timeout: 2 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", ts.tlsAddr, cfg)
	if err != nil {
		ts.t.Fatalf("tls dial: %v", err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	ts.t.Cleanup(func() { c.Close() })
	return c
}

func getOver(t *testing.T, c net.Conn, br *bufio.Reader, path string) (*http.Response, string) {
	t.Helper()
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	return readResponse(t, br, "GET")
}

// TestTLSVersions serves keep-alive requests over TLS 1.2 and 1.3, with
// ALPN http/1.1 (chosen over h2 when the client offers only it), and
// marks the requests as TLS for handlers.
func TestTLSVersions(t *testing.T) {
	t.Parallel()
	ts := startTLSServer(t, tlsOnly, nil, nil)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			cfg := ts.clientConfig("localhost")
			cfg.MinVersion, cfg.MaxVersion = v, v
			cfg.NextProtos = []string{"http/1.1"}
			c := ts.dialTLS(cfg)
			st := c.ConnectionState()
			if st.Version != v || st.NegotiatedProtocol != "http/1.1" {
				t.Fatalf("version %x, ALPN %q", st.Version, st.NegotiatedProtocol)
			}
			br := bufio.NewReader(c)
			for i := 0; i < 20; i++ {
				resp, body := getOver(t, c, br, "/hello")
				if resp.StatusCode != 200 || body != "hello\n" {
					t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
				}
			}
		})
	}
	// An HTTP client over TLS (net/http's transport, keep-alive).
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: ts.clientConfig("localhost")}}
	defer cl.CloseIdleConnections()
	for i := 0; i < 3; i++ {
		resp, err := cl.Get("https://" + ts.tlsAddr + "/hello")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "hello\n" || resp.TLS == nil {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
	}
}

// TestTLSMinVersion refuses TLS 1.2 when min_version is 1.3.
func TestTLSMinVersion(t *testing.T) {
	t.Parallel()
	ts := startTLSServer(t, strings.Replace(tlsOnly, "[$CERT]", "[$CERT], min_version: \"1.3\"", 1), nil, nil)
	cfg := ts.clientConfig("localhost")
	cfg.MaxVersion = tls.VersionTLS12
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", ts.tlsAddr, cfg)
	if err == nil {
		c.Close()
		t.Fatal("TLS 1.2 handshake succeeded with min_version 1.3")
	}
	ts.dialTLS(ts.clientConfig("localhost")) // 1.3 works
}

// TestTLSFullChain checks that the intermediate from the PEM file is sent:
// a client that trusts only the root verifies the chain.
func TestTLSFullChain(t *testing.T) {
	t.Parallel()
	ts := startTLSServer(t, tlsOnly, nil, nil)
	c := ts.dialTLS(ts.clientConfig("localhost"))
	st := c.ConnectionState()
	if len(st.PeerCertificates) != 2 || st.PeerCertificates[1].Subject.CommonName != "gale test intermediate" {
		t.Fatalf("peer sent %d certificates", len(st.PeerCertificates))
	}
	if len(st.VerifiedChains) != 1 || len(st.VerifiedChains[0]) != 3 {
		t.Fatalf("verified chains %v", st.VerifiedChains)
	}
}

// TestTLSSNI picks certificates by server name: exact names before
// wildcards, the first certificate when nothing matches or no name is sent.
func TestTLSSNI(t *testing.T) {
	t.Parallel()
	yaml := `listen:
  - address: "127.0.0.1:0"
    tls:
      certificates:
        - $CERT
        - {cert: wild.pem, key: wild.key}
        - {cert: exact.pem, key: exact.key}
` + tlsRoutes
	ts := startTLSServer(t, yaml, nil, func(ca *testCA, dir string) {
		ca.issue(dir, "wild", "*.example.com", "example.org")
		ca.issue(dir, "exact", "www.example.com")
	})
	cases := []struct{ sni, want string }{
		{"www.example.com", "www.example.com"},
		{"WWW.Example.COM", "www.example.com"},
		{"api.example.com", "*.example.com"},
		{"example.org", "*.example.com"},
		{"a.b.example.com", "localhost"}, // a wildcard covers one label
		{"example.com", "localhost"},
		{"other.test", "localhost"},
		{"", "localhost"},
	}
	for _, tc := range cases {
		cfg := &tls.Config{ServerName: tc.sni, InsecureSkipVerify: true}
		c := ts.dialTLS(cfg)
		leaf := c.ConnectionState().PeerCertificates[0]
		if leaf.Subject.CommonName != tc.want {
			t.Errorf("SNI %q: got the certificate of %q, want %q", tc.sni, leaf.Subject.CommonName, tc.want)
		}
		c.Close()
	}
}

// trickleConn writes every byte with its own write call, and every 64th
// once the server has read what came before it, so that the server
// reads its input in pieces.
type trickleConn struct {
	net.Conn
	t *testing.T
}

func (c trickleConn) Write(p []byte) (int, error) {
	for i := range p {
		if _, err := c.Conn.Write(p[i : i+1]); err != nil {
			return i, err
		}
		if i%64 == 0 {
			peerRead(c.t, c.Conn)
		}
	}
	return len(p), nil
}

// TestTLSTrickle sends the handshake and a request one byte at a time,
// the request also one record per byte.
func TestTLSTrickle(t *testing.T) {
	if testing.Short() {
		t.Skip("a handshake one byte at a time: not in -short")
	}
	t.Parallel()
	ts := startTLSServer(t, tlsOnly, nil, nil)
	raw, err := net.DialTimeout("tcp", ts.tlsAddr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(20 * time.Second))
	c := tls.Client(trickleConn{raw, t}, ts.clientConfig("localhost"))
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	req := "GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n"
	for i := 0; i < len(req); i++ {
		if _, err := c.Write([]byte{req[i]}); err != nil {
			t.Fatal(err)
		}
	}
	resp, body := readResponse(t, bufio.NewReader(c), "GET")
	if resp.StatusCode != 200 || body != "hello\n" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

// TestTLSPipelinedLargeBody pipelines small requests around a 1 MiB
// file, which leaves the loop (encrypted by the transfer goroutine), in
// one write, and checks the responses arrive complete and in order.
func TestTLSPipelinedLargeBody(t *testing.T) {
	t.Parallel()
	ts := startTLSServer(t, tlsOnly, map[string]string{"small.txt": "small\n"}, nil)
	sum := writeBigFile(t, filepath.Join(ts.dir, "site", "big.bin"), 1<<20)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		cfg := ts.clientConfig("localhost")
		cfg.MaxVersion = v
		c := ts.dialTLS(cfg)
		var req bytes.Buffer
		for _, p := range []string{"/hello", "/small.txt", "/big.bin", "/hello", "/big.bin", "/small.txt"} {
			fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", p)
		}
		if _, err := c.Write(req.Bytes()); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		for i, want := range []string{"hello\n", "small\n", "big", "hello\n", "big", "small\n"} {
			resp, body := readResponse(t, br, "GET")
			if resp.StatusCode != 200 {
				t.Fatalf("response %d: status %d", i, resp.StatusCode)
			}
			if want == "big" {
				if len(body) != 1<<20 || sha256.Sum256([]byte(body)) != sum {
					t.Fatalf("response %d: %d bytes, content differs", i, len(body))
				}
			} else if body != want {
				t.Fatalf("response %d: %q, want %q", i, body, want)
			}
		}
		// The connection is still usable after the transfers.
		if resp, body := getOver(t, c, br, "/hello"); resp.StatusCode != 200 || body != "hello\n" {
			t.Fatalf("after: %d %q", resp.StatusCode, body)
		}
	}
}

// TestTLSResumption resumes sessions with tickets in TLS 1.2 and 1.3.
func TestTLSResumption(t *testing.T) {
	t.Parallel()
	ts := startTLSServer(t, tlsOnly, nil, nil)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		cfg := ts.clientConfig("localhost")
		cfg.MaxVersion = v
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
		for i := 0; i < 3; i++ {
			c := ts.dialTLS(cfg)
			br := bufio.NewReader(c)
			// TLS 1.3 tickets arrive after the handshake: read a response
			// so the client has processed them.
			if resp, _ := getOver(t, c, br, "/hello"); resp.StatusCode != 200 {
				t.Fatal(resp.Status)
			}
			if got := c.ConnectionState().DidResume; got != (i > 0) {
				t.Fatalf("%s connection %d: DidResume %v", tls.VersionName(v), i, got)
			}
			c.Close()
		}
	}
}

// TestTLSHandshakeTimeout cuts off clients that stall before or in the
// middle of their ClientHello; meanwhile they hold no handshake slot.
func TestTLSHandshakeTimeout(t *testing.T) {
	t.Parallel()
	yaml := `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT], handshake_timeout: 1500ms, max_handshakes: 1}}
` + tlsRoutes
	ts := startTLSServer(t, yaml, nil, nil)

	// A ClientHello cut in the middle, then nothing.
	hello := captureClientHello(t)
	stalled := ts.dial()
	if _, err := stalled.Write(hello[:len(hello)/2]); err != nil {
		t.Fatal(err)
	}
	silent := ts.dial() // sends nothing at all

	// A good client gets the only slot.
	good := ts.dialTLS(ts.clientConfig("localhost"))
	if resp, _ := getOver(t, good, bufio.NewReader(good), "/hello"); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}

	for name, c := range map[string]net.Conn{"stalled": stalled, "silent": silent} {
		// Cut off by the 1.5 s handshake_timeout: a client never cut off
		// fails at this deadline, far past it.
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		t.Logf("%s client:", name)
		expectClosed(t, c)
	}
	if ts.srv.Stats().TimedOut < 2 {
		t.Errorf("TimedOut = %d, want >= 2", ts.srv.Stats().TimedOut)
	}
}

// captureClientHello returns the first flight of a Go TLS client.
func captureClientHello(t *testing.T) []byte {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		c := tls.Client(a, &tls.Config{ServerName: "localhost"})
		_ = c.Handshake()
	}()
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64<<10)
	n, err := b.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// TestTLSPlainHTTPClosed closes a connection that speaks plain HTTP to a
// TLS listener.
func TestTLSPlainHTTPClosed(t *testing.T) {
	t.Parallel()
	ts := startTLSServer(t, tlsOnly, nil, nil)
	c := ts.dial()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	expectClosed(t, c)
}

// TestTLSCloseNotify: a client that sends close_notify after a request
// gets the response, then close_notify, then the close.
func TestTLSCloseNotify(t *testing.T) {
	t.Parallel()
	ts := startTLSServer(t, tlsOnly, nil, nil)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		cfg := ts.clientConfig("localhost")
		cfg.MaxVersion = v
		c := ts.dialTLS(cfg)
		if _, err := io.WriteString(c, "GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if err := c.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || body != "hello\n" {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
		// io.EOF (not io.ErrUnexpectedEOF or a reset) means close_notify.
		if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Fatalf("%s: after the response: %d, %v; want close_notify (io.EOF)", tls.VersionName(v), n, err)
		}
	}
	// Connection: close ends with close_notify too.
	c := ts.dialTLS(ts.clientConfig("localhost"))
	if _, err := io.WriteString(c, "GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(c); err != nil || !bytes.HasSuffix(b, []byte("\r\n\r\nhello\n")) {
		t.Fatalf("read %q, %v", b, err)
	}
}

// TestTLSCertificateReload replaces the certificate files while the
// server runs: a new connection gets the new certificate, one already
// open keeps working; a bad pair is refused and the old one stays.
func TestTLSCertificateReload(t *testing.T) {
	defer func(d time.Duration) { certPoll = d }(certPoll)
	certPoll = 50 * time.Millisecond
	ts := startTLSServer(t, tlsOnly, nil, nil)
	old := ts.dialTLS(ts.clientConfig("localhost"))
	oldSerial := old.ConnectionState().PeerCertificates[0].SerialNumber

	leaf := ts.ca.issue(ts.dir, "cert", "localhost", "127.0.0.1")
	var got *big.Int
	waitUntil(5*time.Second, func() bool { // the watcher polls every 50 ms
		c := ts.dialTLS(ts.clientConfig("localhost"))
		got = c.ConnectionState().PeerCertificates[0].SerialNumber
		c.Close()
		return got.Cmp(oldSerial) != 0
	})
	if got.Cmp(leaf.SerialNumber) != 0 {
		t.Fatalf("serial %v, want %v (new) after a while", got, leaf.SerialNumber)
	}
	if resp, _ := getOver(t, old, bufio.NewReader(old), "/hello"); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}

	// A key that does not match: the running certificate stays.
	other := t.TempDir()
	ts.ca.issue(other, "x", "localhost")
	key, _ := os.ReadFile(filepath.Join(other, "x.key"))
	writeAtomic(t, filepath.Join(ts.dir, "cert.key"), key)
	ts.srv.listeners[0].tls.Poll() // what the watcher runs: the files are looked at now
	c := ts.dialTLS(ts.clientConfig("localhost"))
	if got := c.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(leaf.SerialNumber) != 0 {
		t.Fatalf("serial %v after a bad key; want %v kept", got, leaf.SerialNumber)
	}
}

// TestTLSReloadOnSignal is the SIGHUP path: Reload with a config that
// names other files swaps the certificates at once.
func TestTLSReloadOnSignal(t *testing.T) {
	t.Parallel()
	ts := startTLSServer(t, tlsOnly, nil, nil)
	leaf := ts.ca.issue(ts.dir, "next", "localhost", "127.0.0.1")
	cfgText := strings.ReplaceAll(tlsOnly, "$CERT", "{cert: next.pem, key: next.key}")
	file := filepath.Join(ts.dir, "gale.yaml")
	if err := os.WriteFile(file, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	notes, err = ts.srv.Reload(cfg)
	if err != nil || len(notes) != 0 {
		t.Fatalf("Reload: %v %v", notes, err)
	}
	c := ts.dialTLS(ts.clientConfig("localhost"))
	if got := c.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(leaf.SerialNumber) != 0 {
		t.Fatalf("serial %v, want %v", got, leaf.SerialNumber)
	}
}

// TestRedirectToHTTPS: a redirect_to_https listener answers everything
// with a redirect to the TLS listener's port, keeping path and query.
func TestRedirectToHTTPS(t *testing.T) {
	t.Parallel()
	yaml := `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT]}}
  - {address: "127.0.0.2:0", redirect_to_https: true}
` + tlsRoutes
	ts := startTLSServer(t, yaml, nil, nil)
	_, tlsPort, _ := net.SplitHostPort(ts.tlsAddr)
	plain := ts.srv.Addrs()[1]
	c, err := net.DialTimeout("tcp", plain, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	cases := []struct{ req, status, loc string }{
		{"GET /a/b?x=1&y HTTP/1.1\r\nHost: Example.com:8080\r\n\r\n", "301", "https://Example.com:" + tlsPort + "/a/b?x=1&y"},
		{"HEAD / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", "301", "https://[::1]:" + tlsPort + "/"},
		{"POST /form HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\n\r\nabc", "308", "https://example.com:" + tlsPort + "/form"},
		{"GET /hello HTTP/1.1\r\nHost: example.com.\r\n\r\n", "301", "https://example.com:" + tlsPort + "/hello"},
		{"GET http://other.example/p?q HTTP/1.1\r\nHost: other.example\r\n\r\n", "301", "https://other.example:" + tlsPort + "/p?q"},
	}
	for _, tc := range cases {
		if _, err := io.WriteString(c, tc.req); err != nil {
			t.Fatal(err)
		}
		method := strings.Fields(tc.req)[0]
		resp, _ := readResponse(t, br, method)
		if fmt.Sprint(resp.StatusCode) != tc.status || resp.Header.Get("Location") != tc.loc {
			t.Errorf("%q: %d %q; want %s %q", tc.req, resp.StatusCode, resp.Header.Get("Location"), tc.status, tc.loc)
		}
	}
	// HTTP/1.0 without Host: nothing to redirect to.
	if _, err := io.WriteString(c, "GET / HTTP/1.0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp, _ := readResponse(t, br, "GET"); resp.StatusCode != 400 {
		t.Errorf("no Host: %d", resp.StatusCode)
	}
	if got := ts.srv.URLs(); !strings.HasPrefix(got[0], "https://") || !strings.HasPrefix(got[1], "http://") {
		t.Errorf("URLs() = %v", got)
	}
}

// TestTLSFailedHandshake checks that a failed handshake (a client that
// rejects the certificate) closes the connection and leaves no slot taken.
func TestTLSFailedHandshake(t *testing.T) {
	t.Parallel()
	ts := startTLSServer(t, tlsOnly, nil, nil)
	for i := 0; i < 5; i++ {
		cfg := &tls.Config{ServerName: "localhost"} // system roots: the test CA is unknown
		_, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", ts.tlsAddr, cfg)
		var ue x509.UnknownAuthorityError
		if !errors.As(err, &ue) {
			t.Fatalf("dial: %v", err)
		}
	}
	tl := ts.srv.listeners[0].tls
	waitUntil(3*time.Second, func() bool { return tl.Handshakes().Active == 0 })
	if n := tl.Handshakes().Active; n != 0 {
		t.Fatalf("%d handshake slots still taken", n)
	}
	ts.dialTLS(ts.clientConfig("localhost"))
}

// TestTLSInterleavedPartials: connections on one loop share its
// decryption buffer; a request that arrives in pieces keeps its first
// part while other connections are served in between.
func TestTLSInterleavedPartials(t *testing.T) {
	t.Parallel()
	yaml := `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT]}}
server: {event_loops: 1}
` + tlsRoutes
	ts := startTLSServer(t, yaml, nil, nil)
	const n = 4
	conns := make([]*tls.Conn, n)
	readers := make([]*bufio.Reader, n)
	for i := range conns {
		conns[i] = ts.dialTLS(ts.clientConfig("localhost"))
		// 3 rounds of 4 pieces, each waiting for the kernel's queues to
		// empty (peerRead): slow on a busy machine, so a longer deadline.
		_ = conns[i].SetDeadline(time.Now().Add(60 * time.Second))
		readers[i] = bufio.NewReader(conns[i])
	}
	req := "GET /hello HTTP/1.1\r\nHost: localhost\r\nX-Pad: " + strings.Repeat("p", 3000) + "\r\n\r\n"
	cuts := []int{0, 7, 100, 2500, len(req)}
	for round := 0; round < 3; round++ {
		for k := 1; k < len(cuts); k++ {
			for i, c := range conns {
				// Each connection is at a different point of its request.
				a, b := cuts[k-1], cuts[k]
				if i%2 == 1 && k > 1 {
					a, b = cuts[k-2], cuts[k-1]
				}
				if i%2 == 1 && k == 1 {
					continue
				}
				if _, err := io.WriteString(c, req[a:b]); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range conns { // gale has each piece before the next comes
				peerRead(t, c)
			}
		}
		for i, c := range conns {
			if i%2 == 1 {
				if _, err := io.WriteString(c, req[cuts[len(cuts)-2]:]); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := range conns {
			resp, body := readResponse(t, readers[i], "GET")
			if resp.StatusCode != 200 || body != "hello\n" {
				t.Fatalf("round %d, connection %d: %d %q", round, i, resp.StatusCode, body)
			}
		}
	}
}
