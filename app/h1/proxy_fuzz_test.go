package h1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"testing"

	"gale/app/wire"
	"gale/codec"
	"gale/config"
)

// recConn is a fakeConn that keeps what is written to it.
type recConn struct {
	fakeConn
	out bytes.Buffer
}

func (f *recConn) Write(b []byte) (int, error) { return f.out.Write(b) }
func (f *recConn) Writev(bs [][]byte) (int, error) {
	n := 0
	for _, b := range bs {
		f.out.Write(b)
		n += len(b)
	}
	return n, nil
}

// fuzzProxyRoutes exercise what renders the upstream's head: a prefix
// rewrite, request header rules, trusted forwarding fields.
const fuzzProxyRoutes = `  - path: /
    headers: {request: {set: {X-Env: prod}, add: {X-Multi: [a, b]}, remove: [X-Drop]}}
    proxy: {to: ["127.0.0.1:9"], trusted_proxies: [127.0.0.1/32]}
  - path: /api/
    proxy: {to: ["127.0.0.1:9"], strip_prefix: true, preserve_host: true}
`

// FuzzProxyRequest feeds client bytes through the proxy's request
// rendering: for every request the server accepts and forwards whole,
// net/http's reader on the upstream's side must read exactly one request,
// with one Host, whose body is the client's body (as gale's parser framed
// it), and nothing after it; pipelined bytes after the request never
// reach the upstream with it.
func FuzzProxyRequest(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: a\r\nConnection: Content-Length\r\nContent-Length: 5\r\n\r\nhello",
		"POST /x HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, content-length, te\r\nContent-Length: 35\r\n\r\nGET /s HTTP/1.1\r\nHost: b\r\n\r\nxxxxxx",
		"PUT /api/up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: Transfer-Encoding\r\n\r\n5;x=y\r\nhello\r\n0\r\nHost: evil\r\nContent-Length: 9\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nConnection: Host\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://h/abs?q HTTP/1.1\r\nHost: other\r\nX-Forwarded-For: 1.2.3.4\r\nX-Drop: 1\r\n\r\n",
		"POST / HTTP/1.0\r\nContent-Length: 3\r\nConnection: keep-alive, Content-Length\r\n\r\nabc",
		"DELETE /api/ HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi",
	} {
		f.Add([]byte(s))
	}
	cfg, err := config.Parse([]byte("listen: [\"127.0.0.1:0\"]\nserver: {event_loops: 1}\nroutes:\n"+fuzzProxyRoutes), f.TempDir()+"/gale.yaml")
	if err != nil {
		f.Fatal(err)
	}
	set, err := wire.Compile(cfg)
	if err != nil {
		f.Fatal(err)
	}
	s := newShared()
	s.Set.Store(set)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		body, ok := forwardable(data)
		if !ok {
			return
		}
		cl, up := &recConn{fakeConn: fakeConn{in: append([]byte(nil), data...)}}, &recConn{}
		var uc wire.Upstream
		s.Proxies.Dial = func(c wire.Upstream) { uc = c }
		cs := newTestConn(newTestLoop(s), cl)
		cs.serve()
		if !cs.proxyPending() || uc == nil {
			t.Fatalf("request not forwarded; client got %q", cl.out.String())
		}
		uc.OnOpen(up) // connected once the loop is back, as a real dial is
		checkOneRequest(t, up.out.Bytes(), body)
	})
}

// forwardable parses data as the server does and reports the body of its
// first request when that request would be forwarded whole: a complete
// head and body, and not an upgrade (which becomes a tunnel).
func forwardable(data []byte) ([]byte, bool) {
	var r codec.Request
	n, err := codec.Parse(data, &r, nil)
	if err != nil || r.Upgrade || r.Form != codec.OriginForm && r.Form != codec.AbsoluteForm {
		return nil, false
	}
	var br codec.BodyReader
	br.Init(&r, 0)
	var body []byte
	rest := data[n:]
	for {
		c, p, done, err := br.Next(rest)
		if err != nil {
			return nil, false
		}
		body = append(body, p...)
		rest = rest[c:]
		if done {
			return body, true
		}
		if c == 0 {
			return nil, false
		}
	}
}

// checkOneRequest reads wire as an upstream would and fails t unless it
// holds exactly one request with one Host and the given body.
func checkOneRequest(t *testing.T, wire, body []byte) {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(wire))
	req, err := http.ReadRequest(br)
	if err != nil {
		t.Fatalf("upstream cannot read the request: %v\n%q", err, wire)
	}
	got, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatalf("upstream cannot read the body: %v\n%q", err, wire)
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("upstream read body %q, the client sent %q\n%q", got, body, wire)
	}
	if len(req.Header.Values("Host")) > 0 || req.Host == "" {
		t.Fatalf("upstream Host %q, fields %q\n%q", req.Host, req.Header.Values("Host"), wire)
	}
	if len(req.Trailer) > 0 {
		t.Fatalf("client trailer fields reached the upstream: %v\n%q", req.Trailer, wire)
	}
	if rest, _ := io.ReadAll(br); len(rest) > 0 {
		t.Fatalf("upstream reads %d bytes after the request: %q\n%q", len(rest), rest, wire)
	}
}
