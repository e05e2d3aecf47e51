package app

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"gale/config"
)

// Static files over real sockets: byte-exact bodies, versions replaced
// under slow readers, the cache's budget, compression done once,
// conditional and range requests (also with curl), and loads that finish
// off the loop while pipelined requests wait their turn.

// pseudoRandom returns n incompressible bytes from seed.
func pseudoRandom(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// utf8Text returns about n bytes of UTF-8 text with multi-byte runes,
// cut at a rune boundary.
func utf8Text(n int) []byte {
	words := []string{"gale ", "héllo ", "naïve ", "Ωmega ", "東京 ", "🙂 ", "ünïcødé\n", "plain ", "text "}
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		b.WriteString(words[(i*7+i/3)%len(words)])
	}
	out := b.Bytes()
	for len(out) > n {
		_, size := lastRune(out)
		out = out[:len(out)-size]
	}
	return out
}

func lastRune(b []byte) (rune, int) {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i]&0xc0 != 0x80 {
			return 0, len(b) - i
		}
	}
	return 0, 1
}

// decodeBody undoes a Content-Encoding.
func decodeBody(t *testing.T, enc string, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch enc {
	case "":
		return b
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case "br":
		r = brotli.NewReader(bytes.NewReader(b))
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		r = zr
	default:
		t.Fatalf("unknown coding %q", enc)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decoding %s: %v", enc, err)
	}
	return out
}

// get fetches path with the given request fields and returns the
// response and its raw body.
func get(t *testing.T, cl *http.Client, url string, fields ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		req.Header.Add(fields[i], fields[i+1])
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	return resp, body
}

func TestStaticBodiesByteExact(t *testing.T) {
	sizes := []int{0, 1, 128, 1 << 10, 16 << 10, 64 << 10, 1 << 20, 8 << 20}
	files := map[string][]byte{}
	for i, n := range sizes {
		files[fmt.Sprintf("bin-%d.bin", n)] = pseudoRandom(n, uint64(i+1))
		files[fmt.Sprintf("txt-%d.txt", n)] = utf8Text(n)
	}
	ts := startServer(t, siteConfig, nil)
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(ts.dir, "site", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cl := client()
	for _, ae := range []string{"", "gzip", "br, zstd;q=0.9"} {
		for name, want := range files {
			for round := range 2 { // a miss, then (usually) a hit
				resp, raw := get(t, cl, ts.url("/"+name), "Accept-Encoding", ae)
				enc := resp.Header.Get("Content-Encoding")
				body := decodeBody(t, enc, raw)
				if resp.StatusCode != 200 || sha256.Sum256(body) != sha256.Sum256(want) {
					t.Fatalf("%s (Accept-Encoding %q, round %d): %d, %d bytes as %q, want %d bytes", name, ae, round, resp.StatusCode, len(body), enc, len(want))
				}
				if resp.ContentLength != int64(len(raw)) {
					t.Fatalf("%s: Content-Length %d, body %d", name, resp.ContentLength, len(raw))
				}
				if strings.HasSuffix(name, ".bin") && enc != "" {
					t.Fatalf("%s: binary served as %q", name, enc)
				}
			}
		}
	}
	// HEAD announces the length without a body.
	for name, want := range files {
		resp, err := cl.Head(ts.url("/" + name))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.ContentLength != int64(len(want)) {
			t.Fatalf("HEAD %s: %d, Content-Length %d", name, resp.StatusCode, resp.ContentLength)
		}
	}
}

// slowConn dials with a small receive buffer, so that a response waits
// in the server rather than in the client's kernel.
func slowConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10)
		})
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// A file replaced (by rename) while a slow client downloads it: the slow
// client gets the old bytes complete, new requests get the new version,
// and the old version stays counted in the cache's budget until the
// download ends.
func TestStaticReplaceDuringSlowDownload(t *testing.T) {
	ts := startServer(t, `
cache: {revalidate: 10ms}
server: {socket_send_buffer: 64KiB, max_buffered_output: 64KiB}
`+siteConfig, nil)
	site := filepath.Join(ts.dir, "site")
	for _, tt := range []struct {
		name string
		size int
	}{{"mem.bin", 1 << 20}, {"disk.bin", 3 << 20}} { // held in memory; streamed from disk
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(site, tt.name)
			old := pseudoRandom(tt.size, 7)
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Fatal(err)
			}
			cl := client()
			if _, body := get(t, cl, ts.url("/"+tt.name)); !bytes.Equal(body, old) {
				t.Fatal("first download differs")
			}
			c := slowConn(t, ts.addr)
			fmt.Fprintf(c, "GET /%s HTTP/1.1\r\nHost: x\r\n\r\n", tt.name)
			br := bufio.NewReaderSize(c, 4<<10)
			resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 0, tt.size)
			buf := make([]byte, 16<<10)
			for len(got) < 128<<10 {
				n, err := resp.Body.Read(buf)
				got = append(got, buf[:n]...)
				if err != nil {
					t.Fatal(err)
				}
			}
			// Replace the file while most of it is still to be sent.
			fresh := pseudoRandom(tt.size/2+3, 8)
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, fresh, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
			// Served once cache.revalidate has passed.
			var body []byte
			if !waitUntil(5*time.Second, func() bool { _, body = get(t, cl, ts.url("/"+tt.name)); return bytes.Equal(body, fresh) }) {
				t.Fatalf("after the replace: %d bytes, not the new version", len(body))
			}
			if tt.name == "mem.bin" {
				if s := ts.srv.files.Stats(); s.PinnedRetired < int64(tt.size) {
					t.Errorf("the old version in flight is not counted: %+v", s)
				}
			}
			// Finish the slow download.
			for {
				n, err := resp.Body.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("after %d bytes: %v", len(got), err)
				}
			}
			if !bytes.Equal(got, old) {
				t.Fatalf("slow download: %d bytes, differs from the old version", len(got))
			}
			waitUntil(5*time.Second, func() bool { return ts.srv.files.Stats().PinnedRetired == 0 })
			if s := ts.srv.files.Stats(); s.PinnedRetired != 0 {
				t.Errorf("old version still counted after the download: %+v", s)
			}
		})
	}
}

// The cache's byte budget holds under a working set four times larger,
// with concurrent clients, and every body stays exact.
func TestStaticBudgetHolds(t *testing.T) {
	const files, size = 40, 100 << 10
	ts := startServer(t, "cache: {max_bytes: 1MiB, max_file_bytes: 256KiB}\n"+siteConfig, nil)
	sums := make([][32]byte, files)
	for i := range files {
		b := pseudoRandom(size+i, uint64(100+i))
		sums[i] = sha256.Sum256(b)
		if err := os.WriteFile(filepath.Join(ts.dir, "site", fmt.Sprintf("f%d.bin", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	max := ts.srv.files.Stats().MaxBytes
	var peak int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := client()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 3 * files {
				i := r.IntN(files)
				resp, err := cl.Get(ts.url(fmt.Sprintf("/f%d.bin", i)))
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || sha256.Sum256(b) != sums[i] {
					errs <- fmt.Errorf("f%d: %d bytes, %v", i, len(b), err)
					return
				}
				s := ts.srv.files.Stats()
				mu.Lock()
				peak = max64(peak, s.Bytes)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s := ts.srv.files.Stats()
	// An insertion may pass the budget for the moment it takes to evict.
	if s.Bytes > max || peak > max+size+4096 || s.Evictions == 0 {
		t.Fatalf("budget %d: now %d, peak %d, %d evictions", max, s.Bytes, peak, s.Evictions)
	}
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// A file compressed once is not compressed again, however often and in
// however many codings it is asked for.
func TestStaticCompressedOnce(t *testing.T) {
	text := utf8Text(50 << 10)
	ts := startServer(t, siteConfig, map[string]string{"app.css": string(text)})
	var wg sync.WaitGroup
	for _, ae := range []string{"gzip", "br", "zstd", "gzip, br, zstd"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := client()
			for range 40 {
				resp, raw := get(t, cl, ts.url("/app.css"), "Accept-Encoding", ae)
				if body := decodeBody(t, resp.Header.Get("Content-Encoding"), raw); !bytes.Equal(body, text) {
					t.Errorf("%s: body differs", ae)
					return
				}
			}
		}()
	}
	wg.Wait()
	cacheIdle(t, ts.srv)
	cl := client()
	for _, enc := range []string{"gzip", "br", "zstd"} {
		if resp, _ := get(t, cl, ts.url("/app.css"), "Accept-Encoding", enc); resp.Header.Get("Content-Encoding") != enc {
			t.Errorf("Accept-Encoding %s: served %q", enc, resp.Header.Get("Content-Encoding"))
		}
	}
	if got := ts.srv.files.Stats().Compressions; got != [4]uint64{0, 1, 1, 1} {
		t.Fatalf("compressions %v; want one per coding", got)
	}
}

// A file read off the loop (larger than what a miss reads inline) holds
// back the pipelined requests behind it, which are answered in order
// once it is loaded.
func TestStaticPendingLoadPipelined(t *testing.T) {
	ts := startServer(t, siteConfig, siteFiles)
	mid := pseudoRandom(200<<10, 3)
	if err := os.WriteFile(filepath.Join(ts.dir, "site", "mid.bin"), mid, 0o644); err != nil {
		t.Fatal(err)
	}
	c := ts.dial()
	fmt.Fprint(c, "GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n"+
		"GET /mid.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=100-199\r\n\r\n"+
		"GET /mid.bin HTTP/1.1\r\nHost: x\r\n\r\n"+
		"HEAD /b.txt HTTP/1.1\r\nHost: x\r\n\r\n"+
		"GET /b.txt HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	if _, body := readResponse(t, br, "GET"); body != "file a\n" {
		t.Fatalf("first: %q", body)
	}
	if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 206 || body != string(mid[100:200]) {
		t.Fatalf("range: %d %d bytes", resp.StatusCode, len(body))
	}
	if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || body != string(mid) {
		t.Fatalf("mid: %d %d bytes", resp.StatusCode, len(body))
	}
	if resp, body := readResponse(t, br, "HEAD"); resp.StatusCode != 200 || body != "" || resp.ContentLength != 7 {
		t.Fatalf("HEAD: %d %q", resp.StatusCode, body)
	}
	if _, body := readResponse(t, br, "GET"); body != "file b\n" {
		t.Fatalf("last: %q", body)
	}
}

// Ranges on a file streamed from disk: single, multipart, If-Range.
func TestStaticRangesLargeFile(t *testing.T) {
	ts := startServer(t, siteConfig, nil)
	big := pseudoRandom(8<<20+5, 9)
	if err := os.WriteFile(filepath.Join(ts.dir, "site", "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	cl := client()
	resp, body := get(t, cl, ts.url("/big.bin"), "Range", "bytes=1000-2000999")
	if resp.StatusCode != 206 || !bytes.Equal(body, big[1000:2001000]) || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 1000-2000999/%d", len(big)) {
		t.Fatalf("single range: %d %v", resp.StatusCode, resp.Header)
	}
	etag := resp.Header.Get("ETag")
	resp, body = get(t, cl, ts.url("/big.bin"), "Range", "bytes=0-9,-400000")
	_, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for i, want := range [][]byte{big[:10], big[len(big)-400000:]} {
		p, err := mr.NextPart()
		if err != nil {
			t.Fatalf("part %d: %v (status %d)", i, err, resp.StatusCode)
		}
		got, _ := io.ReadAll(p)
		if !bytes.Equal(got, want) {
			t.Fatalf("part %d: %d bytes differ", i, len(got))
		}
	}
	if resp, body := get(t, cl, ts.url("/big.bin"), "Range", "bytes=5-9", "If-Range", etag); resp.StatusCode != 206 || !bytes.Equal(body, big[5:10]) {
		t.Fatalf("If-Range match: %d", resp.StatusCode)
	}
	if resp, body := get(t, cl, ts.url("/big.bin"), "Range", "bytes=5-9", "If-Range", `"other"`); resp.StatusCode != 200 || len(body) != len(big) {
		t.Fatalf("If-Range mismatch: %d, %d bytes", resp.StatusCode, len(body))
	}
	if resp, _ := get(t, cl, ts.url("/big.bin"), "Range", "bytes=9000000-"); resp.StatusCode != 416 ||
		resp.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(big)) {
		t.Fatalf("416: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := get(t, cl, ts.url("/big.bin"), "If-None-Match", etag); resp.StatusCode != 304 {
		t.Fatalf("If-None-Match: %d", resp.StatusCode)
	}
}

// A reload purges the cache: entries rendered with the old route
// settings are not served after it.
func TestStaticReloadPurges(t *testing.T) {
	ts := startServer(t, siteConfig, siteFiles)
	cl := client()
	if resp, _ := get(t, cl, ts.url("/a.txt")); resp.Header.Get("Cache-Control") != "" {
		t.Fatal("Cache-Control before the reload")
	}
	file := filepath.Join(ts.dir, "gale.yaml")
	text := baseListen + strings.Replace(siteConfig, "static: {root: ./site}", `static: {root: ./site, cache_control: "max-age=9"}`, 1)
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
	if resp, body := get(t, cl, ts.url("/a.txt")); resp.Header.Get("Cache-Control") != "max-age=9" || string(body) != "file a\n" {
		t.Fatalf("after the reload: %v %q", resp.Header, body)
	}
}

// Conditional and range requests as curl makes them.
func TestStaticCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	text := utf8Text(30 << 10)
	ts := startServer(t, siteConfig, map[string]string{"t.txt": string(text)})
	site := filepath.Join(ts.dir, "site")
	mtime := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(site, "t.txt"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(curl, append([]string{"-s", "--max-time", "10"}, args...)...).Output()
		if err != nil {
			t.Fatalf("curl %v: %v", args, err)
		}
		return string(out)
	}
	url := ts.url("/t.txt")
	code := func(args ...string) string {
		return run(append([]string{"-o", "/dev/null", "-w", "%{http_code}"}, args...)...)
	}
	etag := strings.TrimSpace(run("-o", "/dev/null", "-w", "%header{etag}", url))
	if etag == "" {
		// curl before 7.84 has no %header{}: take it from the head.
		for _, line := range strings.Split(run("-I", url), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "etag") {
				etag = strings.TrimSpace(v)
			}
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{url}, "200"},
		{[]string{"-H", "If-None-Match: " + etag, url}, "304"},
		{[]string{"-z", "Tue, 02 Jan 2024 03:04:05 GMT", url}, "304"},        // If-Modified-Since
		{[]string{"-z", "-Tue, 02 Jan 2024 03:04:04 GMT", url}, "412"},       // If-Unmodified-Since, before the file
		{[]string{"-H", `If-Match: "nope"`, url}, "412"},                     //
		{[]string{"-r", "0-99", url}, "206"},                                 //
		{[]string{"-r", "0-0,-1", url}, "206"},                               //
		{[]string{"-r", "100000-", url}, "416"},                              //
		{[]string{"-r", "0-9", "-H", `If-Range: "stale"`, url}, "200"},       //
		{[]string{"-r", "0-9", "-H", "If-Range: " + etag, url}, "206"},       //
		{[]string{"-I", url}, "200"},                                         // HEAD
		{[]string{"--compressed", "-r", "0-9", url}, "206"},                  // a range of the coded representation
		{[]string{"-H", "Accept-Encoding: gzip", ts.url("/missing")}, "404"}, //
	} {
		if got := code(tt.args...); got != tt.want {
			t.Errorf("curl %v: %s; want %s", tt.args, got, tt.want)
		}
	}
	if got := run("-r", "0-99", url); got != string(text[:100]) {
		t.Errorf("curl -r 0-99: %q", got)
	}
	if got := run("-r", "-50", url); got != string(text[len(text)-50:]) {
		t.Errorf("curl -r -50: %q", got)
	}
	// --compressed decodes whatever coding the server chose, once the
	// workers made the coded representations.
	cacheIdle(t, ts.srv)
	if n, _ := strconv.Atoi(strings.TrimSpace(run("--compressed", "-o", "/dev/null", "-w", "%{size_download}", url))); n >= len(text) {
		t.Errorf("curl --compressed: %d bytes downloaded for %d: not coded", n, len(text))
	}
	if got := run("--compressed", url); got != string(text) {
		t.Errorf("curl --compressed: %d bytes differ", len(got))
	}
}

// Revalidation by stat: a file changed in place becomes a new version, a
// deleted one disappears, and a path that did not exist is remembered
// for negative_ttl, then found.
func TestStaticRevalidateAndNegative(t *testing.T) {
	ts := startServer(t, "cache: {revalidate: 50ms, negative_ttl: 50ms}\n"+siteConfig, map[string]string{"v.txt": "one"})
	cl := client()
	path := filepath.Join(ts.dir, "site", "v.txt")
	if _, body := get(t, cl, ts.url("/v.txt")); string(body) != "one" {
		t.Fatalf("first: %q", body)
	}
	if err := os.WriteFile(path, []byte("two!"), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, future, future); err != nil {
		t.Fatal(err)
	}
	// Seen once revalidate (50 ms) has passed.
	var resp *http.Response
	var body []byte
	waitUntil(5*time.Second, func() bool { resp, body = get(t, cl, ts.url("/v.txt")); return string(body) != "one" })
	if string(body) != "two!" || resp.Header.Get("Last-Modified") != future.UTC().Format(http.TimeFormat) {
		t.Fatalf("after a change: %q %v", body, resp.Header)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if !waitUntil(5*time.Second, func() bool { resp, _ = get(t, cl, ts.url("/v.txt")); return resp.StatusCode != 200 }) || resp.StatusCode != 404 {
		t.Fatalf("after a delete: %d", resp.StatusCode)
	}
	// Not found is cached: repeating it reads nothing.
	if resp, _ := get(t, cl, ts.url("/later.txt")); resp.StatusCode != 404 {
		t.Fatal("missing file found")
	}
	loads := ts.srv.files.Stats().Loads
	for range 20 {
		get(t, cl, ts.url("/later.txt"))
	}
	if got := ts.srv.files.Stats().Loads; got != loads {
		t.Fatalf("a cached miss was loaded again: %d loads, then %d", loads, got)
	}
	if err := os.WriteFile(filepath.Join(ts.dir, "site", "later.txt"), []byte("here"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Found once negative_ttl (50 ms) has passed.
	if !waitUntil(5*time.Second, func() bool { resp, body = get(t, cl, ts.url("/later.txt")); return resp.StatusCode != 404 }) || string(body) != "here" {
		t.Fatalf("after negative_ttl: %d %q", resp.StatusCode, body)
	}
}

// The per-route options over a real connection: index list, listings
// (HTML and JSON), SPA fallback, hidden files, symbolic links, error
// pages, Cache-Control and the MIME table.
func TestStaticRouteOptions(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside.txt")
	if err := os.WriteFile(outside, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, `
mime_types: {".thing": text/x-thing}
routes:
  - path: /
    static:
      root: ./site
      index: [home.htm, index.html]
      browse: true
      cache_control: "public, max-age=30"
      error_pages: {404: ./site/errors/404.html}
  - path: /app/
    static: {root: ./site/app, spa_fallback: /shell.html}
  - path: /strict/
    static: {root: ./site, follow_symlinks: never, hidden: allow}
`, map[string]string{
		"home.htm":         "home",
		"index.html":       "not this one",
		"list/b.txt":       "b",
		"list/a <x>.thing": "a",
		"list/.hidden":     "h",
		"errors/404.html":  "<p>custom 404</p>",
		"app/shell.html":   "<shell>",
		"app/main.js":      "js",
		".env":             "secret",
	})
	site := filepath.Join(ts.dir, "site")
	if err := os.Symlink(outside, filepath.Join(site, "out.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("home.htm", filepath.Join(site, "in.txt")); err != nil {
		t.Fatal(err)
	}
	cl := client()
	for _, tt := range []struct {
		path, accept string
		status       int
		ct, body     string // body: a substring
	}{
		{"/", "", 200, "text/html; charset=utf-8", "home"},
		{"/list/", "", 200, "text/html; charset=utf-8", `<a href="a%20%3Cx%3E.thing">a &lt;x&gt;.thing</a>`},
		{"/list/", "application/json", 200, "application/json; charset=utf-8", `"name":"a \u003cx\u003e.thing"`},
		{"/list/a%20%3Cx%3E.thing", "", 200, "text/x-thing; charset=utf-8", "a"},
		{"/list/.hidden", "", 404, "text/html; charset=utf-8", "custom 404"},
		{"/.env", "", 404, "text/html; charset=utf-8", "custom 404"},
		{"/nothing", "", 404, "text/html; charset=utf-8", "custom 404"},
		{"/in.txt", "", 200, "text/plain; charset=utf-8", "home"},
		{"/out.txt", "", 404, "text/html; charset=utf-8", "custom 404"},
		{"/app/users/7", "text/html", 200, "text/html; charset=utf-8", "<shell>"},
		{"/app/main.js", "", 200, "text/javascript; charset=utf-8", "js"},
		{"/app/missing.js", "", 404, "text/plain; charset=utf-8", "404 Not Found"},
		{"/strict/in.txt", "", 404, "text/plain; charset=utf-8", ""},
		{"/strict/.env", "", 200, "application/octet-stream", "secret"},
	} {
		resp, body := get(t, cl, ts.url(tt.path), "Accept", tt.accept)
		if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != tt.ct || !strings.Contains(string(body), tt.body) {
			t.Errorf("GET %s (Accept %q): %d %q %q", tt.path, tt.accept, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if strings.Contains(string(body), ".hidden") {
			t.Errorf("GET %s lists a hidden file", tt.path)
		}
	}
	if resp, _ := get(t, cl, ts.url("/home.htm")); resp.Header.Get("Cache-Control") != "public, max-age=30" {
		t.Errorf("Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
}
