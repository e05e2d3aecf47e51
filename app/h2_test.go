package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// h2Site is served by the HTTP/2 tests over TLS (the first listener) and
// cleartext h2c with prior knowledge (the second, which speaks HTTP/1.1
// too; the third speaks h2c only).
const h2Site = `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT]}}
  - "127.0.0.1:0"
  - {address: "127.0.0.1:0", protocols: [h2c]}
routes:
  - path: /hello
    respond: {status: 200, body: "hello\n", content_type: text/plain}
    headers: {response: {set: {X-Route: hello}}}
  - path: /old/
    redirect: {to: "https://example.com/new/", status: 308, keep_path: true}
  - path: /
    headers: {response: {set: {X-Static: "yes"}}}
    static:
      root: ./site
      compress: {encodings: [gzip], min_bytes: 16}
      error_pages: {404: site/404.html}
`

// h2Server runs h2Site with a few files; big files are written too.
func h2Server(t *testing.T, extra map[string]string) *tlsTestServer {
	t.Helper()
	files := map[string]string{
		"index.html": "<h1>home</h1>\n",
		"app.js":     strings.Repeat("console.log('gale');\n", 200),
		"404.html":   "not here\n",
		"small.txt":  "0123456789",
	}
	for k, v := range extra {
		files[k] = v
	}
	return startTLSServer(t, h2Site, files, nil)
}

// plainAddr is the plain listener of h2Server that speaks HTTP/1.1 and h2c.
func (ts *tlsTestServer) plainAddr() string { return ts.srv.Addrs()[1] }

// h2cOnlyAddr is the plain listener of h2Server that speaks h2c only.
func (ts *tlsTestServer) h2cOnlyAddr() string { return ts.srv.Addrs()[2] }

// h2Clients returns an HTTP/2 client over TLS (ALPN h2) and one over
// cleartext with prior knowledge, each keeping one connection, with the
// base URL of each.
func h2Clients(t *testing.T, ts *tlsTestServer) map[string]struct {
	c    *http.Client
	base string
} {
	tlsTr := &http.Transport{TLSClientConfig: ts.clientConfig("localhost"), ForceAttemptHTTP2: true, DisableCompression: true}
	tlsTr.Protocols = new(http.Protocols)
	tlsTr.Protocols.SetHTTP2(true)
	h2cTr := &http.Transport{DisableCompression: true}
	h2cTr.Protocols = new(http.Protocols)
	h2cTr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tlsTr.CloseIdleConnections)
	t.Cleanup(h2cTr.CloseIdleConnections)
	return map[string]struct {
		c    *http.Client
		base string
	}{
		"tls": {&http.Client{Transport: tlsTr, Timeout: 20 * time.Second, CheckRedirect: noRedirects}, "https://" + ts.tlsAddr},
		"h2c": {&http.Client{Transport: h2cTr, Timeout: 20 * time.Second, CheckRedirect: noRedirects}, "http://" + ts.plainAddr()},
	}
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// get sends one request and returns the response with its body read.
func h2get(t *testing.T, c *http.Client, method, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, url, err)
	}
	if resp.ProtoMajor != 2 {
		t.Fatalf("%s %s: protocol %s, want HTTP/2.0", method, url, resp.Proto)
	}
	return resp, string(b)
}

// TestH2RouteKinds serves every local route kind over h2 (TLS and h2c)
// with the semantics HTTP/1.1 has: respond with header rules, redirect,
// static with the cache, validators, ranges, compressed variants, HEAD,
// error pages.
func TestH2RouteKinds(t *testing.T) {
	t.Parallel()
	ts := h2Server(t, nil)
	for name, cl := range h2Clients(t, ts) {
		t.Run(name, func(t *testing.T) {
			c, base := cl.c, cl.base
			resp, body := h2get(t, c, "GET", base+"/hello", nil)
			if resp.StatusCode != 200 || body != "hello\n" || resp.Header.Get("X-Route") != "hello" ||
				resp.Header.Get("Content-Type") != "text/plain" || resp.Header.Get("Date") == "" || resp.Header.Get("Server") != "gale" {
				t.Fatalf("respond: %d %q %v", resp.StatusCode, body, resp.Header)
			}
			resp, _ = h2get(t, c, "GET", base+"/old/a/b?x=1", nil)
			if resp.StatusCode != 308 || resp.Header.Get("Location") != "https://example.com/new/a/b?x=1" {
				t.Fatalf("redirect: %d %v", resp.StatusCode, resp.Header)
			}
			for i := 0; i < 3; i++ { // a miss, then cached hits
				resp, body = h2get(t, c, "GET", base+"/small.txt", nil)
				if resp.StatusCode != 200 || body != "0123456789" || resp.Header.Get("X-Static") != "yes" ||
					resp.Header.Get("ETag") == "" || resp.ContentLength != 10 {
					t.Fatalf("static %d: %d %q %v", i, resp.StatusCode, body, resp.Header)
				}
			}
			etag := resp.Header.Get("ETag")
			resp, body = h2get(t, c, "GET", base+"/small.txt", map[string]string{"If-None-Match": etag})
			if resp.StatusCode != 304 || body != "" {
				t.Fatalf("304: %d %q", resp.StatusCode, body)
			}
			resp, _ = h2get(t, c, "GET", base+"/small.txt", map[string]string{"If-Match": `"nope"`})
			if resp.StatusCode != 412 {
				t.Fatalf("412: %d", resp.StatusCode)
			}
			resp, body = h2get(t, c, "GET", base+"/small.txt", map[string]string{"Range": "bytes=2-4"})
			if resp.StatusCode != 206 || body != "234" || resp.Header.Get("Content-Range") != "bytes 2-4/10" {
				t.Fatalf("206: %d %q %v", resp.StatusCode, body, resp.Header)
			}
			resp, body = h2get(t, c, "GET", base+"/small.txt", map[string]string{"Range": "bytes=0-0,5-5"})
			if resp.StatusCode != 206 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "multipart/byteranges") || !strings.Contains(body, "\r\n0\r\n") {
				t.Fatalf("multipart: %d %q %v", resp.StatusCode, body, resp.Header)
			}
			resp, _ = h2get(t, c, "GET", base+"/small.txt", map[string]string{"Range": "bytes=50-60"})
			if resp.StatusCode != 416 || resp.Header.Get("Content-Range") != "bytes */10" {
				t.Fatalf("416: %d %v", resp.StatusCode, resp.Header)
			}
			want := strings.Repeat("console.log('gale');\n", 200)
			var gz *http.Response
			for range 3 { // the gzip variant is made off the loop: asked for, made, then served
				gz, body = h2get(t, c, "GET", base+"/app.js", map[string]string{"Accept-Encoding": "gzip"})
				if gz.Header.Get("Content-Encoding") == "gzip" {
					break
				}
				if body != want {
					t.Fatalf("identity body differs")
				}
				cacheIdle(t, ts.srv)
			}
			if gz.Header.Get("Content-Encoding") != "gzip" || gz.Header.Get("Vary") != "Accept-Encoding" {
				t.Fatalf("gzip: %v", gz.Header)
			}
			resp, body = h2get(t, c, "HEAD", base+"/small.txt", nil)
			if resp.StatusCode != 200 || body != "" || resp.ContentLength != 10 {
				t.Fatalf("HEAD: %d %q %d", resp.StatusCode, body, resp.ContentLength)
			}
			resp, body = h2get(t, c, "GET", base+"/missing", nil)
			if resp.StatusCode != 404 || body != "not here\n" {
				t.Fatalf("error page: %d %q", resp.StatusCode, body)
			}
			resp, _ = h2get(t, c, "GET", base+"/a/../../etc/passwd", nil)
			if resp.StatusCode != 404 && resp.StatusCode != 400 {
				t.Fatalf("climb: %d", resp.StatusCode)
			}
			for _, f := range []string{"Connection", "Keep-Alive", "Transfer-Encoding", "Upgrade"} {
				if v := resp.Header.Get(f); v != "" {
					t.Fatalf("connection-specific %s: %q", f, v)
				}
			}
		})
	}
	st := ts.srv.Stats()
	if st.H2Conns != 2 || st.H2Requests == 0 {
		t.Fatalf("stats: %d h2 connections, %d h2 requests", st.H2Conns, st.H2Requests)
	}
}

// TestH2ConcurrentStreams runs 100 requests at once on one connection.
func TestH2ConcurrentStreams(t *testing.T) {
	t.Parallel()
	ts := h2Server(t, map[string]string{"mid.bin": strings.Repeat("m", 100<<10)})
	for name, cl := range h2Clients(t, ts) {
		t.Run(name, func(t *testing.T) {
			h2get(t, cl.c, "GET", cl.base+"/hello", nil) // one connection, then 100 streams on it
			var wg sync.WaitGroup
			errs := make(chan error, 100)
			for i := 0; i < 100; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					path := "/hello"
					if i%3 == 0 {
						path = "/mid.bin"
					}
					resp, err := cl.c.Get(cl.base + path)
					if err != nil {
						errs <- err
						return
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != 200 || (path == "/hello" && string(b) != "hello\n") || (path != "/hello" && len(b) != 100<<10) {
						errs <- fmt.Errorf("%s: %d %d bytes %v", path, resp.StatusCode, len(b), err)
					}
				}(i)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
	if st := ts.srv.Stats(); st.H2Conns != 2 {
		t.Fatalf("%d HTTP/2 connections, want 2 (one per client)", st.H2Conns)
	}
}

// TestH2LargeFileSmallWindow downloads a 64 MiB file through a 16 KiB
// stream window: the body is produced as the client's WINDOW_UPDATEs
// arrive, and arrives whole.
func TestH2LargeFileSmallWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB through a 16 KiB window: not in -short")
	}
	t.Parallel()
	ts := h2Server(t, nil)
	big := bytes.Repeat([]byte("0123456789abcdef"), 4<<20) // 64 MiB
	if err := os.WriteFile(filepath.Join(ts.dir, "site", "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, cl := range h2Clients(t, ts) {
		t.Run(name, func(t *testing.T) {
			tr := cl.c.Transport.(*http.Transport).Clone()
			tr.HTTP2 = &http.HTTP2Config{MaxReceiveBufferPerStream: 16 << 10, MaxReceiveBufferPerConnection: 64 << 10}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: 60 * time.Second}
			resp, err := c.Get(cl.base + "/big.bin")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil || !bytes.Equal(got, big) || resp.ProtoMajor != 2 {
				t.Fatalf("%d of %d bytes (equal %v), %s, %v", len(got), len(big), bytes.Equal(got, big), resp.Proto, err)
			}
		})
	}
}

// TestH2Curl speaks to gale with curl --http2 over TLS and
// --http2-prior-knowledge over cleartext.
func TestH2Curl(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed (apt-get install curl)")
	}
	ts := h2Server(t, nil)
	ca := filepath.Join(ts.dir, "ca.pem")
	if err := os.WriteFile(ca, ts.ca.rootPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ts.tlsAddr)
	// Two requests on one connection over TLS; over h2c one per run, since
	// curl 7.88 fails to reuse a prior-knowledge connection (it does so
	// against nginx as well).
	runs := map[string][]string{
		"tls":   {"--http2", "--cacert", ca, "--resolve", "localhost:" + port + ":127.0.0.1", "https://localhost:" + port + "/hello", "https://localhost:" + port + "/small.txt"},
		"h2c":   {"--http2-prior-knowledge", "http://" + ts.plainAddr() + "/hello"},
		"h2c-2": {"--http2-prior-knowledge", "http://" + ts.plainAddr() + "/small.txt"},
	}
	want := map[string]string{"tls": "hello\n|2|200\n0123456789|2|200\n", "h2c": "hello\n|2|200\n", "h2c-2": "0123456789|2|200\n"}
	for name, args := range runs {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, curl, append([]string{"-sS", "-w", "|%{http_version}|%{http_code}\\n"}, args...)...).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s: %v: %s", name, err, out)
		}
		if got := string(out); got != want[name] {
			t.Fatalf("%s: %q", name, got)
		}
	}
}

// TestH2Spec runs h2spec's conformance suite (RFC 9113 and RFC 7541)
// against the TLS listener and the h2c-only one (protocols: [h2c]); every
// case must pass. The h2c case needs a listener without HTTP/1.1: h2spec
// checks that an invalid connection preface is closed unanswered, while a
// listener that speaks both must answer it as the HTTP/1.1 request it may
// be.
func TestH2Spec(t *testing.T) {
	bin, err := exec.LookPath("h2spec")
	if err != nil {
		if gp := filepath.Join(os.Getenv("HOME"), "go", "bin", "h2spec"); fileExists(gp) {
			bin = gp
		} else {
			t.Skip("h2spec not installed (go install github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible)")
		}
	}
	ts := h2Server(t, nil)
	for name, args := range map[string][]string{
		"tls": {"-t", "-k", "-h", "127.0.0.1", "-p", portOf(ts.tlsAddr)},
		"h2c": {"-h", "127.0.0.1", "-p", portOf(ts.h2cOnlyAddr())},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		out, err := exec.CommandContext(ctx, bin, append(args, "-o", "2", "-P", "/hello")...).CombinedOutput()
		cancel()
		summary := string(out)
		if i := strings.LastIndex(summary, "tests,"); i >= 0 {
			summary = summary[strings.LastIndex(summary[:i], "\n")+1:]
		}
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, failures(string(out)))
			continue
		}
		t.Logf("%s: %s", name, strings.TrimSpace(summary))
	}
}

// failures keeps the failed cases of h2spec's output.
func failures(out string) string {
	if i := strings.Index(out, "Failures:"); i >= 0 {
		return out[i:]
	}
	return out
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

var _ = tls.VersionTLS13
