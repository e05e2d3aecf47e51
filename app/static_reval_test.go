package app

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/quic-go/quic-go/http3"
)

// Issue 33: a browser revalidates the copy it holds and gets 304, over
// HTTP/1.1, HTTP/2 and HTTP/3, whatever that copy is (identity fetched
// before the compressed variants were made, a variant, a sidecar), before
// and after the background compression finished, and after a restart
// with the same files.

// revalSite serves HTTP/1.1, h2 and HTTP/3 on its TLS listener and
// HTTP/1.1 on its plain one, compressing in the route's order.
const revalSite = `listen:
  - {address: "127.0.0.1:0", http3: true, tls: {certificates: [$CERT]}}
  - "127.0.0.1:0"
cache: {max_file_bytes: 1MiB}
routes:
  - path: /
    static:
      root: ./site
      compress: {encodings: [zstd, br, gzip], min_bytes: 1KiB}
`

// chromeAE is what Chromium sends on every request over TLS.
const chromeAE = "gzip, deflate, br, zstd"

// revalFile is a site file and how it is represented.
type revalFile struct {
	name       string
	body       []byte
	compressed bool // compressed on the fly into zstd (the route's first coding)
}

// revalFiles writes the test's files under dir/site, every one (and the
// sidecar) dated one instant an hour ago, so the sidecar is no older than
// its file: small and large text compressed on the fly, a file with a
// brotli sidecar, an image that is never compressed, and a file over
// cache.max_file_bytes streamed from disk.
func revalFiles(t *testing.T, dir string) []revalFile {
	t.Helper()
	css := bytes.Repeat([]byte(".nav a { color: #0a5; padding: 0 1em; }\n"), 100) // 4 KiB
	theme := append([]byte("/* theme */\n"), css...)
	var sidecar bytes.Buffer
	bw := brotli.NewWriter(&sidecar)
	_, _ = bw.Write(theme)
	_ = bw.Close()
	files := []revalFile{
		{"small.css", css, true},
		{"big.js", utf8Text(300 << 10), true},
		{"theme.css", theme, true},
		{"logo.png", pseudoRandom(8<<10, 33), false},
		{"huge.txt", utf8Text(2<<20 + 1), false},
	}
	when := time.Now().Add(-time.Hour)
	write := func(name string, body []byte) {
		p := filepath.Join(dir, "site", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, when, when); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		write(f.name, f.body)
	}
	write("theme.css.br", sidecar.Bytes())
	return files
}

// revalClient is one protocol's client of a server, and its base URL.
type revalClient struct {
	c     *http.Client
	base  string
	proto int // the response's ProtoMajor
}

// revalClients returns an HTTP/1.1 client of ts's plain listener, and
// h2 and HTTP/3 clients of its TLS listener.
func revalClients(t *testing.T, ts *tlsTestServer) map[string]revalClient {
	h2 := &http.Transport{TLSClientConfig: ts.clientConfig("localhost"), DisableCompression: true}
	h2.Protocols = new(http.Protocols)
	h2.Protocols.SetHTTP2(true)
	h3 := &http3.Transport{TLSClientConfig: ts.clientConfig("localhost"), DisableCompression: true}
	t.Cleanup(h2.CloseIdleConnections)
	t.Cleanup(func() { _ = h3.Close() })
	return map[string]revalClient{
		"http1": {client(), "http://" + ts.srv.Addrs()[1], 1},
		"h2":    {&http.Client{Transport: h2, Timeout: 20 * time.Second}, "https://" + ts.tlsAddr, 2},
		"h3":    {&http.Client{Transport: h3, Timeout: 20 * time.Second}, "https://" + ts.tlsAddr, 3},
	}
}

// fetch gets path with Accept-Encoding ae ("" for none) and, when inm is
// not empty, If-None-Match inm.
func (rc revalClient) fetch(t *testing.T, path, ae, inm string) (*http.Response, []byte) {
	t.Helper()
	var h []string
	if ae != "" {
		h = append(h, "Accept-Encoding", ae)
	}
	if inm != "" {
		h = append(h, "If-None-Match", inm)
	}
	resp, body := get(t, rc.c, rc.base+path, h...)
	if resp.ProtoMajor != rc.proto {
		t.Fatalf("%s: %s; want HTTP/%d", path, resp.Proto, rc.proto)
	}
	return resp, body
}

// revalidate checks that If-None-Match tag, with a browser's
// Accept-Encoding, is answered 304 naming tag, with Vary, and nothing
// that would rewrite the stored copy.
func (rc revalClient) revalidate(t *testing.T, when, path, tag string) {
	t.Helper()
	resp, body := rc.fetch(t, path, chromeAE, tag)
	if resp.StatusCode != 304 || resp.Header.Get("ETag") != tag || len(body) != 0 ||
		resp.Header.Get("Vary") != "Accept-Encoding" || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("%s: revalidating %s with %s: %d %v (%d bytes); want 304 naming it", when, path, tag, resp.StatusCode, resp.Header, len(body))
	}
}

// waitCoded repeats a request for path until it is served in zstd (the
// cache's worker published its variants), for at most 200 requests in
// ten seconds.
func (rc revalClient) waitCoded(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 200 && time.Now().Before(deadline); i++ {
		if resp, _ := rc.fetch(t, path, chromeAE, ""); resp.Header.Get("Content-Encoding") == "zstd" {
			return resp.Header.Get("ETag")
		}
	}
	t.Fatalf("%s: never served in zstd", path)
	return ""
}

// restartTLS stops ts and runs its config again from the same directory
// (the same files, certificates and CA).
func restartTLS(t *testing.T, ts *tlsTestServer) *tlsTestServer {
	t.Helper()
	ts.stop()
	yaml, err := os.ReadFile(filepath.Join(ts.dir, "gale.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	next := runServer(t, writeConfig(t, ts.dir, string(yaml)), ts.dir)
	return &tlsTestServer{testServer: next, ca: ts.ca, tlsAddr: next.srv.Addrs()[0]}
}

func TestStaticRevalidateBrowser(t *testing.T) {
	for _, proto := range []string{"http1", "h2", "h3"} {
		t.Run(proto, func(t *testing.T) {
			ts := startTLSServer(t, revalSite, nil, nil)
			files := revalFiles(t, ts.dir)
			rc := revalClients(t, ts)[proto]
			held := map[string][]string{} // path -> every tag the client was given
			// The first fetch, and its revalidation right away (the
			// variants may or may not be made by then).
			for _, f := range files {
				path := "/" + f.name
				resp, raw := rc.fetch(t, path, chromeAE, "")
				enc := resp.Header.Get("Content-Encoding")
				if resp.StatusCode != 200 || !bytes.Equal(decodeBody(t, enc, raw), f.body) {
					t.Fatalf("%s: %d, %q, body differs", path, resp.StatusCode, enc)
				}
				tag := resp.Header.Get("ETag")
				rc.revalidate(t, "first", path, tag)
				resp, _ = rc.fetch(t, path, "", "")
				held[path] = append(held[path], tag, resp.Header.Get("ETag"))
			}
			// Once the background compression finished: every tag held
			// is still the file's, including the identity fetched before.
			for _, f := range files {
				path := "/" + f.name
				if f.compressed {
					held[path] = append(held[path], rc.waitCoded(t, path))
				}
				for _, tag := range held[path] {
					rc.revalidate(t, "compressed", path, tag)
				}
			}
			if !strings.HasSuffix(held["/theme.css"][0], `-br"`) {
				t.Errorf("theme.css first served as %s; want its brotli sidecar", held["/theme.css"][0])
			}
			// After a restart: the first request for each file revalidates
			// its first tag, before any variant is made again.
			ts = restartTLS(t, ts)
			rc = revalClients(t, ts)[proto]
			for _, f := range files {
				path := "/" + f.name
				for _, tag := range held[path] {
					rc.revalidate(t, "restarted", path, tag)
				}
			}
		})
	}
}
