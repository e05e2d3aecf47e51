package gateway_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// h2cClient speaks HTTP/2 with prior knowledge over cleartext, on one
// connection.
func h2cClient(t *testing.T) *http.Client {
	tr := &http.Transport{DisableCompression: true}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// TestFPMOverHTTP2 runs PHP-FPM behind gale for HTTP/2 clients (h2c):
// the environment, a form, an 8 MiB upload, output streamed with flush(),
// a body without a length (411), concurrent requests on one connection,
// and a large response read slowly, which leaves the loop with bounded
// memory.
func TestFPMOverHTTP2(t *testing.T) {
	s := startSite(t, "")
	c := h2cClient(t)

	resp, err := c.PostForm(s.gale.url("/env.php?a=%C3%A9"), neturl.Values{"name": {"gale & php"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	env := decodeEnv(t, string(body))
	if resp.ProtoMajor != 2 || env.Get["a"] != "é" || env.Post["name"] != "gale & php" ||
		env.Server["SERVER_PROTOCOL"] != "HTTP/2.0" || env.Server["CONTENT_LENGTH"] != "17" {
		t.Fatalf("%s: get %v post %v protocol %q length %q", resp.Proto, env.Get, env.Post,
			env.Server["SERVER_PROTOCOL"], env.Server["CONTENT_LENGTH"])
	}

	checkUpload8MiB(t, c, s.gale.url("/upload.php"))

	checkFlushStreams(t, c, s.gale.url("/flush.php"), filepath.Join(s.dir, "go"))

	resp, err = c.Post(s.gale.url("/env.php"), "text/plain", io.MultiReader(strings.NewReader("no length")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 411 {
		t.Fatalf("a body without a length: %d, want 411", resp.StatusCode)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			resp, err := c.Get(s.gale.url(fmt.Sprintf("/env.php?i=%d", i)))
			if err != nil {
				errs <- err
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), fmt.Sprintf(`"i":"%d"`, i)) {
				errs <- fmt.Errorf("request %d: %d %.80q", i, resp.StatusCode, body)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestFPMOverHTTP2SlowClient reads a 24 MiB PHP response over HTTP/2,
// stopping after the first MiB until the response has left the loop (the
// client's windows shut, the script runs ahead), then slowly: the heap
// stays bounded.
func TestFPMOverHTTP2SlowClient(t *testing.T) {
	s := startSite(t, "")
	const chunks = 384 // of 64 KiB
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	resp, err := h2cClient(t).Get(s.gale.url(fmt.Sprintf("/big.php?n=%d", chunks)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var peak uint64
	buf := make([]byte, 128<<10)
	first := make([]byte, 1<<20)
	total, err := io.ReadFull(resp.Body, first)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); s.gale.srv.FastCGIStats().OffLoop == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the response never left the loop: %+v", s.gale.srv.FastCGIStats())
		}
	}
	for {
		n, err := io.ReadFull(resp.Body, buf)
		total += n
		if err != nil {
			break
		}
		time.Sleep(8 * time.Millisecond)
		if total%(4<<20) < len(buf) {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}
	if total != chunks*65536 || resp.ProtoMajor != 2 {
		t.Fatalf("%s: received %d bytes, want %d", resp.Proto, total, chunks*65536)
	}
	// The test's own client buffers up to its stream window (4 MiB)
	// in this process too.
	grew := int64(peak) - int64(base)
	t.Logf("heap in use grew by %d KiB at most while relaying %d MiB", grew>>10, total>>20)
	if grew > 16<<20 {
		t.Fatalf("heap grew by %d MiB relaying %d MiB to a slow client", grew>>20, total>>20)
	}
	if st := s.gale.srv.FastCGIStats(); st.OffLoop != 1 {
		t.Errorf("the response did not leave the loop: %+v", st)
	}
}

// TestFPMOverHTTP3 runs PHP-FPM behind gale for HTTP/3 clients (quic-go's
// client): the environment over QUIC, a form, an 8 MiB upload by hash,
// and output streamed with flush().
func TestFPMOverHTTP3(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "www"), scripts)
	f := startFPM(t, dir, "a", false, 3)
	cert, key := writeCert(t, dir)
	g := startGale(t, dir, `listen:
  - {address: "127.0.0.1:0", http3: true, tls: {certificates: [{cert: "`+cert+`", key: "`+key+`"}]}}
routes:
  - path: /
    fastcgi: {to: "`+f.listen+`", root: www}
`, nil)
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(cert)
	pool.AppendCertsFromPEM(pem)
	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(func() { _ = tr.Close() })
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	base := "https://" + g.addr

	resp, err := c.PostForm(base+"/env.php?a=1", neturl.Values{"name": {"h3"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	env := decodeEnv(t, string(body))
	if resp.ProtoMajor != 3 || env.Get["a"] != "1" || env.Post["name"] != "h3" ||
		env.Server["SERVER_PROTOCOL"] != "HTTP/3.0" || env.Server["HTTPS"] != "on" {
		t.Fatalf("%s: get %v post %v protocol %q https %q", resp.Proto, env.Get, env.Post, env.Server["SERVER_PROTOCOL"], env.Server["HTTPS"])
	}

	checkUpload8MiB(t, c, base+"/upload.php")

	checkFlushStreams(t, c, base+"/flush.php", filepath.Join(dir, "go"))
}

// checkUpload8MiB posts an 8 MiB file as multipart/form-data to url (the
// upload.php script) and checks the hash PHP computed of what it got.
func checkUpload8MiB(t *testing.T, c *http.Client, url string) {
	t.Helper()
	data := make([]byte, 8<<20)
	_, _ = rand.Read(data)
	sum := sha256.Sum256(data)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", "blob.bin")
	_, _ = fw.Write(data)
	_ = mw.Close()
	resp, err := c.Post(url, mw.FormDataContentType(), bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := hex.EncodeToString(sum[:]) + " " + strconv.Itoa(len(data)) + " 0"; resp.StatusCode != 200 || string(body) != want {
		t.Fatalf("upload: %d %q, want %q", resp.StatusCode, body, want)
	}
}

// checkFlushStreams fetches url (the flush.php script): its first line
// must arrive while the script still waits for the file gofile, which
// the check then creates. It returns the response, its body read.
func checkFlushStreams(t *testing.T, c *http.Client, url, gofile string) *http.Response {
	t.Helper()
	resp, err := c.Get(url + "?go=" + neturl.QueryEscape(gofile))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "first\n" {
		t.Fatalf("flush: first line %q %v", line, err)
	}
	if err := os.WriteFile(gofile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if rest, _ := io.ReadAll(br); string(rest) != "second\n" {
		t.Fatalf("flush: rest %q", rest)
	}
	return resp
}

// TestFPMBasicAuth: a fastcgi route behind basic_auth runs the script
// once the credentials verify, and the script does not see them
// (HTTP_AUTHORIZATION).
func TestFPMBasicAuth(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "www"), scripts)
	f := startFPM(t, dir, "a", false, 2)
	hash := "$2a$04$FxxBKMKXSGAv6nRhKjp.eemloTS3TBOIvSnAeNuJOPZhOM8Xb0wiu" // "secret"
	g := startGale(t, dir, `
routes:
  - path: /
    basic_auth: {users: {alice: "`+hash+`"}}
    fastcgi: {to: "`+f.listen+`", root: www}
`, nil)
	c := httpClient()
	req, _ := http.NewRequest("GET", g.url("/env.php"), nil)
	if resp, err := c.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("without credentials: %v %v", err, resp)
	}
	req, _ = http.NewRequest("GET", g.url("/env.php"), nil)
	req.SetBasicAuth("alice", "secret")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	env := decodeEnv(t, string(body))
	if _, got := env.Server["HTTP_AUTHORIZATION"]; resp.StatusCode != 200 || got {
		t.Errorf("%d, HTTP_AUTHORIZATION reached the script: %v", resp.StatusCode, got)
	}
}
