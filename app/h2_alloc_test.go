//go:build !race

package app

import (
	"bytes"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"gale/upstream"
)

// h2Frames renders a client's HTTP/2 session with x/net's framer and
// HPACK encoder: the preface and SETTINGS, then n GET requests for path
// on streams 1, 3, 5, ..., each returned as its own frame bytes.
func h2Frames(t testing.TB, path string, n int) (start []byte, reqs [][]byte) {
	var buf bytes.Buffer
	buf.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&buf, nil)
	_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30})
	_ = fr.WriteSettingsAck()
	_ = fr.WriteWindowUpdate(0, 1<<30)
	start = append([]byte(nil), buf.Bytes()...)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := 0; i < n; i++ {
		buf.Reset()
		hb.Reset()
		for _, f := range [][2]string{
			{":method", "GET"}, {":scheme", "https"}, {":authority", "example.com"}, {":path", path},
			{"user-agent", "Mozilla/5.0 (X11; Linux x86_64) gale-test"}, {"accept", "*/*"},
			{"accept-encoding", "gzip, br"}, {"accept-language", "en"}, {"cookie", "a=b"},
		} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
		reqs = append(reqs, append([]byte(nil), buf.Bytes()...))
	}
	return start, reqs
}

// TestH2ServeAllocs proves that answering a request on an established
// HTTP/2 connection, from the HEADERS frame in the inbound buffer to the
// frames handed to the connection (HPACK decoding, validation, routing,
// the handler, header rules, HPACK encoding, DATA), allocates nothing once
// the connection's buffers have grown: for a respond route and a cached
// static file.
func TestH2ServeAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/index.html", []byte("<h1>hello</h1>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _ := compiledServer(t, `
listen: ["127.0.0.1:0"]
routes:
  - path: /
    static: {root: .}
  - path: /hello
    headers: {response: {set: {X-Frame-Options: DENY}}}
    respond: {status: 200, body: "hello\n"}
`, dir)
	for _, path := range []string{"/hello", "/index.html", "/hello metered", "/index.html metered"} {
		t.Run(path, func(t *testing.T) {
			path, metered := strings.CutSuffix(path, " metered")
			s.sh.Metered = metered
			fc := &fakeConn{}
			cs := newConn(newLoop(s, nil), fc)
			start, reqs := h2Frames(t, path, 400)
			fc.in = start
			cs.onTraffic()
			if cs.h2 == nil {
				t.Fatal("the preface did not start HTTP/2")
			}
			next := 0
			serve := func() {
				fc.in = reqs[next]
				next++
				cs.onTraffic()
				if len(fc.in) != 0 || cs.h2.Closing() {
					t.Fatalf("left %d bytes, closing %v", len(fc.in), cs.h2.Closing())
				}
			}
			for range 20 {
				serve() // grow the buffers (and load the file into the cache)
			}
			waitCached(t, cs, serve)
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

// waitCached serves until no exchange of cs waits for the file cache.
func waitCached(t *testing.T, cs *conn, serve func()) {
	t.Helper()
	eventually(t, 5*time.Second, "the file to reach the cache", func() bool {
		if cs.h2.Pending() == 0 {
			return true
		}
		serve()
		return false
	})
}

// TestH2TLSServeAllocs is TestH2ServeAllocs over an established TLS 1.3
// connection that negotiated h2: the one allocation per read that
// crypto/tls makes (tlsServeAllocs) is all.
func TestH2TLSServeAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	cs, fc, client, mc := tlsPipeALPN(t, []string{"h2", "http/1.1"})
	if p := client.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("ALPN chose %q", p)
	}
	start, reqs := h2Frames(t, "/hello", 300)
	seal := func(b []byte) []byte {
		if _, err := client.Write(b); err != nil {
			t.Fatal(err)
		}
		r := append([]byte(nil), mc.toServer...)
		mc.toServer = mc.toServer[:0]
		return r
	}
	fc.in = append(fc.in[:0], seal(start)...)
	cs.onTraffic()
	if cs.h2 == nil {
		t.Fatal("ALPN h2 did not start HTTP/2")
	}
	records := make([][]byte, len(reqs))
	for i, r := range reqs {
		records[i] = seal(r)
	}
	next := 0
	serve := func() {
		fc.in = append(fc.in[:0], records[next]...)
		next++
		cs.onTraffic()
		if len(fc.out) == 0 || len(fc.in) != 0 || cs.h2.Closing() {
			t.Fatalf("wrote %d bytes, left %d, closing %v", len(fc.out), len(fc.in), cs.h2.Closing())
		}
		fc.out = fc.out[:0]
	}
	for range 20 {
		serve()
	}
	n := testing.AllocsPerRun(200, serve)
	t.Logf("allocations per HTTP/2 request over TLS 1.3: %v", n)
	if n > tlsServeAllocs {
		t.Fatalf("%v allocations per request, want at most %d", n, tlsServeAllocs)
	}
}

// TestH2ProxyAllocs proves that a proxied HTTP/2 GET on an established
// connection, forwarded on a pooled upstream connection with a small
// response relayed back (HPACK decoding, routing, the upstream request,
// the response through the stream's sink, the exchange's end) allocates
// nothing once the buffers have grown. The client and the upstream are
// fake connections.
func TestH2ProxyAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s, _ := compiledServer(t, `
listen: ["127.0.0.1:0"]
routes:
  - path: /api/
    headers: {request: {set: {X-Env: prod}}, response: {set: {X-Frame-Options: DENY}}}
    proxy: {to: ["127.0.0.1:9"], strip_prefix: true}
`, t.TempDir())
	for _, metered := range []bool{false, true} {
		s.sh.Metered = metered
		fc, up := &fakeConn{}, &fakeConn{}
		l := newLoop(s, nil)
		var uc *upstream.Conn
		l.Proxy().SetDial(func(u *upstream.Conn) {
			uc = u
			u.OnOpen(up) // connected at once
		})
		cs := newConn(l, fc)
		start, reqs := h2Frames(t, "/api/users?id=7", 500)
		fc.in = start
		cs.onTraffic()
		if cs.h2 == nil {
			t.Fatal("the preface did not start HTTP/2")
		}
		resp := []byte("HTTP/1.1 200 OK\r\nServer: up\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\nContent-Type: application/json\r\n" +
			"Connection: keep-alive\r\nContent-Length: 13\r\n\r\n{\"id\":7,\"a\":1")
		next := 0
		exchange := func() {
			fc.in = reqs[next]
			next++
			forwarded, relayed := up.written, fc.written
			cs.onTraffic()
			if up.written == forwarded || cs.h2.Pending() != 1 {
				t.Fatalf("request not forwarded (pending %d)", cs.h2.Pending())
			}
			up.in = resp
			if a := uc.OnTraffic(up); a != gnet.None {
				t.Fatalf("upstream: action %v", a)
			}
			cs.onTraffic() // the Wake that has the relayed frames written
			if cs.h2.Pending() != 0 || fc.written-relayed < 13 || len(up.in) != 0 {
				t.Fatalf("response not relayed: pending %d, %d bytes written", cs.h2.Pending(), fc.written-relayed)
			}
		}
		for range 20 {
			exchange() // dials once, grows the buffers
		}
		if n := testing.AllocsPerRun(200, exchange); n != 0 {
			t.Fatalf("metered %v: %v allocations per proxied HTTP/2 request, want 0", metered, n)
		}
		if st := &l.Proxy().Stats; st.Dials.Load() != 1 {
			t.Errorf("dials %d: the pooled connection was not reused", st.Dials.Load())
		}
	}
}
