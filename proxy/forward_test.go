package proxy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// seen is what an echoing upstream received.
type seen struct {
	Method, URI, Proto, Host string
	Header                   http.Header
	Body                     string
	Chunked                  bool
}

// echoUpstream answers every request with a JSON description of it.
func echoUpstream(t *testing.T) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s := seen{Method: r.Method, URI: r.RequestURI, Proto: r.Proto, Host: r.Host, Header: r.Header, Body: string(b),
			Chunked: len(r.TransferEncoding) > 0}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		w.Header().Set("X-Upstream", "echo")
		json.NewEncoder(w).Encode(s)
	})
}

func decodeSeen(t *testing.T, body string) seen {
	t.Helper()
	var s seen
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("upstream answer %q: %v", body, err)
	}
	return s
}

// TestForwardExact checks that method, path, query, headers and bodies
// reach the upstream exactly, and the response comes back exactly.
func TestForwardExact(t *testing.T) {
	t.Parallel()
	up := echoUpstream(t)
	g := startGale(t, proxyRoute(up.hostport()))
	rc := g.dial()

	cases := []struct {
		name, req, method, uri, body string
		chunked                      bool
	}{
		{"GET with query", "GET /a/b%20c?x=1&y=%2F&z HTTP/1.1\r\nHost: example.com\r\nX-Multi: 1\r\nX-Multi: 2\r\nX-Case: MiXeD\r\n\r\n",
			"GET", "/a/b%20c?x=1&y=%2F&z", "", false},
		{"empty query", "GET /q? HTTP/1.1\r\nHost: example.com\r\n\r\n", "GET", "/q?", "", false},
		{"POST with length", "POST /submit HTTP/1.1\r\nHost: example.com\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nhello world",
			"POST", "/submit", "hello world", false},
		{"PUT chunked", "PUT /up HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
			"PUT", "/up", "hello world", true},
		{"DELETE", "DELETE /item/7 HTTP/1.1\r\nHost: example.com\r\n\r\n", "DELETE", "/item/7", "", false},
		{"custom method", "PURGE /cache HTTP/1.1\r\nHost: example.com\r\n\r\n", "PURGE", "/cache", "", false},
		{"absolute form", "GET http://example.com/abs?q=1 HTTP/1.1\r\nHost: other\r\n\r\n", "GET", "/abs?q=1", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc.send(c.req)
			resp, body := rc.response(c.method)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			s := decodeSeen(t, body)
			if s.Method != c.method || s.URI != c.uri || s.Body != c.body || s.Chunked != c.chunked || s.Proto != "HTTP/1.1" {
				t.Errorf("upstream saw %s %s %s chunked=%v body %q; want %s %s chunked=%v body %q",
					s.Method, s.URI, s.Proto, s.Chunked, s.Body, c.method, c.uri, c.chunked, c.body)
			}
			if s.Host != up.hostport() {
				t.Errorf("Host %q, want the upstream's %q", s.Host, up.hostport())
			}
			if v := s.Header.Values("Via"); len(v) != 1 || v[0] != "1.1 gale" {
				t.Errorf("Via %q, want 1.1 gale", v)
			}
			if got := resp.Header.Values("Set-Cookie"); strings.Join(got, "|") != "a=1|b=2" {
				t.Errorf("Set-Cookie %q", got)
			}
			if resp.Header.Get("X-Upstream") != "echo" || resp.Header.Get("Date") == "" {
				t.Errorf("response headers %v", resp.Header)
			}
		})
	}
	// Header values, repeated fields and case arrive as sent.
	rc.send(cases[0].req)
	_, body := rc.response("GET")
	s := decodeSeen(t, body)
	if got := s.Header["X-Multi"]; strings.Join(got, ",") != "1,2" {
		t.Errorf("X-Multi %q", got)
	}
	if s.Header.Get("X-Case") != "MiXeD" {
		t.Errorf("X-Case %q", s.Header.Get("X-Case"))
	}
}

// TestHopByHop checks that hop-by-hop fields, and every field Connection
// names, are removed in both directions.
func TestHopByHop(t *testing.T) {
	t.Parallel()
	var got string
	up := newRawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			head := readHead(br)
			if head == "" {
				return
			}
			got = head
			io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: X-Resp-Hop, keep-alive\r\nX-Resp-Hop: secret\r\n"+
				"Keep-Alive: timeout=5\r\nProxy-Authenticate: Basic\r\nX-Kept: yes\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	g := startGale(t, proxyRoute(up.addr()))
	rc := g.dial()
	rc.send("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, X-Hop\r\nX-Hop: secret\r\nKeep-Alive: timeout=5\r\n" +
		"TE: trailers\r\nProxy-Authorization: Basic eA==\r\nProxy-Connection: keep-alive\r\nUpgrade: h2c\r\nX-Kept: yes\r\n\r\n")
	resp, body := rc.response("GET")
	if resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("status %d body %q", resp.StatusCode, body)
	}
	lower := strings.ToLower(got)
	for _, h := range []string{"\r\nconnection:", "x-hop:", "keep-alive:", "\r\nte:", "proxy-authorization:", "proxy-connection:", "upgrade:"} {
		if strings.Contains(lower, h) {
			t.Errorf("upstream got %q:\n%s", h, got)
		}
	}
	if !strings.Contains(got, "X-Kept: yes\r\n") {
		t.Errorf("end-to-end field lost:\n%s", got)
	}
	for _, h := range []string{"X-Resp-Hop", "Keep-Alive", "Proxy-Authenticate"} {
		if v := resp.Header.Get(h); v != "" {
			t.Errorf("client got %s: %s", h, v)
		}
	}
	if resp.Header.Get("X-Kept") != "yes" || resp.Header.Get("Connection") != "" {
		t.Errorf("response headers %v", resp.Header)
	}
}

// TestForwardedHeaders checks X-Forwarded-* from untrusted and trusted
// clients.
func TestForwardedHeaders(t *testing.T) {
	t.Parallel()
	up := echoUpstream(t)
	req := "GET / HTTP/1.1\r\nHost: front.example\r\nX-Forwarded-For: 203.0.113.9\r\nX-Forwarded-For: 198.51.100.1\r\n" +
		"X-Forwarded-Proto: https\r\nX-Forwarded-Host: spoofed.example\r\nForwarded: for=203.0.113.9\r\n\r\n"
	for _, c := range []struct {
		name, trusted         string
		xff, proto, host, fwd string
	}{
		{"untrusted", "", "127.0.0.1", "http", "front.example", ""},
		{"untrusted range", "trusted_proxies: [10.0.0.0/8]", "127.0.0.1", "http", "front.example", ""},
		{"trusted", "trusted_proxies: [127.0.0.0/8]", "203.0.113.9, 198.51.100.1, 127.0.0.1", "https", "spoofed.example", "for=203.0.113.9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := startGale(t, proxyRoute(up.hostport())+"      "+c.trusted+"\n")
			rc := g.dial()
			rc.send(req)
			_, body := rc.response("GET")
			s := decodeSeen(t, body)
			if got := strings.Join(s.Header["X-Forwarded-For"], " | "); got != c.xff {
				t.Errorf("X-Forwarded-For %q, want %q", got, c.xff)
			}
			if got := strings.Join(s.Header["X-Forwarded-Proto"], " | "); got != c.proto {
				t.Errorf("X-Forwarded-Proto %q, want %q", got, c.proto)
			}
			if got := strings.Join(s.Header["X-Forwarded-Host"], " | "); got != c.host {
				t.Errorf("X-Forwarded-Host %q, want %q", got, c.host)
			}
			if got := s.Header.Get("Forwarded"); got != c.fwd {
				t.Errorf("Forwarded %q, want %q", got, c.fwd)
			}
		})
	}
}

// TestPathRewriteHostAndRules covers strip_prefix, rewrite,
// preserve_host, and the route's header rules on proxied requests,
// responses and the proxy's own errors.
func TestPathRewriteHostAndRules(t *testing.T) {
	t.Parallel()
	up := echoUpstream(t)
	g := startGale(t, fmt.Sprintf(`routes:
  - path: /api/
    headers:
      request: {set: {X-Env: prod}, remove: [X-Secret]}
      response: {set: {X-Frame-Options: DENY}, remove: [X-Upstream]}
    proxy: {to: [%q], strip_prefix: true}
  - path: /v1
    proxy: {to: [%q], rewrite: /v2, preserve_host: true}
  - path: /dead/
    headers: {response: {set: {X-Route: dead}}}
    proxy: {to: ["127.0.0.1:1"], retries: 0}
`, up.hostport(), up.hostport()))
	c := newClient()
	for _, tc := range []struct{ path, uri, host string }{
		{"/api/users?id=3", "/users?id=3", up.hostport()},
		{"/api/", "/", up.hostport()},
		{"/v1", "/v2", g.addr},
		{"/v1/x/y", "/v2/x/y", g.addr},
	} {
		req, _ := http.NewRequest("GET", g.url(tc.path), nil)
		req.Header.Set("X-Secret", "s")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		s := decodeSeen(t, string(b))
		if s.URI != tc.uri || s.Host != tc.host {
			t.Errorf("%s: upstream saw %s host %s, want %s host %s", tc.path, s.URI, s.Host, tc.uri, tc.host)
		}
		if strings.HasPrefix(tc.path, "/api/") {
			if s.Header.Get("X-Env") != "prod" || s.Header.Get("X-Secret") != "" {
				t.Errorf("request rules not applied: %v", s.Header)
			}
			if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("X-Upstream") != "" {
				t.Errorf("response rules not applied: %v", resp.Header)
			}
		} else if s.Header.Get("X-Secret") != "s" {
			t.Errorf("X-Secret removed on a route without rules")
		}
	}
	resp, err := c.Get(g.url("/dead/x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 502 || resp.Header.Get("X-Route") != "dead" {
		t.Errorf("dead upstream: %d %v", resp.StatusCode, resp.Header)
	}
}

// TestHeadAndBodiless checks HEAD and 204/304 responses carry no body,
// and the connection stays usable after them.
func TestHeadAndBodiless(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/204":
			w.WriteHeader(204)
		case "/304":
			w.WriteHeader(304)
		default:
			w.Header().Set("Content-Length", "5")
			io.WriteString(w, "hello")
		}
	})
	g := startGale(t, proxyRoute(up.hostport()))
	rc := g.dial()
	rc.send("HEAD / HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, body := rc.response("HEAD")
	if resp.StatusCode != 200 || body != "" || resp.ContentLength != 5 {
		t.Errorf("HEAD: %d length %d body %q", resp.StatusCode, resp.ContentLength, body)
	}
	for _, p := range []string{"/204", "/304", "/"} {
		rc.send("GET " + p + " HTTP/1.1\r\nHost: a\r\n\r\n")
		resp, body := rc.response("GET")
		want := map[string]int{"/204": 204, "/304": 304, "/": 200}[p]
		if resp.StatusCode != want || (p != "/" && body != "") || (p == "/" && body != "hello") {
			t.Errorf("%s: %d body %q", p, resp.StatusCode, body)
		}
	}
}

// TestChunkedBothWays sends a chunked request body and gets a chunked
// response (relayed chunked to HTTP/1.1, de-chunked to HTTP/1.0).
func TestChunkedBothWays(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{}, 1)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		b, _ := io.ReadAll(r.Body)
		f := w.(http.Flusher)
		for _, part := range []string{"got:", string(b), ":end"} {
			io.WriteString(w, part)
			f.Flush()
		}
	})
	g := startGale(t, proxyRoute(up.hostport()))
	rc := g.dial()
	rc.send("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
	// The body arrives in pieces: the rest once the request is upstream.
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the upstream")
	}
	rc.send("4\r\ndefg\r\n0\r\n\r\n")
	resp, body := rc.response("POST")
	if resp.StatusCode != 200 || body != "got:abcdefg:end" {
		t.Fatalf("status %d body %q", resp.StatusCode, body)
	}
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" || resp.Close {
		t.Errorf("HTTP/1.1 client: transfer-encoding %v close %v", resp.TransferEncoding, resp.Close)
	}
	// HTTP/1.0: no chunked coding; the close delimits the body.
	rc10 := g.dial()
	rc10.send("POST / HTTP/1.0\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi")
	raw, err := io.ReadAll(rc10.br)
	if err != nil {
		t.Fatal(err)
	}
	head, body10, _ := strings.Cut(string(raw), "\r\n\r\n")
	if strings.Contains(strings.ToLower(head), "transfer-encoding") || body10 != "got:hi:end" ||
		!strings.Contains(head, "Connection: close") {
		t.Errorf("HTTP/1.0 client got:\n%s", raw)
	}
}

// TestExpectContinue forwards the expectation: the upstream's 100
// Continue reaches the client, which only then sends the body.
func TestExpectContinue(t *testing.T) {
	t.Parallel()
	up := echoUpstream(t)
	g := startGale(t, proxyRoute(up.hostport()))
	rc := g.dial()
	rc.send("POST /e HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
	line, err := rc.br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("first line %q (%v), want 100 Continue", line, err)
	}
	if rest := readHead(rc.br); rest != "\r\n" {
		// net/http's 100 Continue has no fields.
		t.Logf("100 Continue fields: %q", rest)
	}
	rc.send("body")
	resp, body := rc.response("POST")
	s := decodeSeen(t, body)
	if resp.StatusCode != 200 || s.Body != "body" || s.Header.Get("Expect") != "100-continue" {
		t.Errorf("status %d, upstream saw body %q expect %q", resp.StatusCode, s.Body, s.Header.Get("Expect"))
	}
	// The connection goes on.
	rc.send("GET /after HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, _ := rc.response("GET"); resp.StatusCode != 200 {
		t.Errorf("next request: %d", resp.StatusCode)
	}
}

// TestPipelinedOrder pipelines proxied and local requests on one
// connection: the answers come back in order.
func TestPipelinedOrder(t *testing.T) {
	t.Parallel()
	slowIn, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(slowIn)
			<-release
		}
		io.WriteString(w, "up"+r.URL.Path)
	})
	g := startGale(t, fmt.Sprintf(`routes:
  - path: /
    proxy: {to: [%q]}
  - path: /local
    respond: {body: "local"}
`, up.hostport()))
	rc := g.dial()
	rc.send("GET /slow HTTP/1.1\r\nHost: a\r\n\r\nGET /local HTTP/1.1\r\nHost: a\r\n\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n" +
		"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET /local HTTP/1.1\r\nHost: a\r\n\r\n")
	// /slow is upstream and held there. Another client of the one loop
	// is answered meanwhile: the loop has handled the first client's
	// bytes, and would have answered /local out of order by now.
	<-slowIn
	other := g.dial()
	other.send("GET /local HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, body := other.response("GET"); body != "local" {
		t.Fatalf("the other client: %q", body)
	}
	free()
	for _, want := range []string{"up/slow", "local", "up/x", "up/p", "local"} {
		if _, body := rc.response("GET"); body != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
}

// TestConcurrentClientsTwoLoops runs many clients at once over two event
// loops: every answer is right, and each loop keeps its own pool.
func TestConcurrentClientsTwoLoops(t *testing.T) {
	t.Parallel()
	up := echoUpstream(t)
	g := startGale(t, proxyRoute(up.hostport())+"server: {event_loops: 2}\n")
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := newClient()
			for j := range 25 {
				body := fmt.Sprintf("client %d request %d", i, j)
				resp, err := cl.Post(g.url(fmt.Sprintf("/c%d/r%d", i, j)), "text/plain", strings.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var s seen
				if err := json.Unmarshal(b, &s); err != nil || s.Body != body || s.URI != fmt.Sprintf("/c%d/r%d", i, j) {
					errs <- fmt.Errorf("client %d request %d: %s (%v)", i, j, b, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := up.conns.Load(); n > 40 {
		t.Errorf("%d upstream connections for 20 clients on 2 loops", n)
	}
}

// TestInformational relays 1xx responses (103 Early Hints here) to
// HTTP/1.1 clients ahead of the final response, and drops them for
// HTTP/1.0 clients.
func TestInformational(t *testing.T) {
	t.Parallel()
	// The first final response waits until the client has read the 103:
	// the two reach gale apart.
	hinted := make(chan struct{})
	var first atomic.Bool
	up := newRawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for readHead(br) != "" {
			io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
			if first.CompareAndSwap(false, true) {
				select {
				case <-hinted:
				case <-time.After(10 * time.Second): // failsafe: the client fails on its own
				}
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone")
		}
	})
	g := startGale(t, proxyRoute(up.addr()))
	rc := g.dial()
	rc.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	head := readHead(rc.br)
	close(hinted)
	if !strings.HasPrefix(head, "HTTP/1.1 103 Early Hints\r\n") || !strings.Contains(head, "Link: </style.css>; rel=preload\r\n") {
		t.Fatalf("interim response:\n%s", head)
	}
	if resp, body := rc.response("GET"); resp.StatusCode != 200 || body != "done" {
		t.Fatalf("final: %d %q", resp.StatusCode, body)
	}
	rc10 := g.dial()
	rc10.send("GET / HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\n")
	if resp, body := rc10.response("GET"); resp.StatusCode != 200 || body != "done" {
		t.Fatalf("HTTP/1.0: %d %q (no 1xx may reach it)", resp.StatusCode, body)
	}
}
