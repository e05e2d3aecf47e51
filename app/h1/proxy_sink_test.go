package h1

import (
	"fmt"
	"strings"
	"testing"

	"github.com/panjf2000/gnet/v2"

	"gale/codec"
	"gale/handlers"
)

// recordingSink is a handlers.ResponseSink that records what a producer
// hands it, to show what the proxy says to a client without any
// protocol's framing.
type recordingSink struct {
	calls []string
	body  strings.Builder
}

func fieldList(fs []codec.Header) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "[%s: %s]", f.Name, f.Value)
	}
	return b.String()
}

func (r *recordingSink) WriteInterim(status int, fields []codec.Header) {
	r.calls = append(r.calls, fmt.Sprintf("interim %d %s", status, fieldList(fields)))
}

func (r *recordingSink) WriteHead(h handlers.Head) {
	r.calls = append(r.calls, fmt.Sprintf("head %d %q length %d close %v %s", h.Status, h.Reason, h.Length, h.Close, fieldList(h.Fields)))
}

func (r *recordingSink) Room() int { return 1 << 20 }

func (r *recordingSink) WriteBody(p []byte) {
	if len(p) > 0 {
		r.body.Write(p)
	}
}

func (r *recordingSink) Flush() {}

func (r *recordingSink) Finish(trailers []codec.Header) {
	r.calls = append(r.calls, "finish "+fieldList(trailers))
}

func (r *recordingSink) Abort() { r.calls = append(r.calls, "abort") }

// TestProxyAnswersThroughSink runs proxied exchanges whose client is a
// recording sink: the proxy hands over the status, the end-to-end fields
// (no framing or hop-by-hop field of the upstream's), the length or -1,
// and the de-framed body, then Finish, for Content-Length and chunked
// upstream bodies, interim responses, and its own 502; and writes not a
// byte to the client connection itself.
func TestProxyAnswersThroughSink(t *testing.T) {
	cases := []struct {
		name, req, resp string
		calls           []string
		body            string
	}{
		{"content-length", "GET /api/a HTTP/1.1\r\nHost: a\r\n\r\n",
			"HTTP/1.1 200 Fine\r\nContent-Type: text/plain\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nContent-Length: 11\r\n\r\nhello world",
			[]string{`head 200 "Fine" length 11 close false [Content-Type: text/plain]`, "finish "}, "hello world"},
		{"chunked", "GET /api/b HTTP/1.1\r\nHost: a\r\n\r\n",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\nX-Kept: yes\r\n\r\n" +
				"5;ext=1\r\nhello\r\n006\r\n world\r\n0\r\nX-T: v\r\n\r\n",
			[]string{`head 200 "OK" length -1 close false [X-Kept: yes]`, "finish "}, "hello world"},
		{"interim then chunked", "GET /api/c HTTP/1.1\r\nHost: a\r\n\r\n",
			"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n" +
				"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
			[]string{`interim 103 [Link: </s.css>; rel=preload]`, `head 200 "OK" length -1 close false `, "finish "}, "ok"},
		{"close-delimited", "GET /api/d HTTP/1.1\r\nHost: a\r\n\r\n",
			"HTTP/1.1 200 OK\r\nX-Kept: yes\r\n\r\nuntil close",
			[]string{`head 200 "OK" length -1 close true [X-Kept: yes]`, "finish "}, "until close"},
		{"bad response", "GET /api/e HTTP/1.1\r\nHost: a\r\n\r\n",
			"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
			[]string{`head 502 "" length 16 close false [Server: gale][Content-Type: text/plain; charset=utf-8][X-Content-Type-Options: nosniff]`, "finish "}, "502 Bad Gateway\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newProxyFixture(t, "  - path: /api/\n    proxy: {to: [\"127.0.0.1:9\"]}\n")
			rec := &recordingSink{}
			f.cs.ctx.Sink = rec
			f.cl.in = []byte(c.req)
			if a := f.cs.serve(); a != gnet.None {
				t.Fatalf("serve: action %v", a)
			}
			if !f.cs.proxyPending() || f.up.written == 0 {
				t.Fatal("request not forwarded")
			}
			f.up.in = []byte(c.resp)
			f.uc.OnTraffic(f.up)
			if c.name == "close-delimited" {
				if !f.cs.proxyPending() {
					t.Fatal("a close-delimited body ended before the upstream closed")
				}
				f.uc.OnClose(f.up, nil)
			}
			if f.cs.proxyPending() {
				t.Fatal("the exchange did not end")
			}
			if got := strings.Join(rec.calls, "\n"); got != strings.Join(c.calls, "\n") {
				t.Errorf("sink calls:\n%s\nwant:\n%s", got, strings.Join(c.calls, "\n"))
			}
			if rec.body.String() != c.body {
				t.Errorf("body %q, want %q", rec.body.String(), c.body)
			}
			if f.cl.written != 0 {
				t.Errorf("the proxy wrote %d bytes to the client itself", f.cl.written)
			}
		})
	}
}
