package app

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"

	"gale/config"
)

// h3Site is h2Site on a TLS listener that serves HTTP/3 too, with
// access logging on.
const h3Site = `listen:
  - {address: "127.0.0.1:0", http3: true, tls: {certificates: [$CERT]}}
server:
  http3: {max_concurrent_streams: 128}
access_log: {path: access.log, format: combined}
routes:
  - path: /hello
    respond: {status: 200, body: "hello\n", content_type: text/plain}
    headers: {response: {set: {X-Route: hello}}}
  - path: /upload
    match: {methods: [POST]}
    respond: {status: 201, body: "stored\n"}
  - path: /old/
    redirect: {to: "https://example.com/new/", status: 308, keep_path: true}
  - path: /
    headers: {response: {set: {X-Static: "yes"}}}
    static:
      root: ./site
      compress: {encodings: [gzip], min_bytes: 16}
      error_pages: {404: site/404.html}
`

// h3Server runs h3Site with a few files and extra.
func h3Server(t *testing.T, extra map[string]string) *tlsTestServer {
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
	return startTLSServer(t, h3Site, files, nil)
}

// h3Client is an HTTP/3 client (quic-go's http3.Transport) trusting the
// test CA; one QUIC connection per host.
func h3Client(t *testing.T, ts *tlsTestServer) *http.Client {
	tr := &http3.Transport{TLSClientConfig: ts.clientConfig("localhost"), DisableCompression: true}
	t.Cleanup(func() { _ = tr.Close() })
	return &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// h3Get fetches url with c and returns the response and its body.
func h3Get(t *testing.T, c *http.Client, method, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, url, err)
	}
	return resp, body
}

// TestHTTP3Routes serves every local route kind over HTTP/3 with the same
// semantics as HTTP/1.1 and HTTP/2: respond with header rules, redirect,
// static from the cache (hits, misses, validators, ranges, compression,
// error pages), HEAD, 404, OPTIONS * and CONNECT.
func TestHTTP3Routes(t *testing.T) {
	ts := h3Server(t, nil)
	c := h3Client(t, ts)
	base := "https://" + ts.tlsAddr

	resp, body := h3Get(t, c, "GET", base+"/hello")
	if resp.Proto != "HTTP/3.0" || resp.StatusCode != 200 || string(body) != "hello\n" ||
		resp.Header.Get("X-Route") != "hello" || resp.Header.Get("Content-Type") != "text/plain" ||
		resp.Header.Get("Server") != "gale" || resp.Header.Get("Date") == "" || resp.ContentLength != 6 {
		t.Fatalf("respond: %s %d %q %v", resp.Proto, resp.StatusCode, body, resp.Header)
	}

	resp, _ = h3Get(t, c, "GET", base+"/old/a/b?x=1")
	if resp.StatusCode != 308 || resp.Header.Get("Location") != "https://example.com/new/a/b?x=1" {
		t.Fatalf("redirect: %d %v", resp.StatusCode, resp.Header)
	}

	for i := 0; i < 3; i++ { // a miss (loaded off the loop), then hits from the cache
		resp, body = h3Get(t, c, "GET", base+"/app.js")
		if resp.StatusCode != 200 || string(body) != strings.Repeat("console.log('gale');\n", 200) ||
			resp.Header.Get("X-Static") != "yes" || resp.Header.Get("ETag") == "" || resp.Header.Get("Server") != "gale" {
			t.Fatalf("static #%d: %d %d bytes %v", i, resp.StatusCode, len(body), resp.Header)
		}
	}
	etag := resp.Header.Get("ETag")
	resp, body = h3Get(t, c, "GET", base+"/app.js", "If-None-Match", etag)
	if resp.StatusCode != 304 || len(body) != 0 || resp.Header.Get("ETag") != etag {
		t.Fatalf("304: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = h3Get(t, c, "GET", base+"/small.txt", "Range", "bytes=2-4")
	if resp.StatusCode != 206 || string(body) != "234" || resp.Header.Get("Content-Range") != "bytes 2-4/10" {
		t.Fatalf("range: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = h3Get(t, c, "GET", base+"/small.txt", "Range", "bytes=0-1,5-6")
	if resp.StatusCode != 206 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "multipart/byteranges") ||
		!bytes.Contains(body, []byte("01")) || !bytes.Contains(body, []byte("56")) {
		t.Fatalf("multipart range: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	for range 3 { // the gzip variant is made off the loop: asked for, made, then served
		if resp, body = h3Get(t, c, "GET", base+"/app.js", "Accept-Encoding", "gzip"); resp.Header.Get("Content-Encoding") == "gzip" {
			break
		}
		cacheIdle(t, ts.srv)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Vary") != "Accept-Encoding" || len(body) >= 4200 {
		t.Fatalf("gzip: %d %d bytes %v", resp.StatusCode, len(body), resp.Header)
	}
	resp, body = h3Get(t, c, "HEAD", base+"/app.js")
	if resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != 4200 {
		t.Fatalf("HEAD: %d %d %d", resp.StatusCode, len(body), resp.ContentLength)
	}
	resp, body = h3Get(t, c, "GET", base+"/")
	if resp.StatusCode != 200 || string(body) != "<h1>home</h1>\n" {
		t.Fatalf("index: %d %q", resp.StatusCode, body)
	}
	resp, body = h3Get(t, c, "GET", base+"/missing")
	if resp.StatusCode != 404 || string(body) != "not here\n" {
		t.Fatalf("404 page: %d %q", resp.StatusCode, body)
	}
	resp, _ = h3Get(t, c, "GET", base+"/%2e%2e/etc/passwd")
	if resp.StatusCode != 400 && resp.StatusCode != 404 {
		t.Fatalf("climbing path: %d", resp.StatusCode)
	}
	st := ts.srv.Stats()
	if st.H3Requests == 0 || st.H3Conns != 1 || st.H3Requests > st.Requests {
		t.Fatalf("counters: %+v", st)
	}
}

// TestHTTP3AccessLog shows HTTP/3 requests in the access log as
// HTTP/3.0, with their status and body bytes.
func TestHTTP3AccessLog(t *testing.T) {
	ts := h3Server(t, nil)
	c := h3Client(t, ts)
	h3Get(t, c, "GET", "https://"+ts.tlsAddr+"/hello?q=1", "User-Agent", "h3-test")
	ts.stop()
	data, err := os.ReadFile(filepath.Join(ts.dir, "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"GET /hello?q=1 HTTP/3.0" 200 6 "-" "h3-test"`) {
		t.Fatalf("access log:\n%s", data)
	}
}

// TestHTTP3LargeFile downloads a 64 MiB file (streamed from disk off the
// loops) byte-exact, and a range of it.
func TestHTTP3LargeFile(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB over HTTP/3: not in -short")
	}
	big := make([]byte, 64<<20)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	ts := h3Server(t, map[string]string{"big.bin": string(big)})
	c := h3Client(t, ts)
	resp, body := h3Get(t, c, "GET", "https://"+ts.tlsAddr+"/big.bin")
	if resp.StatusCode != 200 || len(body) != len(big) || sha256.Sum256(body) != sha256.Sum256(big) {
		t.Fatalf("big: %d, %d bytes", resp.StatusCode, len(body))
	}
	resp, body = h3Get(t, c, "GET", "https://"+ts.tlsAddr+"/big.bin", "Range", "bytes=1000000-1999999")
	if resp.StatusCode != 206 || !bytes.Equal(body, big[1000000:2000000]) {
		t.Fatalf("big range: %d, %d bytes", resp.StatusCode, len(body))
	}
}

// TestHTTP3Concurrent sends 100 requests at once on one QUIC connection.
func TestHTTP3Concurrent(t *testing.T) {
	ts := h3Server(t, nil)
	c := h3Client(t, ts)
	h3Get(t, c, "GET", "https://"+ts.tlsAddr+"/hello") // one connection, made first
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := 0; i < 100; i++ {
		wg.Go(func() {
			path := "/hello"
			want := "hello\n"
			if i%2 == 1 {
				path, want = "/small.txt", "0123456789"
			}
			resp, err := c.Get("https://" + ts.tlsAddr + path)
			if err != nil {
				errs <- err
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || string(body) != want {
				errs <- fmt.Errorf("%s: %d %q %v", path, resp.StatusCode, body, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := ts.srv.Stats(); st.H3Conns != 1 || st.H3Requests != 101 {
		t.Fatalf("want 101 requests on 1 connection: %+v", st)
	}
}

// TestHTTP3PostBody posts 8 MiB to a route that answers after the body
// ended (streamed through and dropped, never held whole), and a body
// over limits.body_bytes, which is refused with 413.
func TestHTTP3PostBody(t *testing.T) {
	ts := h3Server(t, nil)
	c := h3Client(t, ts)
	body := bytes.Repeat([]byte("0123456789abcdef"), (8<<20)/16)
	resp, err := c.Post("https://"+ts.tlsAddr+"/upload", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || string(got) != "stored\n" {
		t.Fatalf("post: %d %q", resp.StatusCode, got)
	}
	big := io.LimitReader(zeroReader{}, 11<<20) // past the 10 MiB default, no length announced
	resp, err = c.Post("https://"+ts.tlsAddr+"/upload", "application/octet-stream", big)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("oversized post: %d", resp.StatusCode)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestHTTP3AltSvc discovers HTTP/3 the way a browser does: an HTTP/2
// response (and an HTTP/1.1 one) of the TLS listener names h3 on its
// port in Alt-Svc, and a request to the advertised port over HTTP/3 is
// answered.
func TestHTTP3AltSvc(t *testing.T) {
	ts := h3Server(t, nil)
	_, port, _ := strings.Cut(ts.tlsAddr, ":")
	want := `h3=":` + port + `"; ma=86400`
	for _, h2 := range []bool{true, false} {
		tr := &http.Transport{TLSClientConfig: ts.clientConfig("localhost")}
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetHTTP1(!h2)
		tr.Protocols.SetHTTP2(h2)
		c := &http.Client{Transport: tr}
		for _, path := range []string{"/hello", "/app.js", "/app.js"} { // respond, static miss and hit
			resp, err := c.Get("https://" + ts.tlsAddr + path)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if (resp.ProtoMajor == 2) != h2 || resp.Header.Get("Alt-Svc") != want {
				t.Fatalf("%s %s: Alt-Svc %q, want %q", resp.Proto, path, resp.Header.Get("Alt-Svc"), want)
			}
		}
		tr.CloseIdleConnections()
	}
	c := h3Client(t, ts)
	resp, body := h3Get(t, c, "GET", "https://127.0.0.1:"+port+"/hello")
	if resp.ProtoMajor != 3 || string(body) != "hello\n" || resp.Header.Get("Alt-Svc") != "" {
		t.Fatalf("h3 at the advertised port: %s %q %v", resp.Proto, body, resp.Header)
	}
}

// TestHTTP3GracefulStop stops the server in the middle of a large
// download over HTTP/3: the download completes byte-exact, and Stop
// returns once it did.
func TestHTTP3GracefulStop(t *testing.T) {
	big := bytes.Repeat([]byte("gale-h3-"), (16<<20)/8)
	ts := h3Server(t, map[string]string{"big.bin": string(big)})
	c := h3Client(t, ts)
	resp, err := c.Get("https://" + ts.tlsAddr + "/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 1<<20)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		stopped <- ts.srv.Stop(ctx)
	}()
	rest, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(append(head, rest...), big) {
		t.Fatalf("download across the stop: %v, %d bytes", err, len(head)+len(rest))
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Stop: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Stop did not return")
	}
}

// TestHTTP3CertificateReload: the QUIC handshakes use the TLS listener's
// certificates, and a reload (here the SIGHUP path, with files of other
// names) reaches new HTTP/3 connections at once; TLS is 1.3.
func TestHTTP3CertificateReload(t *testing.T) {
	ts := h3Server(t, nil)
	resp, _ := h3Get(t, h3Client(t, ts), "GET", "https://"+ts.tlsAddr+"/hello")
	if resp.TLS == nil || resp.TLS.Version != tls.VersionTLS13 || resp.TLS.NegotiatedProtocol != "h3" {
		t.Fatalf("TLS state %+v", resp.TLS)
	}
	first := resp.TLS.PeerCertificates[0].SerialNumber
	leaf := ts.ca.issue(ts.dir, "next", "localhost", "127.0.0.1")
	file := filepath.Join(ts.dir, "gale.yaml")
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	next := strings.ReplaceAll(string(text), "{cert: cert.pem, key: cert.key}", "{cert: next.pem, key: next.key}")
	if err := os.WriteFile(file, []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if notes, err := ts.srv.Reload(cfg); err != nil || len(notes) != 0 {
		t.Fatalf("Reload: %v %v", notes, err)
	}
	resp, _ = h3Get(t, h3Client(t, ts), "GET", "https://"+ts.tlsAddr+"/hello")
	if got := resp.TLS.PeerCertificates[0].SerialNumber; got.Cmp(leaf.SerialNumber) != 0 || got.Cmp(first) == 0 {
		t.Fatalf("serial %v after the reload, want %v", got, leaf.SerialNumber)
	}
}

// TestHTTP3Proxy proxies HTTP/3 requests to an HTTP/1.1 upstream: a GET
// with the forwarding fields, an 8 MiB POST body streamed upstream and
// checked by hash, a 32 MiB download read slowly at first (paced off the
// loop) checked byte for byte, 50 concurrent requests on one connection,
// a local route beside them with a body it does not read, and an
// upstream that dies mid-body (the stream is reset).
func TestHTTP3Proxy(t *testing.T) {
	if testing.Short() {
		t.Skip("40 MiB through HTTP/3: not in -short")
	}
	t.Parallel()
	big := make([]byte, 32<<20)
	for i := range big {
		big[i] = byte(i*13 + i>>12)
	}
	bigSum := sha256.Sum256(big)
	mux := http.NewServeMux()
	mux.HandleFunc("/up/info", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s xfp=%s xfh=%s", r.Method, r.URL.RequestURI(), r.Header.Get("X-Forwarded-Proto"), r.Header.Get("X-Forwarded-Host"))
	})
	mux.HandleFunc("/up/sum", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
	})
	mux.HandleFunc("/up/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(big)))
		_, _ = w.Write(big)
	})
	mux.HandleFunc("/up/trailers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		_, _ = io.WriteString(w, "with trailers\n")
		w.(http.Flusher).Flush() // chunked
		w.Header().Set("X-Checksum", "c0ffee")
	})
	mux.HandleFunc("/up/cut", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		_, _ = w.Write(make([]byte, 1000))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the upstream dies mid-body
	})
	up := netUpstream(t, mux)
	ts := startTLSServer(t, `listen:
  - {address: "127.0.0.1:0", http3: true, tls: {certificates: [$CERT]}}
routes:
  - path: /up/
    proxy: {to: ["`+up+`"]}
  - path: /auth/
    basic_auth: {users: {alice: "$2a$04$FxxBKMKXSGAv6nRhKjp.eemloTS3TBOIvSnAeNuJOPZhOM8Xb0wiu"}}
    proxy: {to: ["`+up+`"], rewrite: /up/}
  - path: /
    respond: {status: 200, body: "local\n"}
`, nil, nil)
	c := h3Client(t, ts)
	base := "https://" + ts.tlsAddr
	resp, body := h3Get(t, c, "GET", base+"/up/info?x=1")
	if resp.ProtoMajor != 3 || string(body) != "GET /up/info?x=1 xfp=https xfh="+ts.tlsAddr {
		t.Fatalf("info: %s %d %q", resp.Proto, resp.StatusCode, body)
	}
	upload := make([]byte, 8<<20)
	for i := range upload {
		upload[i] = byte(i * 7)
	}
	upSum := sha256.Sum256(upload)
	r, err := c.Post(base+"/up/sum", "application/octet-stream", bytes.NewReader(upload))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(r.Body)
	r.Body.Close()
	if want := fmt.Sprintf("%d %x", len(upload), upSum); r.StatusCode != 200 || string(body) != want {
		t.Fatalf("8 MiB POST: %d %q, want %q", r.StatusCode, body, want)
	}
	paced := ts.srv.ProxyStats().Paced
	r, err = c.Get(base + "/up/big")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	first := make([]byte, 1<<20)
	n, _ := io.ReadFull(r.Body, first)
	h.Write(first[:n])
	// Read on once the body has outrun the client and is paced off the
	// loop.
	eventually(t, 10*time.Second, "the body to be paced off the loop", func() bool { return ts.srv.ProxyStats().Paced > paced })
	m, err := io.Copy(h, r.Body)
	r.Body.Close()
	if err != nil || int(m)+n != len(big) || [32]byte(h.Sum(nil)) != bigSum {
		t.Fatalf("32 MiB download: %d bytes, %v", int(m)+n, err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, err := c.Get(fmt.Sprintf("%s/up/info?i=%d", base, i))
			if err != nil {
				errs <- err
				return
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if !strings.HasPrefix(string(b), fmt.Sprintf("GET /up/info?i=%d ", i)) {
				errs <- fmt.Errorf("%d: %d %q", i, r.StatusCode, b)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	r, err = c.Post(base+"/local", "text/plain", strings.NewReader(strings.Repeat("x", 100000)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || string(body) != "local\n" {
		t.Fatalf("local route with a body: %d %q", r.StatusCode, body)
	}
	// basic_auth in front of the proxy, with bodies: a 401 from the
	// verification, then the upload once it passes.
	for pw, want := range map[string]int{"wrong": 401, "secret": 200} {
		req, _ := http.NewRequest("POST", base+"/auth/sum", bytes.NewReader(upload[:1<<20]))
		req.SetBasicAuth("alice", pw)
		r, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != want {
			t.Errorf("basic auth, password %q: %d, want %d", pw, r.StatusCode, want)
		}
	}
	if resp, body := h3Get(t, c, "GET", base+"/up/trailers"); resp.StatusCode != 200 || string(body) != "with trailers\n" || resp.Trailer.Get("X-Checksum") != "c0ffee" {
		t.Errorf("trailers: %d %q %v", resp.StatusCode, body, resp.Trailer)
	}
	r, err = c.Get(base + "/up/cut")
	if err == nil {
		_, err = io.ReadAll(r.Body)
		r.Body.Close()
	}
	if err == nil {
		t.Fatal("a body the upstream cut arrived as a whole one")
	}
	if resp, body := h3Get(t, c, "GET", base+"/up/info"); resp.StatusCode != 200 || !strings.HasPrefix(string(body), "GET /up/info ") {
		t.Fatalf("after the cut: %d %q", resp.StatusCode, body)
	}
}

// TestHTTP3Curl fetches over HTTP/3 with curl --http3-only, when the
// installed curl was built with HTTP/3 (Debian 12's curl 7.88 was not:
// the test then skips).
func TestHTTP3Curl(t *testing.T) {
	out, err := exec.Command("curl", "--version").Output()
	if err != nil {
		t.Skip("curl is not installed")
	}
	if !strings.Contains(string(out), "HTTP3") {
		t.Skip("the installed curl has no HTTP/3 support (its Features lack HTTP3)")
	}
	ts := h3Server(t, nil)
	ca := filepath.Join(ts.dir, "ca.pem")
	if err := os.WriteFile(ca, ts.ca.rootPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(ts.tlsAddr, ":")
	got, err := exec.Command("curl", "-sS", "--http3-only", "--cacert", ca,
		"--resolve", "localhost:"+port+":127.0.0.1", "-w", " %{http_version}",
		"https://localhost:"+port+"/hello").CombinedOutput()
	if err != nil || string(got) != "hello\n 3" {
		t.Fatalf("curl: %q %v", got, err)
	}
}
