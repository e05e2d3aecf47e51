//go:build !race

package h1

import (
	"runtime"
	"testing"

	"github.com/panjf2000/gnet/v2"

	"gale/app/wire"
	"gale/config"
)

// TestServeAllocs proves that answering a request on a kept-alive
// connection, from the bytes in the inbound buffer to the bytes handed to
// the connection (parse, route, handler, header rules, rendering, Date),
// allocates nothing once the connection's buffers have grown.
func TestServeAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	dir := t.TempDir()
	cfg, err := config.Parse([]byte(`
listen: ["127.0.0.1:0"]
routes:
  - path: /
    static: {root: .}
  - path: /hello
    headers: {response: {set: {X-Frame-Options: DENY}, remove: [X-Powered-By]}}
    respond: {status: 200, body: "hello\n"}
  - path: /old/
    redirect: {to: /new/, keep_path: true}
  - host: api.example.com
    path: /v1/
    respond: {status: 204}
`), dir+"/gale.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set, err := wire.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := newShared()
	s.Set.Store(set)
	l := newTestLoop(s)
	fc := &fakeConn{}
	cs := newTestConn(l, fc)

	cases := map[string]string{
		"respond":   "GET /hello HTTP/1.1\r\nHost: example.com\r\nUser-Agent: wrk\r\nAccept: */*\r\nAccept-Encoding: gzip\r\nAccept-Language: en\r\nCookie: a=b\r\nReferer: http://example.com/\r\nX-Request-Id: 1234\r\n\r\n",
		"pipelined": "GET /hello HTTP/1.1\r\nHost: a\r\n\r\nGET /hello HTTP/1.1\r\nHost: a\r\n\r\nGET /hello HTTP/1.1\r\nHost: a\r\n\r\n",
		"redirect":  "GET /old/page?x=1 HTTP/1.1\r\nHost: a\r\n\r\n",
		"normalise": "GET //old/./x/../p%61ge%2f?x=1 HTTP/1.1\r\nHost: a\r\n\r\n",
		"refused":   "GET /old/..;/page HTTP/1.1\r\nHost: a\r\n\r\n",
		"escapes":   "GET /old;jsessionid=1/a%2Fb/p%61ge?x=1 HTTP/1.1\r\nHost: a\r\n\r\n",
		"not found": "GET /missing HTTP/1.1\r\nHost: API.example.com:8080\r\nAccept: application/json\r\n\r\n",
		"with body": "POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
	}
	for _, metered := range []bool{false, true} {
		for name, req := range cases {
			t.Run(meteredName(name, metered), func(t *testing.T) {
				s.Metered = metered
				raw := []byte(req)
				serve := func() {
					fc.in = raw
					if a := cs.serve(); a != gnet.None {
						t.Fatalf("action %v", a)
					}
					if len(fc.in) != 0 || cs.closeAfter {
						t.Fatalf("left %d bytes, closeAfter %v", len(fc.in), cs.closeAfter)
					}
				}
				serve() // grow the buffers
				before := fc.written
				if n := testing.AllocsPerRun(200, serve); n != 0 {
					t.Fatalf("%v allocations per request, want 0", n)
				}
				if fc.written == before {
					t.Fatal("nothing written")
				}
			})
		}
	}
}

func BenchmarkServeRespond(b *testing.B) {
	dir := b.TempDir()
	cfg, err := config.Parse([]byte("listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /\n    respond: {body: \"hello\\n\"}\n"), dir+"/gale.yaml")
	if err != nil {
		b.Fatal(err)
	}
	set, _ := wire.Compile(cfg)
	s := newShared()
	s.Set.Store(set)
	fc := &fakeConn{}
	cs := newTestConn(newTestLoop(s), fc)
	raw := []byte("GET / HTTP/1.1\r\nHost: example.com\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n")
	benchMetered(b, &s.Metered, func() {
		fc.in = raw
		cs.serve()
	})
}

// benchMetered runs serve as two sub-benchmarks, with the per-route
// metrics off and on (metered), so that -count interleaves them.
func benchMetered(b *testing.B, metered *bool, serve func()) {
	for _, on := range []bool{false, true} {
		name := "metrics=off"
		if on {
			name = "metrics=on"
		}
		b.Run(name, func(b *testing.B) {
			*metered = on
			serve()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				serve()
			}
		})
	}
}

// meteredName names a subtest of an allocation test that runs with the
// per-route metrics off and on.
func meteredName(name string, metered bool) string {
	if metered {
		return name + " metered"
	}
	return name
}
