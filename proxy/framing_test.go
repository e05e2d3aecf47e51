package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// This file runs request smuggling against the proxy: a client (or an
// upstream) names a framing field in Connection, re-frames a body with
// chunk extensions, or hides fields in a trailer section, and the next hop
// must still read exactly the messages gale framed.

// upRequest is one request a recording upstream read, as net/http framed
// it.
type upRequest struct {
	conn    int
	method  string
	uri     string
	host    string
	header  http.Header
	body    string
	trailer http.Header
}

// recorder is a raw upstream that reads requests with net/http's reader
// (the way a typical application server frames them), records each, and
// answers each with its request-target as the body.
type recorder struct {
	*rawUpstream
	mu   sync.Mutex
	reqs []upRequest
	next int
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.rawUpstream = newRawUpstream(t, func(c net.Conn) {
		r.mu.Lock()
		id := r.next
		r.next++
		r.mu.Unlock()
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return
			}
			r.mu.Lock()
			r.reqs = append(r.reqs, upRequest{conn: id, method: req.Method, uri: req.RequestURI, host: req.Host,
				header: req.Header, body: string(body), trailer: req.Trailer})
			r.mu.Unlock()
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(req.RequestURI), req.RequestURI)
		}
	})
	return r
}

// settled returns what the upstream read once every one of its
// connections has ended: stopping gale closes them, so nothing the
// upstream could still parse is missed.
func (r *recorder) settled(t *testing.T, g *gale) []upRequest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.srv.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	r.ln.Close()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("upstream connections did not end after gale stopped")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]upRequest(nil), r.reqs...)
}

// smuggled is a complete request hidden in a body: an upstream that reads
// the body as a request of its own answers it, and its Content-Length
// would swallow the next client's request.
const smuggled = "GET /smuggled HTTP/1.1\r\nHost: up\r\nContent-Length: 200\r\n\r\n"

// TestConnectionNamesFramingField sends request bodies whose framing
// fields the client names in Connection (the options are hop-by-hop, but
// framing is gale's own), in several spellings, and checks that the
// upstream reads exactly one request with the client's body, followed by
// the next client request, on the same pooled connection.
func TestConnectionNamesFramingField(t *testing.T) {
	t.Parallel()
	chunk := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(smuggled), smuggled)
	cases := []struct {
		name, head, body string
	}{
		{"content-length", "Connection: Content-Length\r\nContent-Length: %d\r\n", smuggled},
		{"lower case", "Connection: content-length\r\nContent-Length: %d\r\n", smuggled},
		{"mixed case", "Connection: cOnTeNt-LeNgTh\r\nContent-Length: %d\r\n", smuggled},
		{"among options", "Connection: keep-alive, Content-Length, X-Other\r\nContent-Length: %d\r\n", smuggled},
		{"no space", "Connection: keep-alive,content-length\r\nContent-Length: %d\r\n", smuggled},
		{"second Connection field", "Connection: keep-alive\r\nConnection: Content-Length\r\nContent-Length: %d\r\n", smuggled},
		{"before the field", "Content-Length: %d\r\nConnection: Content-Length\r\n", smuggled},
		{"host and length", "Connection: Host, Content-Length\r\nContent-Length: %d\r\n", smuggled},
		{"transfer-encoding", "Connection: Transfer-Encoding\r\nTransfer-Encoding: chunked\r\n", chunk},
		{"both named", "Connection: Transfer-Encoding, Content-Length\r\nTransfer-Encoding: chunked\r\n", chunk},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			up := newRecorder(t)
			g := startGale(t, proxyRoute(up.addr()))
			head := c.head
			if strings.Contains(head, "%d") {
				head = fmt.Sprintf(head, len(c.body))
			}
			rc := g.dial()
			rc.send("POST /attack HTTP/1.1\r\nHost: a\r\n" + head + "\r\n" + c.body)
			resp, body := rc.response("POST")
			if resp.StatusCode != 200 || body != "/attack" {
				t.Fatalf("attack: status %d body %q", resp.StatusCode, body)
			}
			rc.send("GET /next HTTP/1.1\r\nHost: a\r\nCookie: session=victim\r\n\r\n")
			resp, body = rc.response("GET")
			if resp.StatusCode != 200 || body != "/next" {
				t.Fatalf("next request: status %d body %q (answered by a smuggled request?)", resp.StatusCode, body)
			}
			rc.c.Close()
			reqs := up.settled(t, g)
			if len(reqs) != 2 {
				t.Fatalf("upstream read %d requests, want 2: %+v", len(reqs), reqs)
			}
			if r := reqs[0]; r.method != "POST" || r.uri != "/attack" || r.body != smuggled {
				t.Errorf("first request: %s %s body %q; want POST /attack with the client's body", r.method, r.uri, r.body)
			}
			if r := reqs[1]; r.method != "GET" || r.uri != "/next" || r.body != "" || r.header.Get("Cookie") != "session=victim" {
				t.Errorf("second request: %s %s body %q cookie %q", r.method, r.uri, r.body, r.header.Get("Cookie"))
			}
		})
	}
}

// TestChunkedRequestReframed checks that a chunked request body reaches
// the upstream in gale's own chunk framing: the client's chunk
// extensions, odd chunk-size spellings and trailer fields (which could
// carry routing or identity fields such as Host or X-Forwarded-For past
// the head's rules) are not forwarded.
func TestChunkedRequestReframed(t *testing.T) {
	t.Parallel()
	wires := make(chan string, 1)
	up := newRawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		head := readHead(br)
		if head == "" {
			return
		}
		body, err := readChunkedWire(br)
		if err != nil {
			wires <- head + "error: " + err.Error()
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
		wires <- head + body
	})
	g := startGale(t, proxyRoute(up.addr()))
	rc := g.dial()
	rc.send("POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTrailer: Host, X-Forwarded-For\r\n\r\n" +
		"005;name=\"v\\\"al\"\r\nhello\r\n000006 ; a=b\r\n world\r\n0;last\r\n" +
		"Host: evil.example\r\nX-Forwarded-For: 10.9.9.9\r\nX-Real-IP: 10.9.9.9\r\nContent-Length: 5\r\n\r\n")
	resp, body := rc.response("POST")
	if resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("status %d body %q", resp.StatusCode, body)
	}
	wire := <-wires
	head, chunks, _ := strings.Cut(wire, "\r\n\r\n")
	if chunks != "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n" && chunks != "b\r\nhello world\r\n0\r\n\r\n" {
		t.Errorf("body on the wire %q; want gale's own framing without extensions or trailers", chunks)
	}
	for _, bad := range []string{"evil.example", "10.9.9.9", "name=", "a=b", "last", "\r\nTrailer:"} {
		if strings.Contains(wire, bad) {
			t.Errorf("upstream got %q:\n%s", bad, wire)
		}
	}
	if !strings.Contains(head, "\r\nTransfer-Encoding: chunked") || strings.Contains(strings.ToLower(head), "content-length") {
		t.Errorf("head framing:\n%s", head)
	}
}

// readChunkedWire reads a chunked body from br through its trailer
// section and returns the bytes as they were on the wire.
func readChunkedWire(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return b.String(), err
		}
		b.WriteString(line)
		var n int
		if _, err := fmt.Sscanf(line, "%x", &n); err != nil {
			return b.String(), fmt.Errorf("chunk size line %q: %v", line, err)
		}
		if n == 0 {
			break
		}
		data := make([]byte, n+2)
		if _, err := io.ReadFull(br, data); err != nil {
			return b.String(), err
		}
		b.Write(data)
	}
	for {
		line, err := br.ReadString('\n')
		b.WriteString(line)
		if err != nil || line == "\r\n" {
			return b.String(), err
		}
	}
}

// TestUpstreamConnectionNamesFramingField has an upstream name its
// framing fields in Connection: the response relayed to a kept-alive
// client still carries gale's own framing, so the next response on the
// connection is read as a response, not as the rest of a body.
func TestUpstreamConnectionNamesFramingField(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, resp string
		head       bool
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nConnection: Content-Length\r\nContent-Length: 5\r\n\r\nhello", false},
		{"mixed case among options", "HTTP/1.1 200 OK\r\nConnection: keep-alive, CONTENT-length\r\nContent-Length: 5\r\n\r\nhello", false},
		{"transfer-encoding", "HTTP/1.1 200 OK\r\nConnection: Transfer-Encoding\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", false},
		{"head response keeps the length", "HTTP/1.1 200 OK\r\nConnection: Content-Length\r\nContent-Length: 5\r\n\r\n", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			up := newRawUpstream(t, func(conn net.Conn) {
				br := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					if req.URL.Path == "/second" {
						io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond")
						continue
					}
					io.WriteString(conn, c.resp)
				}
			})
			g := startGale(t, proxyRoute(up.addr()))
			rc := g.dial()
			method := "GET"
			if c.head {
				method = "HEAD"
			}
			rc.send(method + " /first HTTP/1.1\r\nHost: a\r\n\r\n")
			resp, body := rc.response(method)
			if resp.StatusCode != 200 || resp.Close {
				t.Fatalf("first: status %d close %v", resp.StatusCode, resp.Close)
			}
			if c.head {
				if resp.ContentLength != 5 || body != "" {
					t.Errorf("HEAD: Content-Length %d body %q; want 5 and none", resp.ContentLength, body)
				}
			} else if body != "hello" {
				t.Errorf("first body %q", body)
			}
			rc.send("GET /second HTTP/1.1\r\nHost: a\r\n\r\n")
			resp, body = rc.response("GET")
			if resp.StatusCode != 200 || body != "second" {
				t.Errorf("second: status %d body %q", resp.StatusCode, body)
			}
		})
	}
}

// TestClientIdentityFields sends the fields applications read for the
// client's address and the original request (in several spellings of
// their names): from an untrusted client none reaches the upstream and
// X-Real-IP is gale's own; from a trusted proxy they are kept. Names with
// underscores reach no upstream from anyone.
func TestClientIdentityFields(t *testing.T) {
	t.Parallel()
	up := echoUpstream(t)
	fields := []string{"X-Real-IP", "x-real-ip", "True-Client-IP", "X-Client-IP", "x-cluster-client-ip",
		"CF-Connecting-IP", "Fastly-Client-IP", "X-Original-URL", "x-rewrite-url", "X-Forwarded-Port",
		"X-Forwarded-Server", "X-Forwarded-Prefix", "X-FORWARDED-SCHEME", "X-Forwarded-Ssl", "Front-End-Https", "X-Url-Scheme"}
	var req strings.Builder
	req.WriteString("GET / HTTP/1.1\r\nHost: front.example\r\n")
	for _, f := range fields {
		fmt.Fprintf(&req, "%s: spoofed-%s\r\n", f, strings.ToLower(f))
	}
	// Spelt with underscores, which CGI-style servers read as dashes:
	// dropped from everyone.
	underscored := []string{"X_Real_IP", "X-Forwarded_For", "x_forwarded_host", "True_Client_IP", "X_Original_URL"}
	for _, f := range underscored {
		fmt.Fprintf(&req, "%s: spoofed-%s\r\n", f, strings.ToLower(f))
	}
	req.WriteString("\r\n")
	for _, c := range []struct {
		name, trusted string
		kept          bool
	}{
		{"untrusted", "", false},
		{"trusted", "trusted_proxies: [127.0.0.0/8]", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := startGale(t, proxyRoute(up.hostport())+"      "+c.trusted+"\n")
			rc := g.dial()
			rc.send(req.String())
			resp, body := rc.response("GET")
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			s := decodeSeen(t, body)
			for _, f := range fields {
				want := ""
				if c.kept {
					want = "spoofed-" + strings.ToLower(f)
				}
				vals := s.Header[http.CanonicalHeaderKey(f)]
				found := false
				for _, v := range vals {
					if strings.HasPrefix(v, "spoofed-") {
						found = found || v == want
						if !c.kept {
							t.Errorf("%s: %q reached the upstream", f, v)
						}
					}
				}
				if c.kept && !found {
					t.Errorf("%s from a trusted proxy: got %q, want %q among them", f, vals, want)
				}
			}
			for _, f := range underscored {
				if vals := s.Header[http.CanonicalHeaderKey(f)]; len(vals) > 0 {
					t.Errorf("%s reached the upstream: %q", f, vals)
				}
			}
			if !c.kept {
				if got := s.Header["X-Real-Ip"]; len(got) != 1 || got[0] != "127.0.0.1" {
					t.Errorf("X-Real-IP %q, want gale's own 127.0.0.1", got)
				}
			}
		})
	}
}

// TestChunkedResponseReframed has upstreams send chunked bodies with
// chunk extensions, odd chunk-size spellings (leading zeros, upper case)
// and trailer fields that name framing and identity fields, and a
// close-delimited body: a kept-alive HTTP/1.1 client gets every body in
// gale's own chunks, with bare sizes, no extensions and no trailer
// section, and no Trailer field in the head, so nothing of the
// upstream's framing reaches it; the next response on the connection is
// read as a response.
func TestChunkedResponseReframed(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, resp string }{
		{"extensions", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"5;name=\"v\\\"al\"\r\nhello\r\n6 ; a=b\r\n world\r\n0;last\r\n\r\n"},
		{"size spellings", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"0005\r\nhello\r\n00000006\r\n world\r\n000\r\n\r\n"},
		{"trailer fields", "HTTP/1.1 200 OK\r\nTrailer: Content-Length, Set-Cookie\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"B\r\nhello world\r\n0\r\nContent-Length: 99\r\nSet-Cookie: evil=1\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{"close-delimited", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello world"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			up := newRawUpstream(t, func(conn net.Conn) {
				br := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					if req.URL.Path == "/second" {
						io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond")
						continue
					}
					io.WriteString(conn, c.resp)
					if strings.Contains(c.resp, "Connection: close") {
						return
					}
				}
			})
			g := startGale(t, proxyRoute(up.addr()))
			rc := g.dial()
			rc.send("GET /first HTTP/1.1\r\nHost: a\r\n\r\n")
			head := readHead(rc.br)
			wire, err := readChunkedWire(rc.br)
			if err != nil {
				t.Fatalf("head:\n%s\nbody %q: %v", head, wire, err)
			}
			lower := strings.ToLower(head)
			if !strings.Contains(lower, "\r\ntransfer-encoding: chunked\r\n") || strings.Contains(lower, "trailer:") ||
				strings.Contains(lower, "content-length") {
				t.Errorf("head framing:\n%s", head)
			}
			payload, ok := ownChunks(wire)
			if !ok || payload != "hello world" {
				t.Errorf("body on the wire %q; want gale's own chunks of \"hello world\"", wire)
			}
			for _, bad := range []string{"name=", "a=b", "last", "evil", "99", "00"} {
				if strings.Contains(wire, bad) {
					t.Errorf("client got %q: %q", bad, wire)
				}
			}
			if strings.Contains(c.resp, "Connection: close") {
				if !strings.Contains(lower, "\r\nconnection: close\r\n") {
					t.Errorf("a close-delimited upstream body must end the client's connection:\n%s", head)
				}
				return
			}
			rc.send("GET /second HTTP/1.1\r\nHost: a\r\n\r\n")
			resp, body := rc.response("GET")
			if resp.StatusCode != 200 || body != "second" {
				t.Errorf("second: status %d body %q", resp.StatusCode, body)
			}
		})
	}
}

// ownChunks parses a chunked body as gale frames it (sizes in lower-case
// hex without leading zeros or extensions, no trailer fields) and returns
// its payload; ok is false for anything else.
func ownChunks(wire string) (payload string, ok bool) {
	var b strings.Builder
	for {
		line, rest, found := strings.Cut(wire, "\r\n")
		if !found || line == "" || strings.Trim(line, "0123456789abcdef") != "" || len(line) > 1 && line[0] == '0' {
			return b.String(), false
		}
		var n int
		fmt.Sscanf(line, "%x", &n)
		if n == 0 {
			return b.String(), rest == "\r\n"
		}
		if len(rest) < n+2 || rest[n:n+2] != "\r\n" {
			return b.String(), false
		}
		b.WriteString(rest[:n])
		wire = rest[n+2:]
	}
}
