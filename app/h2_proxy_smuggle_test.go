package app

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// recUpstream is an HTTP/1.1 upstream that records every byte it
// receives, connection by connection, and answers each request it reads
// whole with "ok".
type recUpstream struct {
	t    *testing.T
	addr string

	mu       sync.Mutex
	raw      []*bytes.Buffer // per connection
	gone     []bool          // per connection: it closed
	complete []string        // request line and body of each request read whole
	changed  chan struct{}   // signalled on every change
}

func newRecUpstream(t *testing.T) *recUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &recUpstream{t: t, addr: ln.Addr().String(), changed: make(chan struct{}, 1)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go u.serve(c)
		}
	}()
	return u
}

// recorder appends what a connection reads to its buffer.
type recorder struct {
	u   *recUpstream
	c   net.Conn
	buf *bytes.Buffer
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.c.Read(p)
	r.u.mu.Lock()
	r.buf.Write(p[:n])
	r.u.mu.Unlock()
	r.u.signal()
	return n, err
}

func (u *recUpstream) signal() {
	select {
	case u.changed <- struct{}{}:
	default:
	}
}

func (u *recUpstream) serve(c net.Conn) {
	defer c.Close()
	buf := &bytes.Buffer{}
	u.mu.Lock()
	i := len(u.raw)
	u.raw = append(u.raw, buf)
	u.gone = append(u.gone, false)
	u.mu.Unlock()
	br := bufio.NewReader(&recorder{u: u, c: c, buf: buf})
	defer func() {
		u.mu.Lock()
		u.gone[i] = true
		u.mu.Unlock()
		u.signal()
	}()
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		u.mu.Lock()
		u.complete = append(u.complete, req.Method+" "+req.RequestURI+" "+string(body))
		u.mu.Unlock()
		u.signal()
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
	}
}

// snapshot returns the bytes of every connection, whether each closed,
// and the requests read whole.
func (u *recUpstream) snapshot() (raw []string, gone []bool, complete []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, b := range u.raw {
		raw = append(raw, b.String())
	}
	return raw, append([]bool(nil), u.gone...), append([]string(nil), u.complete...)
}

// await waits until cond holds for a snapshot.
func (u *recUpstream) await(what string, cond func(raw []string, gone []bool, complete []string) bool) {
	u.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if cond(u.snapshot()) {
			return
		}
		select {
		case <-u.changed:
		case <-deadline:
			raw, gone, complete := u.snapshot()
			u.t.Fatalf("waiting for %s: raw %q, closed %v, complete %q", what, raw, gone, complete)
		}
	}
}

// h2Fields encodes a header block from name-value pairs as given (no
// validation: the test chooses what is malformed).
func h2Fields(fs ...[2]string) []byte {
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range fs {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return hb.Bytes()
}

// streamResult is what a stream received: the RST_STREAM code (or -1),
// the final status, the body, and whether it ended.
type streamResult struct {
	code   int
	status string
	body   string
	ended  bool
}

// awaitStream reads frames until stream id ends (END_STREAM or
// RST_STREAM) and returns what it received; frames of other streams are
// kept for their own awaitStream.
func (hc *h2Client) awaitStream(id uint32) (code int, status string, body string) {
	hc.t.Helper()
	if hc.stash == nil {
		hc.stash = map[uint32]*streamResult{}
	}
	of := func(sid uint32) *streamResult {
		r := hc.stash[sid]
		if r == nil {
			r = &streamResult{code: -1}
			hc.stash[sid] = r
		}
		return r
	}
	for {
		if r := hc.stash[id]; r != nil && r.ended {
			delete(hc.stash, id)
			return r.code, r.status, r.body
		}
		f, err := hc.fr.ReadFrame()
		if err != nil {
			hc.t.Fatalf("reading stream %d: %v", id, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = hc.fr.WriteSettingsAck()
			}
		case *http2.GoAwayFrame:
			hc.t.Fatalf("GOAWAY %v waiting for stream %d", f.ErrCode, id)
		case *http2.RSTStreamFrame:
			r := of(f.StreamID)
			r.code, r.ended = int(f.ErrCode), true
		case *http2.MetaHeadersFrame:
			r := of(f.StreamID)
			if s := f.PseudoValue("status"); s != "" && s[0] != '1' {
				r.status = s
			}
			r.ended = r.ended || f.StreamEnded()
		case *http2.DataFrame:
			r := of(f.StreamID)
			r.body += string(f.Data())
			r.ended = r.ended || f.StreamEnded()
		}
	}
}

// TestH2ProxyDowngradeDefences sends requests that RFC 9113 sections
// 8.2 and 8.3 call malformed, each on a stream of its own, to a proxy
// route: each is reset, and the upstream's recorded bytes show that none
// of them reached it. A well-formed request after them is forwarded with
// exactly one Host field.
func TestH2ProxyDowngradeDefences(t *testing.T) {
	t.Parallel()
	up := newRecUpstream(t)
	ts := h2ProxyServer(t, up.addr)
	base := func(method, path string) [][2]string {
		return [][2]string{{":method", method}, {":scheme", "http"}, {":authority", "localhost"}, {":path", path}}
	}
	bad := map[string][][2]string{
		"transfer-encoding": append(base("POST", "/up/x"), [2]string{"transfer-encoding", "chunked"}),
		"connection":        append(base("GET", "/up/x"), [2]string{"connection", "keep-alive"}),
		"keep-alive":        append(base("GET", "/up/x"), [2]string{"keep-alive", "timeout=5"}),
		"proxy-connection":  append(base("GET", "/up/x"), [2]string{"proxy-connection", "keep-alive"}),
		"upgrade":           append(base("GET", "/up/x"), [2]string{"upgrade", "websocket"}),
		"te gzip":           append(base("GET", "/up/x"), [2]string{"te", "gzip"}),
		"CRLF in value":     append(base("GET", "/up/x"), [2]string{"x-a", "b\r\nX-Injected: 1"}),
		"LF in value":       append(base("GET", "/up/x"), [2]string{"x-a", "b\nX-Injected: 1"}),
		"NUL in value":      append(base("GET", "/up/x"), [2]string{"x-a", "b\x00c"}),
		"CR in name":        append(base("GET", "/up/x"), [2]string{"x-a\r", "b"}),
		"colon in name":     append(base("GET", "/up/x"), [2]string{"x:a", "b"}),
		"uppercase name":    append(base("GET", "/up/x"), [2]string{"X-Up", "b"}),
		"CRLF in path":      base("GET", "/up/x HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET /up/y"),
		"space in method":   base("GET /up/z", "/up/x"),
		"no :path":          {{":method", "GET"}, {":scheme", "http"}, {":authority", "localhost"}},
		"two :path":         append(base("GET", "/up/x"), [2]string{":path", "/up/y"}),
		"pseudo after":      append(base("GET", "/up/x")[:3], [2]string{"x-a", "b"}, [2]string{":path", "/up/x"}),
		"unknown pseudo":    append(base("GET", "/up/x"), [2]string{":protocol", "websocket"}),
		"response pseudo":   append(base("GET", "/up/x"), [2]string{":status", "200"}),
		"host differs":      append(base("GET", "/up/x"), [2]string{"host", "evil.example"}),
		"cl not a number":   append(base("POST", "/up/x"), [2]string{"content-length", "5, 5"}),
	}
	hc := dialH2C(t, ts.plainAddr(), 1<<20, 0).decodeHeaders()
	for name, fs := range bad {
		id := hc.next()
		if err := hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h2Fields(fs...), EndStream: true, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		if code, status, _ := hc.awaitStream(id); code != int(http2.ErrCodeProtocol) && status != "400" {
			t.Errorf("%s: RST_STREAM %d, status %q; want PROTOCOL_ERROR or 400", name, code, status)
		}
	}
	// A body that disagrees with its content-length: longer, in one
	// burst with the head, and shorter.
	id := hc.next()
	hc.burst(func(fr *http2.Framer) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h2Fields(append(base("POST", "/up/long"), [2]string{"content-length", "5"})...), EndHeaders: true})
		_ = fr.WriteData(id, true, []byte("0123456789"))
	})
	if code, _, _ := hc.awaitStream(id); code != int(http2.ErrCodeProtocol) {
		t.Errorf("longer body: RST_STREAM %d, want PROTOCOL_ERROR", code)
	}
	// The shorter body's head reaches the upstream first (the body is
	// streamed), then the stream is reset and the upstream connection
	// closed before the request is whole.
	id = hc.next()
	if err := hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h2Fields(append(base("POST", "/up/short"), [2]string{"content-length", "10"})...), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	short := -1
	up.await("the head of the short body", func(raw []string, _ []bool, _ []string) bool {
		for i, r := range raw {
			if strings.Contains(r, "Content-Length: 10\r\n\r\n") {
				short = i
			}
		}
		return short >= 0
	})
	if err := hc.fr.WriteData(id, true, []byte("01234")); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := hc.awaitStream(id); code != int(http2.ErrCodeProtocol) {
		t.Errorf("shorter body: RST_STREAM %d, want PROTOCOL_ERROR", code)
	}
	up.await("the upstream connection of the short body closed", func(_ []string, gone []bool, _ []string) bool { return gone[short] })

	// A well-formed request, with a host field equal to :authority.
	id = hc.next()
	if err := hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h2Fields(append(base("GET", "/up/good"), [2]string{"host", "localhost"})...), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	if code, status, body := hc.awaitStream(id); code != -1 || status != "200" || body != "ok" {
		t.Fatalf("good request: reset %d, %q %q", code, status, body)
	}
	raw, _, complete := up.snapshot()
	if len(complete) != 1 || complete[0] != "GET /up/good " {
		t.Errorf("requests the upstream read whole: %q, want only the good one", complete)
	}
	all := strings.Join(raw, "")
	for _, s := range []string{"X-Injected", "evil", "/up/x", "/up/y", "/up/z", "/up/long", "Transfer-Encoding", "Upgrade", "Keep-Alive", "01234"} {
		if strings.Contains(all, s) {
			t.Errorf("the upstream received %q: %q", s, raw)
		}
	}
	if n := strings.Count(strings.ToLower(all), "\r\nhost:"); n != 2 {
		t.Errorf("%d Host fields upstream, want one per request (2): %q", n, raw)
	}
}
