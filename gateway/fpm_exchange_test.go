package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// site is a PHP-FPM pool and a gale fastcgi route in front of it, with
// the scripts the tests run.
type site struct {
	dir, root string
	fpm       *fpm
	gale      *gale
}

var scripts = map[string]string{
	"env.php":    envScript,
	"status.php": `<?php http_response_code(201); header('X-From-PHP: yes'); header('Set-Cookie: a=1'); header('Set-Cookie: b=2', false); echo "created";`,
	"go.php":     `<?php header('Location: https://example.com/there'); echo "moved";`,
	"local.php":  `<?php header('Location: /elsewhere?x=1');`,
	"upload.php": `<?php $f = $_FILES['file'] ?? null; echo $f ? hash_file('sha256', $f['tmp_name']) . ' ' . $f['size'] . ' ' . $f['error'] : 'none';`,
	"flush.php": `<?php echo "first\n"; flush();
$go = $_GET['go']; for ($i = 0; $i < 500 && !file_exists($go); $i++) { usleep(10000); }
echo file_exists($go) ? "second\n" : "timeout\n";`,
	"sleep.php": `<?php sleep((int)$_GET['s']); echo "slept";`,
	"pid.php":   `<?php file_put_contents($_GET['f'], getmypid()); sleep(10); echo "not killed";`,
	"big.php":   `<?php header('Content-Type: application/octet-stream'); $c = str_repeat('0123456789abcdef', 4096); for ($i = 0; $i < (int)$_GET['n']; $i++) { echo $c; }`,
	"err.php":   `<?php error_log("something went wrong in err.php"); echo "ok";`,
}

// startSite starts a pool (unix socket) and gale with a fastcgi route
// over it; extra goes into the route's fastcgi section.
func startSite(t *testing.T, extra string) *site {
	t.Helper()
	dir := t.TempDir()
	s := &site{dir: dir, root: filepath.Join(dir, "www")}
	writeFiles(t, s.root, scripts)
	s.fpm = startFPM(t, dir, "a", false, 3)
	s.gale = startGale(t, dir, `
routes:
  - path: /
    fastcgi:
      to: "`+s.fpm.listen+`"
      root: www
`+extra, nil)
	return s
}

func TestFPMQueryAndForm(t *testing.T) {
	s := startSite(t, "")
	c := httpClient()
	resp, err := c.PostForm(s.gale.url("/env.php?a=%C3%A9&b=1"), url.Values{"name": {"gale & php"}, "n": {"42"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	env := decodeEnv(t, string(body))
	if env.Get["a"] != "é" || env.Get["b"] != "1" || env.Post["name"] != "gale & php" || env.Post["n"] != "42" {
		t.Fatalf("get %v post %v", env.Get, env.Post)
	}
	if env.Server["REQUEST_METHOD"] != "POST" || env.Server["CONTENT_TYPE"] != "application/x-www-form-urlencoded" ||
		env.Server["CONTENT_LENGTH"] != "22" {
		t.Fatalf("server %v %v %v", env.Server["REQUEST_METHOD"], env.Server["CONTENT_TYPE"], env.Server["CONTENT_LENGTH"])
	}
}

func TestFPMUpload8MiB(t *testing.T) {
	s := startSite(t, "")
	checkUpload8MiB(t, httpClient(), s.gale.url("/upload.php"))
}

func TestFPMStatusHeadersAndRedirects(t *testing.T) {
	s := startSite(t, "")
	c := httpClient()
	resp, body := get(t, c, s.gale.url("/status.php"))
	if resp.StatusCode != 201 || body != "created" || resp.Header.Get("X-From-PHP") != "yes" ||
		len(resp.Header.Values("Set-Cookie")) != 2 || resp.ContentLength != int64(len("created")) {
		t.Fatalf("%d %v %q", resp.StatusCode, resp.Header, body)
	}
	resp, body = get(t, c, s.gale.url("/go.php"))
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "https://example.com/there" || body != "moved" {
		t.Fatalf("client redirect: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	resp, _ = get(t, c, s.gale.url("/local.php"))
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "/elsewhere?x=1" {
		t.Fatalf("local redirect: %d %v", resp.StatusCode, resp.Header)
	}
	// HEAD gets the head of the same response, no body.
	req, _ := http.NewRequest("HEAD", s.gale.url("/status.php"), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 || resp.Header.Get("X-From-PHP") != "yes" {
		t.Fatalf("HEAD: %d %v", resp.StatusCode, resp.Header)
	}
}

// TestFPMFlushStreams: what a script flushes reaches the client while
// the script still runs (it waits for a file the test creates only once
// the first line arrived).
func TestFPMFlushStreams(t *testing.T) {
	s := startSite(t, "")
	resp := checkFlushStreams(t, httpClient(), s.gale.url("/flush.php"), filepath.Join(s.dir, "go"))
	if resp.ContentLength != -1 || len(resp.TransferEncoding) == 0 {
		t.Fatalf("a streamed response is chunked: %d %v", resp.ContentLength, resp.TransferEncoding)
	}
}

func TestFPMSlowScript504(t *testing.T) {
	s := startSite(t, "      timeouts: {response_header: 500ms}\n")
	start := time.Now()
	resp, _ := get(t, httpClient(), s.gale.url("/sleep.php?s=3"))
	if resp.StatusCode != 504 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Fatalf("504 after %v", d)
	}
}

// TestFPMWorkerKilled: a worker killed mid-request answers 502, and the
// next request is served.
func TestFPMWorkerKilled(t *testing.T) {
	s := startSite(t, "")
	pidFile := filepath.Join(s.dir, "pid")
	done := make(chan *http.Response, 1)
	c := httpClient()
	go func() {
		resp, err := c.Get(s.gale.url("/pid.php?f=" + url.QueryEscape(pidFile)))
		if err != nil {
			done <- nil
			return
		}
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- resp
	}()
	var pid int
	for i := 0; i < 500 && pid == 0; i++ {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(string(b))
		if pid == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if pid == 0 {
		t.Fatal("the script did not start")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	resp := <-done
	if resp == nil || resp.StatusCode != 502 {
		t.Fatalf("killed worker: %+v", resp)
	}
	if st := s.gale.srv.FastCGIStats(); st.Errors != 1 {
		t.Errorf("stats %+v", st)
	}
	for i := 0; i < 5; i++ {
		resp, body := get(t, c, s.gale.url("/status.php"))
		if resp.StatusCode != 201 || body != "created" {
			t.Fatalf("after the kill: %d %q", resp.StatusCode, body)
		}
	}
}

// TestFPMLargeResponseSlowClient: a script writes 24 MiB to a client
// that reads slowly; gale's memory stays far below the response's size
// (the connection to PHP-FPM leaves the loop and is read one piece at a
// time) and every byte arrives.
func TestFPMLargeResponseSlowClient(t *testing.T) {
	s := startSite(t, "")
	const chunks = 384 // of 64 KiB
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	conn, err := net.Dial("tcp", s.gale.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(32 << 10)
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "GET /big.php?n=%d HTTP/1.1\r\nHost: x\r\n\r\n", chunks)
	br := bufio.NewReaderSize(conn, 64<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	var peak uint64
	total := 0
	buf := make([]byte, 128<<10)
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
	if total != chunks*65536 {
		t.Fatalf("received %d bytes, want %d", total, chunks*65536)
	}
	grew := int64(peak) - int64(base)
	t.Logf("heap in use grew by %d KiB at most while relaying %d MiB", grew>>10, total>>20)
	if grew > 12<<20 {
		t.Fatalf("heap grew by %d MiB relaying %d MiB to a slow client", grew>>20, total>>20)
	}
	if st := s.gale.srv.FastCGIStats(); st.OffLoop != 1 {
		t.Errorf("the response did not leave the loop: %+v", st)
	}
}

// TestFPMStderrLogged: what a script writes to FCGI_STDERR (PHP's
// error_log without a log file of its own) is logged with the request;
// the response is unaffected.
func TestFPMStderrLogged(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "www"), scripts)
	f := startFPM(t, dir, "a", false, 2)
	logs := &lockedBuf{}
	g := startGale(t, dir, `
routes:
  - path: /
    fastcgi: {to: "`+f.listen+`", root: www}
`, slog.New(slog.NewTextHandler(logs, nil)))
	resp, body := get(t, httpClient(), g.url("/err.php?x=1"))
	if resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	out := logs.String()
	if !strings.Contains(out, "fastcgi stderr") || !strings.Contains(out, "something went wrong in err.php") ||
		!strings.Contains(out, `uri="/err.php?x=1"`) {
		t.Fatalf("log: %s", out)
	}
}
