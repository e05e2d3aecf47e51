package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// h2ProxySite proxies everything under /up/ to $UP (prefix kept), on a
// TLS listener (h2), a plain one (h1 and h2c) and an h2c-only one.
const h2ProxySite = `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT]}}
  - "127.0.0.1:0"
  - {address: "127.0.0.1:0", protocols: [h2c]}
routes:
  - path: /up/
    proxy: {to: ["$UP"], timeouts: {response_header: 2s}}
  - path: /
    respond: {status: 200, body: "local\n"}
`

// h2ProxyServer starts gale with h2ProxySite in front of upstream.
func h2ProxyServer(t *testing.T, upstream string) *tlsTestServer {
	t.Helper()
	return startTLSServer(t, strings.ReplaceAll(h2ProxySite, "$UP", upstream), nil, nil)
}

// netUpstream serves h on 127.0.0.1 with net/http (HTTP/1.1) for the
// test's life and returns its address.
func netUpstream(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// TestH2ProxyForwards proxies HTTP/2 requests, over TLS and h2c, to an
// HTTP/1.1 upstream: the request is rebuilt from the pseudo-headers with
// the forwarding fields, bodies of known and unknown length go upstream
// with the matching framing, and responses of every framing come back
// whole, with the upstream's status and fields.
func TestH2ProxyForwards(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/up/info", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s %s host=%s xfh=%s xfp=%s xff=%s te=%v cl=%d\n", r.Method, r.URL.RequestURI(), r.Proto,
			r.Host, r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-Forwarded-Proto"), r.Header.Get("X-Forwarded-For"),
			r.TransferEncoding, r.ContentLength)
	})
	mux.HandleFunc("/up/echo", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("X-Framing", fmt.Sprintf("te=%v cl=%d", r.TransferEncoding, r.ContentLength))
		w.Header().Set("X-Sum", fmt.Sprintf("%x", sha256.Sum256(body)))
		_, _ = w.Write(body)
	})
	mux.HandleFunc("/up/stream", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 100; i++ {
			fmt.Fprintf(w, "line %03d %s\n", i, strings.Repeat("x", 1000))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/up/empty", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Empty", "yes")
		w.WriteHeader(204)
	})
	mux.HandleFunc("/up/hints", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</app.js>; rel=preload")
		w.WriteHeader(103)
		w.Header().Del("Link")
		_, _ = io.WriteString(w, "final\n")
	})
	mux.HandleFunc("/up/trailers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum, Content-Type")
		_, _ = io.WriteString(w, "with trailers\n")
		w.(http.Flusher).Flush() // chunked
		w.Header().Set("X-Checksum", "c0ffee")
		w.Header().Set("Content-Type", "text/evil") // not allowed in a trailer: dropped
	})
	mux.HandleFunc("/up/expect", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body) // net/http sends 100 Continue on the first read
		fmt.Fprintf(w, "expect=%s %d", r.Header.Get("Expect"), len(body))
	})
	mux.HandleFunc("/up/notmod", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		w.WriteHeader(304)
	})
	upAddr := netUpstream(t, mux)
	ts := h2ProxyServer(t, upAddr)
	for name, cl := range h2Clients(t, ts) {
		proto := map[string]string{"tls": "https", "h2c": "http"}[name]
		resp, body := h2get(t, cl.c, "GET", cl.base+"/up/info?q=1", nil)
		authority := strings.TrimPrefix(strings.TrimPrefix(cl.base, "https://"), "http://")
		want := "GET /up/info?q=1 HTTP/1.1 host=" + upAddr + " xfh=" + authority + " xfp=" + proto + " xff=127.0.0.1 te=[] cl=0\n"
		if resp.ProtoMajor != 2 || resp.StatusCode != 200 || body != want {
			t.Errorf("%s: info: %s %d %q, want HTTP/2 200 %q", name, resp.Proto, resp.StatusCode, body, want)
		}
		big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
		sum := fmt.Sprintf("%x", sha256.Sum256(big))
		for _, known := range []bool{true, false} {
			var rd io.Reader = bytes.NewReader(big)
			if !known {
				rd = io.MultiReader(rd) // no length: the client sends none
			}
			req, _ := http.NewRequest("POST", cl.base+"/up/echo", rd)
			resp, err := cl.c.Do(req)
			if err != nil {
				t.Fatalf("%s: echo: %v", name, err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			framing := "te=[] cl=1048576"
			if !known {
				framing = "te=[chunked] cl=-1"
			}
			if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Sum") != sum || !bytes.Equal(got, big) ||
				resp.Header.Get("X-Framing") != framing {
				t.Errorf("%s: echo (length known %v): %d %v, %d bytes, framing %q want %q", name, known, resp.StatusCode, err,
					len(got), resp.Header.Get("X-Framing"), framing)
			}
		}
		resp, body = h2get(t, cl.c, "GET", cl.base+"/up/stream", nil)
		if resp.StatusCode != 200 || len(body) != 100*1010 || !strings.HasPrefix(body, "line 000 ") || !strings.Contains(body, "line 099 ") {
			t.Errorf("%s: stream: %d, %d bytes", name, resp.StatusCode, len(body))
		}
		resp, body = h2get(t, cl.c, "GET", cl.base+"/up/empty", nil)
		if resp.StatusCode != 204 || body != "" || resp.Header.Get("X-Empty") != "yes" {
			t.Errorf("%s: 204: %d %q %v", name, resp.StatusCode, body, resp.Header)
		}
		resp, body = h2get(t, cl.c, "GET", cl.base+"/up/notmod", nil)
		if resp.StatusCode != 304 || body != "" || resp.Header.Get("Etag") != `"v1"` {
			t.Errorf("%s: 304: %d %q %v", name, resp.StatusCode, body, resp.Header)
		}
		var interim []string
		trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			interim = append(interim, fmt.Sprint(code, " ", h.Get("Link")))
			return nil
		}}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", cl.base+"/up/hints", nil)
		if resp, err := cl.c.Do(req); err != nil {
			t.Errorf("%s: hints: %v", name, err)
		} else {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != "final\n" || len(interim) != 1 || interim[0] != "103 </app.js>; rel=preload" {
				t.Errorf("%s: hints: %d %q, interim %q", name, resp.StatusCode, b, interim)
			}
		}
		resp, body = h2get(t, cl.c, "GET", cl.base+"/up/trailers", nil)
		if resp.StatusCode != 200 || body != "with trailers\n" || resp.Trailer.Get("X-Checksum") != "c0ffee" || resp.Trailer.Get("Content-Type") != "" {
			t.Errorf("%s: trailers: %d %q %v", name, resp.StatusCode, body, resp.Trailer)
		}
		ereq, _ := http.NewRequest("PUT", cl.base+"/up/expect", strings.NewReader(strings.Repeat("e", 5000)))
		ereq.Header.Set("Expect", "100-continue")
		if r, err := cl.c.Do(ereq); err != nil {
			t.Errorf("%s: expect: %v", name, err)
		} else {
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if r.StatusCode != 200 || string(b) != "expect=100-continue 5000" {
				t.Errorf("%s: expect: %d %q", name, r.StatusCode, b)
			}
		}
		resp, body = h2get(t, cl.c, "HEAD", cl.base+"/up/info", nil)
		if resp.StatusCode != 200 || body != "" {
			t.Errorf("%s: HEAD: %d %q", name, resp.StatusCode, body)
		}
		resp, body = h2get(t, cl.c, "GET", cl.base+"/local", nil)
		if resp.StatusCode != 200 || body != "local\n" {
			t.Errorf("%s: a local route beside the proxy: %d %q", name, resp.StatusCode, body)
		}
	}
}

// TestH2ProxyConcurrent sends 100 requests at once on one HTTP/2
// connection, half of them with bodies: each is answered with its own
// body.
func TestH2ProxyConcurrent(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/up/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s:%s", r.URL.Path, body)
	})
	ts := h2ProxyServer(t, netUpstream(t, mux))
	for name, cl := range h2Clients(t, ts) {
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				var rd io.Reader
				method := "GET"
				if i%2 == 1 {
					method, rd = "POST", strings.NewReader(strings.Repeat(fmt.Sprint(i), 1000))
				}
				req, _ := http.NewRequest(method, fmt.Sprintf("%s/up/%d", cl.base, i), rd)
				resp, err := cl.c.Do(req)
				if err != nil {
					errs <- err
					return
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := fmt.Sprintf("/up/%d:", i)
				if i%2 == 1 {
					want += strings.Repeat(fmt.Sprint(i), 1000)
				}
				if err != nil || resp.ProtoMajor != 2 || string(body) != want {
					errs <- fmt.Errorf("%d: %s %v %.40q", i, resp.Proto, err, body)
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestH2ProxyLargeDownload downloads 64 MiB through the proxy over
// HTTP/2, read slowly at first so that the body outruns the client and is
// paced off the loop, and checks every byte; the connection then serves
// another request.
func TestH2ProxyLargeDownload(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB through the proxy: not in -short")
	}
	t.Parallel()
	big := make([]byte, 64<<20)
	for i := range big {
		big[i] = byte(i*7 + i>>16)
	}
	sum := sha256.Sum256(big)
	mux := http.NewServeMux()
	mux.HandleFunc("/up/big", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
		}
		_, _ = w.Write(big)
	})
	mux.HandleFunc("/up/small", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "small\n") })
	ts := h2ProxyServer(t, netUpstream(t, mux))
	for name, cl := range h2Clients(t, ts) {
		for _, q := range []string{"", "?chunked=1"} {
			paced := ts.srv.ProxyStats().Paced
			resp, err := cl.c.Get(cl.base + "/up/big" + q)
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.New()
			first := make([]byte, 1<<20)
			n, _ := io.ReadFull(resp.Body, first)
			h.Write(first[:n])
			// Read on once the body has outrun the client and is paced
			// off the loop.
			eventually(t, 10*time.Second, "the body to be paced off the loop", func() bool { return ts.srv.ProxyStats().Paced > paced })
			m, err := io.Copy(h, resp.Body)
			resp.Body.Close()
			if err != nil || int(m)+n != len(big) || [32]byte(h.Sum(nil)) != sum {
				t.Fatalf("%s%s: %d bytes, %v", name, q, int(m)+n, err)
			}
			if resp, body := h2get(t, cl.c, "GET", cl.base+"/up/small", nil); resp.StatusCode != 200 || body != "small\n" {
				t.Fatalf("%s: after the download: %d %q", name, resp.StatusCode, body)
			}
		}
	}
}

// TestProxyMaxConns: with max_conns, 100 concurrent HTTP/2 streams share
// two upstream connections (requests beyond wait for one), every request
// is answered, and a request that waits longer than the connect timeout
// gets a 504 without reaching the upstream.
func TestProxyMaxConns(t *testing.T) {
	if testing.Short() {
		t.Skip("100 streams and a connect timeout: not in -short")
	}
	t.Parallel()
	var mu sync.Mutex
	conns := map[string]bool{}
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/up/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		fmt.Fprint(w, r.URL.Path)
	})
	mux.HandleFunc("/up/hold", func(w http.ResponseWriter, r *http.Request) { <-release })
	up := netUpstream(t, mux)
	yaml := `listen: ["127.0.0.1:0"]
server: {event_loops: 1}
routes:
  - path: /up/
    proxy: {to: ["` + up + `"], max_conns: 2, timeouts: {connect: 3s}}
`
	ts := startServer(t, yaml, nil)
	c := h2cClient(t)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			resp, err := c.Get(ts.url(fmt.Sprintf("/up/%d", i)))
			if err != nil {
				errs <- err
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != fmt.Sprintf("/up/%d", i) {
				errs <- fmt.Errorf("%d: %d %q", i, resp.StatusCode, body)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	mu.Lock()
	n := len(conns)
	mu.Unlock()
	if n > 2 {
		t.Errorf("the upstream saw %d connections, want at most 2", n)
	}
	if ts.srv.ProxyStats().Queued == 0 {
		t.Errorf("no request waited for a connection")
	}
	// Both connections held: a third request waits past the connect
	// timeout.
	held := make(chan *http.Response, 2)
	for range 2 {
		go func() {
			resp, err := c.Get(ts.url("/up/hold"))
			if err == nil {
				held <- resp
			}
		}()
	}
	eventually(t, 5*time.Second, "two held requests", func() bool { return ts.srv.ProxyStats().Load == 2 })
	resp, err := c.Get(ts.url("/up/third"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 504 {
		t.Errorf("a request waiting past the connect timeout: %d, want 504", resp.StatusCode)
	}
	close(release)
	for range 2 {
		if r := <-held; r.StatusCode != 200 {
			t.Errorf("held request: %d", r.StatusCode)
		}
	}
}

// TestH2ProxyTools drives the proxy over HTTP/2 with curl (--http2 over
// TLS, --http2-prior-knowledge over cleartext) and h2load (100 streams at
// once on each of 4 connections, every request a success); each skips
// when the tool is missing.
func TestH2ProxyTools(t *testing.T) {
	if testing.Short() {
		t.Skip("curl and h2load at load: not in -short")
	}
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/up/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %d", r.Method, r.URL.Path, len(body))
	})
	ts := h2ProxyServer(t, netUpstream(t, mux))
	if curl, err := exec.LookPath("curl"); err != nil {
		t.Log("curl not installed (apt-get install curl): skipped")
	} else {
		ca := filepath.Join(ts.dir, "ca.pem")
		if err := os.WriteFile(ca, ts.ca.rootPEM, 0o644); err != nil {
			t.Fatal(err)
		}
		for name, args := range map[string][]string{
			"tls": {"--http2", "--cacert", ca, "--resolve", "localhost:" + portOf(ts.tlsAddr) + ":127.0.0.1", "https://localhost:" + portOf(ts.tlsAddr) + "/up/a"},
			"h2c": {"--http2-prior-knowledge", "http://" + ts.plainAddr() + "/up/a"},
		} {
			out, err := exec.Command(curl, append([]string{"-sS", "--max-time", "10", "-w", " %{http_version}", "--data-binary", "0123456789"}, args...)...).CombinedOutput()
			if err != nil || string(out) != "POST /up/a 10 2" {
				t.Errorf("curl %s: %v %q", name, err, out)
			}
		}
	}
	bin, err := exec.LookPath("h2load")
	if err != nil {
		t.Skip("h2load not installed (apt-get install nghttp2-client)")
	}
	for name, url := range map[string]string{"tls": "https://" + ts.tlsAddr + "/up/b", "h2c": "http://" + ts.plainAddr() + "/up/b"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, bin, "-n", "4000", "-c", "4", "-m", "100", url).CombinedOutput()
		cancel()
		if err != nil || !strings.Contains(string(out), "4000 succeeded, 0 failed, 0 errored") {
			t.Errorf("h2load %s: %v\n%s", name, err, out)
		}
	}
}

// TestH2ProxySlowUpstreamUpload uploads 32 MiB over HTTP/2 to an upstream
// that reads 256 KiB every 20 ms: the body waits in the client, whose
// windows get credit only as the upstream reads, so the process's heap
// (gale, the client and the upstream together) grows by far less than the
// body.
func TestH2ProxySlowUpstreamUpload(t *testing.T) {
	if testing.Short() {
		t.Skip("32 MiB to a slow upstream: not in -short")
	}
	const size = 32 << 20
	var mu sync.Mutex
	var peak uint64
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	mux := http.NewServeMux()
	mux.HandleFunc("/up/slow", func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 256<<10)
		total := 0
		for {
			n, err := io.ReadFull(r.Body, buf)
			total += n
			if total%(4<<20) < n {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				mu.Lock()
				peak = max(peak, ms.HeapInuse)
				mu.Unlock()
			}
			if err != nil {
				break
			}
			time.Sleep(20 * time.Millisecond) // a slow upstream (about 12 MB/s) is the subject
		}
		fmt.Fprint(w, total)
	})
	up := netUpstream(t, mux)
	ts := startServer(t, `listen: ["127.0.0.1:0"]
server: {limits: {body_bytes: 64MiB}}
routes:
  - path: /up/
    proxy: {to: ["`+up+`"]}
`, nil)
	body := bytes.Repeat([]byte("u"), size)
	resp, err := h2cClient(t).Post(ts.url("/up/slow"), "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != fmt.Sprint(size) {
		t.Fatalf("%d %q", resp.StatusCode, got)
	}
	grew := int64(peak) - int64(base) - size // the test's own copy of the body
	t.Logf("heap in use grew by %d KiB beyond the body at most", grew>>10)
	if grew > 12<<20 && !raceDetector { // the race detector's allocations blur the heap
		t.Errorf("heap grew by %d MiB beyond the body: the upload was not paced", grew>>20)
	}
}
