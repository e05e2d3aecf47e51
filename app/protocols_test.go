package app

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"gale/config"
	"gale/h2"
)

// protocolsRoutes are the routes of the listen[].protocols tests.
const protocolsRoutes = `routes:
  - path: /hello
    respond: {status: 200, body: "hello\n", content_type: text/plain}
`

// readAllUntilClose reads c until the server closes it and returns what it
// sent. The connection's deadline is only a failsafe: running into it
// fails the test, since the server was expected to close.
func readAllUntilClose(t *testing.T, c net.Conn) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection not closed (read %d bytes %q before the deadline)", len(b), b)
	}
	return b
}

// h2cClient returns an HTTP/2 client that speaks cleartext with prior
// knowledge only.
func h2cClient(t *testing.T) *http.Client {
	tr := &http.Transport{DisableCompression: true}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// notPrefaces are first bytes that are not the HTTP/2 client preface:
// HTTP/1.1 requests of several shapes, what h2spec sends as an invalid
// preface, the preface's first line with another tail, an HTTP/1.1 line
// that starts like the preface, HTTP/0.9, a TLS ClientHello and a lone
// CRLF.
var notPrefaces = map[string]string{
	"get":           "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n",
	"options":       "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
	"h2c upgrade":   "GET /hello HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n",
	"h2spec":        "INVALID CONNECTION PREFACE\r\n\r\n",
	"preface tail":  "PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n",
	"pri http/1.1":  "PRI * HTTP/1.1\r\nHost: a\r\n\r\n",
	"http/0.9":      "GET /hello\r\n",
	"tls hello":     "\x16\x03\x01\x00\x2a\x01\x00\x00\x26\x03\x03",
	"crlf":          "\r\n",
	"lower preface": strings.ToLower(h2.ClientPreface),
}

// TestProtocolsH2COnly: a plain listener with protocols [h2c] serves
// HTTP/2 with prior knowledge, and closes a connection whose first bytes
// are not the client preface without a byte of HTTP/1.1 (RFC 9113
// section 3.4), also when only part of the preface arrives before
// timeouts.read_header.
func TestProtocolsH2COnly(t *testing.T) {
	ts := startServer(t, "listen: [{address: \"127.0.0.1:0\", protocols: [h2c]}]\n"+
		"server: {timeouts: {read_header: 300ms}}\n"+protocolsRoutes, nil)
	resp, err := h2cClient(t).Get(ts.url("/hello"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 || string(body) != "hello\n" {
		t.Fatalf("h2c: %s %d %q", resp.Proto, resp.StatusCode, body)
	}
	for name, first := range notPrefaces {
		c := ts.dial()
		if _, err := io.WriteString(c, first); err != nil {
			t.Fatal(err)
		}
		if got := readAllUntilClose(t, c); len(got) != 0 {
			t.Errorf("%s: answered %q, want a close with nothing sent", name, got)
		}
	}
	// Part of the preface, then nothing: closed at read_header, with no
	// 408 (that is HTTP/1.1).
	for _, n := range []int{1, 3, len(h2.ClientPreface) - 1} {
		c := ts.dial()
		if _, err := io.WriteString(c, h2.ClientPreface[:n]); err != nil {
			t.Fatal(err)
		}
		if got := readAllUntilClose(t, c); len(got) != 0 {
			t.Errorf("%d bytes of the preface: answered %q, want a close with nothing sent", n, got)
		}
	}
	st := ts.srv.Stats()
	if want := uint64(len(notPrefaces) + 3); st.NoPreface != want || st.Requests != 1 || st.H2Conns != 1 {
		t.Fatalf("stats: %d closed without a preface (want %d), %d requests, %d h2 connections", st.NoPreface, want, st.Requests, st.H2Conns)
	}
}

// TestProtocolsH1OnlyPlain: a plain listener with protocols [h1] never
// looks for the preface: the preface is an HTTP/1.1 request line with an
// unsupported version (505, closed), as it is with HTTP/2 turned off, and
// an h2c client gets no HTTP/2 answer.
func TestProtocolsH1OnlyPlain(t *testing.T) {
	ts := startServer(t, "listen: [{address: \"127.0.0.1:0\", protocols: [h1]}]\n"+protocolsRoutes, nil)
	off := startServer(t, "listen: [\"127.0.0.1:0\"]\nserver: {http2: {enabled: false}}\n"+protocolsRoutes, nil)
	answer := func(ts *testServer) (status int, proto string) {
		t.Helper()
		c := ts.dial()
		if _, err := io.WriteString(c, h2.ClientPreface+"\x00\x00\x00\x04\x00\x00\x00\x00\x00"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, _ := readResponse(t, br, "GET")
		expectClosed(t, br)
		return resp.StatusCode, resp.Proto
	}
	status, proto := answer(ts)
	wantStatus, wantProto := answer(off)
	if status != wantStatus || proto != wantProto || status != 505 {
		t.Fatalf("preface on [h1]: %s %d; with HTTP/2 off: %s %d; want both HTTP/1.1 505", proto, status, wantProto, wantStatus)
	}
	if _, err := h2cClient(t).Get(ts.url("/hello")); err == nil {
		t.Fatal("an h2c client was answered over HTTP/2 on an h1-only listener")
	}
	resp, err := client().Get(ts.url("/hello"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 1 || string(body) != "hello\n" {
		t.Fatalf("HTTP/1.1: %s %q", resp.Proto, body)
	}
	if st := ts.srv.Stats(); st.H2Conns != 0 {
		t.Fatalf("%d HTTP/2 connections on an h1-only listener", st.H2Conns)
	}
}

// protocolsTLSSite has a TLS listener with protocols [h1] and one with [h2].
const protocolsTLSSite = `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT]}, protocols: [h1]}
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT]}, protocols: [h2]}
` + protocolsRoutes

// tlsDial completes a TLS handshake with addr offering protos in ALPN.
func (ts *tlsTestServer) tlsDial(addr string, protos ...string) (*tls.Conn, error) {
	cfg := ts.clientConfig("localhost")
	cfg.NextProtos = protos
	d := &net.Dialer{Timeout: 5 * time.Second, Deadline: time.Now().Add(10 * time.Second)}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err == nil {
		ts.t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	}
	return c, err
}

// TestProtocolsTLSH1Only: a TLS listener with protocols [h1] offers only
// http/1.1 in ALPN, so a client offering h2 first negotiates http/1.1
// (and one offering only h2 is refused by the handshake).
func TestProtocolsTLSH1Only(t *testing.T) {
	ts := startTLSServer(t, protocolsTLSSite, nil, nil)
	addr := ts.srv.Addrs()[0]
	c, err := ts.tlsDial(addr, "h2", "http/1.1")
	if err != nil {
		t.Fatal(err)
	}
	if p := c.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Fatalf("negotiated %q, want http/1.1", p)
	}
	if _, err := io.WriteString(c, "GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp, body := readResponse(t, bufio.NewReader(c), "GET"); resp.StatusCode != 200 || body != "hello\n" {
		t.Fatalf("HTTP/1.1 over TLS: %d %q", resp.StatusCode, body)
	}
	if _, err := ts.tlsDial(addr, "h2"); err == nil || !strings.Contains(err.Error(), "no application protocol") {
		t.Fatalf("a client offering only h2: %v, want the handshake refused", err)
	}
	tr := &http.Transport{TLSClientConfig: ts.clientConfig("localhost"), ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + addr + "/hello")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 1 || resp.StatusCode != 200 {
		t.Fatalf("net/http offering h2: %s %d, want HTTP/1.1 200", resp.Proto, resp.StatusCode)
	}
}

// TestProtocolsTLSH2Only: a TLS listener with protocols [h2] negotiates h2,
// never http/1.1; a client that negotiates no protocol (it offered none,
// or only http/1.1, which crypto/tls then leaves unnegotiated) is served
// HTTP/2 when it opens with the preface and closed unanswered otherwise.
func TestProtocolsTLSH2Only(t *testing.T) {
	ts := startTLSServer(t, protocolsTLSSite, nil, nil)
	addr := ts.srv.Addrs()[1]
	c, err := ts.tlsDial(addr, "h2", "http/1.1")
	if err != nil {
		t.Fatal(err)
	}
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	tr := &http.Transport{TLSClientConfig: ts.clientConfig("localhost"), ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + addr + "/hello")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 {
		t.Fatalf("net/http: %s %d, want HTTP/2.0 200", resp.Proto, resp.StatusCode)
	}
	for _, offer := range [][]string{nil, {"http/1.1"}} {
		for name, first := range notPrefaces {
			c, err := ts.tlsDial(addr, offer...)
			if err != nil {
				t.Fatalf("offering %q: %v", offer, err)
			}
			if p := c.ConnectionState().NegotiatedProtocol; p != "" {
				t.Fatalf("offering %q: negotiated %q, want none", offer, p)
			}
			if _, err := io.WriteString(c, first); err != nil {
				t.Fatal(err)
			}
			if got := readAllUntilClose(t, c); len(got) != 0 {
				t.Errorf("offering %q, %s: answered %q, want a close with nothing sent", offer, name, got)
			}
		}
		c, err := ts.tlsDial(addr, offer...)
		if err != nil {
			t.Fatal(err)
		}
		cc, err := (&http2.Transport{}).NewClientConn(c)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", "https://localhost/hello", nil)
		resp, err := cc.RoundTrip(req)
		if err != nil {
			t.Fatalf("offering %q, HTTP/2 without ALPN: %v", offer, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "hello\n" {
			t.Fatalf("offering %q, HTTP/2 without ALPN: %d %q", offer, resp.StatusCode, body)
		}
	}
}

// TestProtocolsReload: a reload that changes a listener's protocols says
// it needs a restart and the listener keeps its protocols; a reload that
// would turn HTTP/2 off under a running listener without h1 (a proxy
// route, server.http2.enabled: false) is refused, and so is such a config
// at start.
func TestProtocolsReload(t *testing.T) {
	ts := startServer(t, "listen: [{address: \"127.0.0.1:0\", protocols: [h2c]}]\n"+protocolsRoutes, nil)
	file := filepath.Join(ts.dir, "gale.yaml")
	load := func(text string) *config.Config {
		t.Helper()
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	both := "listen: [{address: \"127.0.0.1:0\", protocols: [h1, h2c]}]\n"
	notes, err := ts.srv.Reload(load(both + protocolsRoutes))
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "protocols changed to [h1, h2c]: restart") {
		t.Fatalf("notes %q, want one asking for a restart to change the protocols", notes)
	}
	c := ts.dial()
	if _, err := io.WriteString(c, notPrefaces["get"]); err != nil {
		t.Fatal(err)
	}
	if got := readAllUntilClose(t, c); len(got) != 0 {
		t.Fatalf("after the reload, HTTP/1.1 was answered %q on the h2c-only listener", got)
	}
	// A proxy or FastCGI route leaves HTTP/2 on.
	forwarding := both + protocolsRoutes + "  - path: /api/\n    proxy: {to: [\"127.0.0.1:1\"]}\n" +
		"  - path: /php/\n    fastcgi: {to: \"127.0.0.1:1\", root: .}\n"
	if _, err := ts.srv.Reload(load(forwarding)); err != nil {
		t.Fatalf("reload with proxy and FastCGI routes: %v", err)
	}
	// HTTP/2 turned off in a file whose listener has h1 now: config
	// accepts it, but the running listener has none.
	off := both + "server: {http2: {enabled: false}}\n" + protocolsRoutes
	if _, err := ts.srv.Reload(load(off)); err == nil || !strings.Contains(err.Error(), "gale.yaml:1:10: listen 127.0.0.1:0: protocols [h2c] need HTTP/2, and server.http2.enabled is false") {
		t.Fatalf("reload turning HTTP/2 off: %v, want it refused", err)
	}
	resp, err := h2cClient(t).Get(ts.url("/hello"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 {
		t.Fatalf("after the reloads: %s %d", resp.Proto, resp.StatusCode)
	}
}
