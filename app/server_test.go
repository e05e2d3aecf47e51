package app

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gale/config"
)

const siteConfig = `
routes:
  - path: /
    static: {root: ./site}
  - path: /hello
    respond: {status: 200, body: "hello\n"}
`

var siteFiles = map[string]string{
	"index.html":      "<h1>home</h1>\n",
	"a.txt":           "file a\n",
	"b.txt":           "file b\n",
	"docs/index.html": "<h1>docs</h1>\n",
}

func TestKeepAlive1000Requests(t *testing.T) {
	ts := startServer(t, siteConfig, siteFiles)
	cl := client()
	var conns atomic.Int32
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if !i.Reused {
			conns.Add(1)
		}
	}}
	for i := 0; i < 1000; i++ {
		path := "/hello"
		want := "hello\n"
		if i%2 == 1 {
			path, want = "/a.txt", "file a\n"
		}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", ts.url(path), nil)
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != want {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("1000 requests used %d connections, want 1", n)
	}
	if st := ts.srv.Stats(); st.Accepted != 1 || st.Requests != 1000 {
		t.Fatalf("stats: accepted %d requests %d", st.Accepted, st.Requests)
	}
}

func TestPipelined50InOrder(t *testing.T) {
	ts := startServer(t, siteConfig, siteFiles)
	c := ts.dial()
	var buf bytes.Buffer
	paths := []string{"/a.txt", "/b.txt", "/hello", "/missing", "/docs/"}
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&buf, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", paths[i%len(paths)])
	}
	if _, err := c.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	want := map[string]string{"/a.txt": "file a\n", "/b.txt": "file b\n", "/hello": "hello\n", "/docs/": "<h1>docs</h1>\n"}
	for i := 0; i < 50; i++ {
		p := paths[i%len(paths)]
		resp, body := readResponse(t, br, "GET")
		if p == "/missing" {
			if resp.StatusCode != 404 {
				t.Fatalf("response %d (%s): status %d", i, p, resp.StatusCode)
			}
			continue
		}
		if resp.StatusCode != 200 || body != want[p] {
			t.Fatalf("response %d (%s): %d %q", i, p, resp.StatusCode, body)
		}
	}
}

func TestRequestOneByteAtATime(t *testing.T) {
	ts := startServer(t, siteConfig, siteFiles)
	c := ts.dial()
	// Each byte waits for the kernel's queue to empty (peerRead), which a
	// busy machine with thousands of test sockets makes slow: the
	// connection's deadline covers 70 of those waits, not one request.
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	req := "GET /a.txt HTTP/1.1\r\nHost: example\r\nUser-Agent: slow\r\nAccept: */*\r\n\r\n"
	for i := 0; i < len(req); i++ {
		if _, err := c.Write([]byte{req[i]}); err != nil {
			t.Fatal(err)
		}
		peerRead(t, c) // gale reads each byte apart
	}
	resp, body := readResponse(t, bufio.NewReader(c), "GET")
	if resp.StatusCode != 200 || body != "file a\n" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

func TestHTTP10(t *testing.T) {
	ts := startServer(t, siteConfig, siteFiles)
	t.Run("close by default", func(t *testing.T) {
		c := ts.dial()
		fmt.Fprint(c, "GET /hello HTTP/1.0\r\n\r\n")
		br := bufio.NewReader(c)
		resp, body := readResponse(t, br, "GET")
		if resp.StatusCode != 200 || body != "hello\n" || !resp.Close {
			t.Fatalf("%d %q close=%v", resp.StatusCode, body, resp.Close)
		}
		expectClosed(t, br)
	})
	t.Run("keep-alive on request", func(t *testing.T) {
		c := ts.dial()
		br := bufio.NewReader(c)
		for i := 0; i < 3; i++ {
			fmt.Fprint(c, "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
			resp, body := readResponse(t, br, "GET")
			if resp.StatusCode != 200 || body != "hello\n" || resp.Header.Get("Connection") != "keep-alive" {
				t.Fatalf("%d %q %v", resp.StatusCode, body, resp.Header)
			}
		}
	})
	t.Run("HTTP/1.1 Connection: close", func(t *testing.T) {
		c := ts.dial()
		fmt.Fprint(c, "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		resp, _ := readResponse(t, br, "GET")
		if !resp.Close {
			t.Fatal("no Connection: close in the response")
		}
		expectClosed(t, br)
	})
}

// Every framing error is answered with its status and the connection is
// closed, so nothing after it can be smuggled as a second request.
func TestFramingErrorsAnsweredAndClosed(t *testing.T) {
	ts := startServer(t, siteConfig, siteFiles)
	smuggled := "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
	cases := []struct {
		name, req string
		status    int
	}{
		{"missing host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
		{"duplicate content-length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400},
		{"bad content-length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3x\r\n\r\nabc", 400},
		{"te and cl", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n", 400},
		{"te gzip", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501},
		{"te on 1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
		{"space before colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400},
		{"obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n  2\r\n\r\n", 400},
		{"bad version", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
		{"garbage", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400},
		{"bad chunk size", "POST /hello HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0},
		{"long request line", "GET /" + strings.Repeat("a", 9000) + " HTTP/1.1\r\nHost: a\r\n\r\n", 414},
		{"huge header", "GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("b", 17000) + "\r\n\r\n", 431},
		{"body too large", "POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999\r\n\r\n", 413},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ts.dial()
			if _, err := io.WriteString(c, tc.req+smuggled); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			if tc.status == 0 {
				// The head was fine (and answered); the chunked body is
				// not: the connection closes after the first response.
				resp, _ := readResponse(t, br, "POST")
				if resp.StatusCode != 200 {
					t.Fatalf("status %d", resp.StatusCode)
				}
				expectClosed(t, br)
				return
			}
			resp, body := readResponse(t, br, "GET")
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if !resp.Close {
				t.Fatal("error response without Connection: close")
			}
			if strings.Contains(body, "hello") || strings.Contains(body, "aaaa") {
				t.Fatalf("error body echoes input: %q", body)
			}
			expectClosed(t, br)
		})
	}
}

func TestBodyOnGETConsumed(t *testing.T) {
	ts := startServer(t, siteConfig, siteFiles)
	c := ts.dial()
	fmt.Fprint(c, "GET /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nGET /b.txt ")
	fmt.Fprint(c, "POST /hello HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nGET \r\n0\r\nTrailer: x\r\n\r\n")
	fmt.Fprint(c, "GET /b.txt HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	for _, want := range []string{"file a\n", "hello\n", "file b\n"} {
		resp, body := readResponse(t, br, "GET")
		if resp.StatusCode != 200 || body != want {
			t.Fatalf("got %d %q, want %q", resp.StatusCode, body, want)
		}
	}
}

func TestHeadAndMethods(t *testing.T) {
	ts := startServer(t, siteConfig, siteFiles)
	c := ts.dial()
	br := bufio.NewReader(c)
	fmt.Fprint(c, "HEAD /a.txt HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, body := readResponse(t, br, "HEAD")
	if resp.StatusCode != 200 || body != "" || resp.ContentLength != 7 {
		t.Fatalf("HEAD: %d %q len %d", resp.StatusCode, body, resp.ContentLength)
	}
	fmt.Fprint(c, "DELETE /a.txt HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, _ = readResponse(t, br, "DELETE")
	if resp.StatusCode != 405 || resp.Header.Get("Allow") == "" {
		t.Fatalf("DELETE: %d Allow=%q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	fmt.Fprint(c, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, _ = readResponse(t, br, "OPTIONS")
	if resp.StatusCode != 200 || resp.ContentLength != 0 {
		t.Fatalf("OPTIONS *: %d len %d", resp.StatusCode, resp.ContentLength)
	}
	fmt.Fprint(c, "GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, body = readResponse(t, br, "GET")
	if resp.StatusCode != 200 || body != "file a\n" {
		t.Fatalf("GET after: %d %q", resp.StatusCode, body)
	}
	fmt.Fprint(c, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
	resp, _ = readResponse(t, br, "GET")
	if resp.StatusCode != 405 || !resp.Close {
		t.Fatalf("CONNECT: %d close=%v", resp.StatusCode, resp.Close)
	}
	if resp.Header.Get("Server") != "gale" || resp.Header.Get("Date") == "" {
		t.Fatalf("Server/Date: %v", resp.Header)
	}
}

func TestExpectContinue(t *testing.T) {
	ts := startServer(t, siteConfig, siteFiles)
	// net/http's client waits for 100 Continue or a final status; gale
	// answers the final status at once and does not read the body.
	cl := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{ExpectContinueTimeout: 30 * time.Second}}
	req, _ := http.NewRequest("POST", ts.url("/hello"), strings.NewReader(strings.Repeat("x", 1000)))
	req.Header.Set("Expect", "100-continue")
	start := time.Now()
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello\n" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	// A client that waited for 100 Continue would take its 30 s.
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("answer took %v: the client waited for 100 Continue", d)
	}
	// An expectation gale does not know is 417.
	c := ts.dial()
	fmt.Fprint(c, "POST /hello HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nContent-Length: 1\r\n\r\nx")
	resp, _ = readResponse(t, bufio.NewReader(c), "POST")
	if resp.StatusCode != 417 {
		t.Fatalf("unknown expectation: %d", resp.StatusCode)
	}
}

func TestTimeouts(t *testing.T) {
	ts := startServer(t, `
server:
  timeouts: {read_header: 400ms, idle: 400ms, read_body: 400ms}
`+siteConfig, siteFiles)
	t.Run("trickling header cut off", func(t *testing.T) {
		c := ts.dial()
		start := time.Now()
		fmt.Fprint(c, "GET /a.txt HTTP/1.1\r\nHost: x\r\n")
		// Keep sending a byte every 50ms: progress does not extend
		// read_header, which bounds the whole head.
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if _, err := c.Write([]byte("X-Slow: y\r\n")[i%11 : i%11+1]); err != nil {
					return
				}
			}
		}()
		br := bufio.NewReader(c)
		resp, _ := readResponse(t, br, "GET")
		if resp.StatusCode != 408 {
			t.Fatalf("status %d, want 408", resp.StatusCode)
		}
		expectClosed(t, br) // within the connection's 10 s deadline
		if d := time.Since(start); d < 350*time.Millisecond {
			t.Fatalf("cut off after %v, before read_header (400ms)", d)
		}
	})
	t.Run("idle closed", func(t *testing.T) {
		c := ts.dial()
		br := bufio.NewReader(c)
		fmt.Fprint(c, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
		readResponse(t, br, "GET")
		start := time.Now()
		expectClosed(t, br) // within the connection's 10 s deadline
		if d := time.Since(start); d < 350*time.Millisecond {
			t.Fatalf("idle close after %v, before the idle timeout (400ms)", d)
		}
	})
	t.Run("stalled body closed", func(t *testing.T) {
		c := ts.dial()
		br := bufio.NewReader(c)
		fmt.Fprint(c, "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
		readResponse(t, br, "POST")
		expectClosed(t, br)
	})
	if st := ts.srv.Stats(); st.TimedOut < 3 {
		t.Fatalf("TimedOut = %d, want >= 3", st.TimedOut)
	}
}

func TestConnectionLimit(t *testing.T) {
	ts := startServer(t, `
server:
  limits: {connections: 2}
`+siteConfig, siteFiles)
	a, b := ts.dial(), ts.dial()
	for _, c := range []net.Conn{a, b} {
		fmt.Fprint(c, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
		readResponse(t, bufio.NewReader(c), "GET")
	}
	c := ts.dial()
	fmt.Fprint(c, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	if resp, _ := readResponse(t, br, "GET"); resp.StatusCode != 503 || !resp.Close {
		t.Fatalf("over the limit: %d, close %v; want 503 and close", resp.StatusCode, resp.Close)
	}
	expectClosed(t, br)
}

// writeBigFile writes n pseudo-random bytes and returns their hash.
func writeBigFile(t *testing.T, path string, n int) [32]byte {
	t.Helper()
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestLargeFileLeavesTheLoop(t *testing.T) {
	ts := startServer(t, siteConfig, siteFiles)
	want := writeBigFile(t, filepath.Join(ts.dir, "site", "big.bin"), 8<<20+13)
	c := ts.dial()
	// Pipelined: a small response, the large file, another small one.
	fmt.Fprint(c, "GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\nGET /big.bin HTTP/1.1\r\nHost: x\r\n\r\nGET /b.txt HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	if _, body := readResponse(t, br, "GET"); body != "file a\n" {
		t.Fatalf("first: %q", body)
	}
	resp, body := readResponse(t, br, "GET")
	if resp.StatusCode != 200 || sha256.Sum256([]byte(body)) != want {
		t.Fatalf("big: %d, %d bytes, hash mismatch", resp.StatusCode, len(body))
	}
	if _, body := readResponse(t, br, "GET"); body != "file b\n" {
		t.Fatalf("third: %q", body)
	}
}

func TestGracefulStopCompletesInFlight(t *testing.T) {
	ts := startServer(t, siteConfig, siteFiles)
	want := writeBigFile(t, filepath.Join(ts.dir, "site", "big.bin"), 16<<20)
	idle := ts.dial()
	fmt.Fprint(idle, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
	ibr := bufio.NewReader(idle)
	readResponse(t, ibr, "GET")

	c := ts.dial()
	fmt.Fprint(c, "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	// Read the head and a little of the body, then stop the server while
	// the rest is in flight; read slowly.
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 1<<20)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() {
		ts.stop()
		close(stopped)
	}()
	expectClosed(t, ibr) // idle connections close at once
	// A connection opened while stopping is not served.
	if late, err := net.DialTimeout("tcp", ts.addr, 500*time.Millisecond); err == nil {
		_ = late.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprint(late, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
		expectClosed(t, late)
		late.Close()
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("in-flight body: %v", err)
	}
	h := sha256.Sum256(append(first, rest...))
	if h != want {
		t.Fatalf("in-flight body incomplete: %d bytes", len(first)+len(rest))
	}
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not finish")
	}
}

func TestReloadUnderLoad(t *testing.T) {
	ts := startServer(t, siteConfig, siteFiles)
	file := filepath.Join(ts.dir, "gale.yaml")
	var failures, done atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := client()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := cl.Get(ts.url("/a.txt"))
				if err != nil {
					failures.Add(1)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(body) != "file a\n" {
					failures.Add(1)
				}
				done.Add(1)
			}
		}()
	}
	for i := 0; i < 20; i++ {
		served := done.Load()
		body := fmt.Sprintf("v%d\n", i)
		text := baseListen + strings.Replace(siteConfig, `"hello\n"`, fmt.Sprintf("%q", body), 1)
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ts.srv.Reload(cfg); err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(ts.url("/hello"))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != body {
			t.Fatalf("after reload %d: %q, want %q", i, got, body)
		}
		// The clients are served between two reloads.
		eventually(t, 10*time.Second, "a client's request after the reload", func() bool { return done.Load() > served })
	}
	close(stop)
	wg.Wait()
	if failures.Load() != 0 || done.Load() < 20 {
		t.Fatalf("%d failed requests of %d during reloads", failures.Load(), done.Load())
	}
}

// TestReloadHTTP2Settings: server.http2 applies to connections accepted
// after a reload, so changing it asks for no restart; a reactor key
// changed alongside still does.
func TestReloadHTTP2Settings(t *testing.T) {
	ts := startServer(t, siteConfig, siteFiles)
	file := filepath.Join(ts.dir, "gale.yaml")
	reload := func(server string) []string {
		t.Helper()
		text := baseListen + "server: " + server + "\n" + siteConfig
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		notes, err := ts.srv.Reload(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return notes
	}
	for _, h2 := range []string{
		"{enabled: false}",
		"{max_concurrent_streams: 7, initial_stream_window: 1MiB, initial_connection_window: 64KiB}",
		"{max_frame_size: 1MiB, max_header_list_size: 4KiB, max_requests: 3}",
	} {
		if notes := reload("{http2: " + h2 + "}"); len(notes) != 0 {
			t.Errorf("http2: %s: notes %q, want none", h2, notes)
		}
	}
	if notes := reload("{reuse_port: false, http2: {enabled: false}}"); len(notes) != 1 || !strings.Contains(notes[0], "restart") {
		t.Errorf("reuse_port changed: notes %q, want one asking for a restart", notes)
	}
	resp, err := http.Get(ts.url("/hello"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello\n" {
		t.Fatalf("after the reloads: %q", body)
	}
}

func TestAccessLog(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	ts := startServer(t, fmt.Sprintf("access_log: {path: %q}\n", logPath)+siteConfig, siteFiles)
	c := ts.dial()
	fmt.Fprint(c, "GET /a.txt?q=\"x\" HTTP/1.1\r\nHost: x\r\nUser-Agent: tester\xe9\r\n\r\n")
	readResponse(t, bufio.NewReader(c), "GET")
	ts.stop()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	line := string(data)
	if !strings.Contains(line, `"GET /a.txt?q=\"x\" HTTP/1.1" 200 7 "-" "tester\xe9"`) || !strings.HasPrefix(line, "127.0.0.1 - - [") {
		t.Fatalf("access log line: %q", line)
	}
}

func TestAddressInUseRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	cfg, err := config.ForDirectory(dir, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("New on a used address: %v", err)
	}
}

// A restarted server binds its port again at once, although the
// connections it closed itself are still in TIME_WAIT on that port.
func TestRestartAfterClosedConnections(t *testing.T) {
	ts := startServer(t, siteConfig, siteFiles)
	for i := 0; i < 20; i++ {
		c := ts.dial()
		fmt.Fprint(c, "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		br := bufio.NewReader(c)
		readResponse(t, br, "GET")
		expectClosed(t, br)
	}
	ts.stop()
	cfg, err := config.ForDirectory(filepath.Join(ts.dir, "site"), ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	again := runServer(t, cfg, ts.dir)
	resp, err := http.Get(again.url("/a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}
