package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gale/config"
)

// TestLargeFileRSS measures (it asserts only the bound the design
// promises) the peak RSS of a gale process while 200 clients download a
// 256 MiB file, 20 of them reading at 1 MB/s, for 20 seconds. It takes
// that long and writes the file, so it runs only when asked:
//
//	GALE_RSS=1 go test -run 'RSS$' -v ./app
//
// GALE_RSS_SECONDS, GALE_RSS_CLIENTS and GALE_RSS_SLOW change the run.
// The server is this test binary started again as a child process
// (TestRSSServerChild), so the clients' memory is not counted.
func TestLargeFileRSS(t *testing.T) {
	skipUnlessRSS(t)
	const size = 256 << 20
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	if err := os.MkdirAll(site, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(site, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := pseudoRandom(1<<20, 42)
	for range size >> 20 {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	measureRSS(t, dir, "routes:\n  - path: /\n    static: {root: ./site}\n",
		size, envInt("GALE_RSS_CLIENTS", 200), envInt("GALE_RSS_SLOW", 20))
}

// TestProxyRSS is the proxy's counterpart: 20 clients reading at 1 MB/s
// pull a 256 MiB response through gale from an upstream that writes as
// fast as gale takes it, for 20 seconds. The upstream lives in this
// process; only the gale child is measured.
func TestProxyRSS(t *testing.T) { proxyRSS(t, measureRSS) }

// TestH2ProxyRSS is TestProxyRSS with HTTP/2 clients (h2c, one
// connection each): the bodies they read slowly are paced off the loop,
// so gale holds a buffer per stream, not the body.
func TestH2ProxyRSS(t *testing.T) {
	proxyRSS(t, func(t *testing.T, dir, routes string, size int64, clients, slow int) {
		measureRSSWith(t, dir, routes, size, clients, slow, downloadH2C)
	})
}

// proxyRSS runs measure on a proxy route to an upstream that sends a
// 256 MiB body as fast as it is taken.
func proxyRSS(t *testing.T, measure func(t *testing.T, dir, routes string, size int64, clients, slow int)) {
	skipUnlessRSS(t)
	const size = 256 << 20
	chunk := pseudoRandom(1<<20, 7)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		for range size >> 20 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})}
	go up.Serve(ln)
	defer up.Close()
	slow := envInt("GALE_RSS_SLOW", 20)
	measure(t, t.TempDir(), fmt.Sprintf("routes:\n  - path: /\n    proxy: {to: [%q]}\n", ln.Addr().String()),
		size, envInt("GALE_RSS_CLIENTS", slow), slow)
}

// downloadH2C downloads over a new h2c connection (prior knowledge).
func downloadH2C(addr string, slow bool, stop <-chan struct{}, read *atomic.Int64) (int64, bool, error) {
	tr := &http.Transport{}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://" + addr + "/big.bin")
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		return 0, false, fmt.Errorf("%s, want HTTP/2", resp.Proto)
	}
	return readPaced(resp.Body, slow, stop, read)
}

func skipUnlessRSS(t *testing.T) {
	if os.Getenv("GALE_RSS") == "" || testing.Short() {
		t.Skip("set GALE_RSS=1 to measure (20 s, a 256 MiB body)")
	}
}

// measureRSS starts gale as a child process with routes (written to a
// config in dir, listening on a free port), runs clients that download
// /big.bin (size bytes) over and over, slow of them at 1 MB/s, samples
// the child's RSS every 100 ms for GALE_RSS_SECONDS, and fails above
// 64 MiB or on any download that went wrong.
func measureRSS(t *testing.T, dir, routes string, size int64, clients, slow int) {
	measureRSSWith(t, dir, routes, size, clients, slow, downloadH1)
}

// downloader fetches /big.bin from addr once, reading it at 1 MB/s when
// slow, counting what it reads in read; it returns the body's length, or
// stopped when stop closed first.
type downloader func(addr string, slow bool, stop <-chan struct{}, read *atomic.Int64) (n int64, stopped bool, err error)

// downloadH1 downloads over a new HTTP/1.1 connection.
func downloadH1(addr string, slow bool, stop <-chan struct{}, read *atomic.Int64) (int64, bool, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, false, err
	}
	defer c.Close()
	fmt.Fprint(c, "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 64<<10), nil)
	if err != nil {
		return 0, false, err
	}
	return readPaced(resp.Body, slow, stop, read)
}

// readPaced reads body to its end, 64 KiB every 64 ms when slow.
func readPaced(body io.Reader, slow bool, stop <-chan struct{}, read *atomic.Int64) (int64, bool, error) {
	buf := make([]byte, 64<<10)
	var got int64
	for {
		if slow { // 1 MB/s: 64 KiB every 64 ms
			select {
			case <-stop:
				return got, true, nil
			case <-time.After(64 * time.Millisecond):
			}
		}
		n, err := body.Read(buf)
		got += int64(n)
		read.Add(int64(n))
		if err == io.EOF {
			return got, false, nil
		}
		if err != nil {
			return got, false, err
		}
		select {
		case <-stop:
			return got, true, nil
		default:
		}
	}
}

// measureRSSWith is measureRSS with each client's download made by dl.
func measureRSSWith(t *testing.T, dir, routes string, size int64, clients, slow int, dl downloader) {
	seconds := envInt("GALE_RSS_SECONDS", 20)
	cfgPath := filepath.Join(dir, "gale.yaml")
	if err := os.WriteFile(cfgPath, []byte("listen: [\"127.0.0.1:0\"]\n"+routes), 0o644); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestRSSServerChild$")
	child.Env = append(os.Environ(), "GALE_RSS_CHILD="+cfgPath)
	out, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	sc := bufio.NewScanner(out)
	var addr string
	for addr == "" && sc.Scan() {
		addr, _ = strings.CutPrefix(sc.Text(), "rss-child-listening ")
	}
	if addr == "" {
		t.Fatal("the child server did not start")
	}
	go io.Copy(io.Discard, out)
	pid := child.Process.Pid

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bytesRead, completed, failed atomic.Int64
	for i := range clients {
		wg.Add(1)
		go func(slow bool) {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, stopped, err := dl(addr, slow, stop, &bytesRead)
				switch {
				case stopped:
					return
				case err == nil && got == size:
					completed.Add(1)
				default:
					failed.Add(1) // the test fails: this client stops
					return
				}
			}
		}(i < slow)
	}
	// The load runs for a set time: its length is what is measured. The
	// kernel keeps the child's peak (VmHWM); nothing need be sampled.
	time.Sleep(time.Duration(seconds) * time.Second)
	peak := procStatus(pid, "VmRSS")
	hwm := procStatus(pid, "VmHWM")
	close(stop)
	wg.Wait()
	t.Logf("%d clients (%d at 1 MB/s), %d s: RSS at the end %.1f MiB, VmHWM %.1f MiB; %.2f GiB served, %d complete downloads, %d failed",
		clients, slow, seconds, float64(peak)/1024, float64(hwm)/1024, float64(bytesRead.Load())/(1<<30), completed.Load(), failed.Load())
	if m := max(peak, hwm); m > 64<<10 {
		t.Errorf("peak RSS %.1f MiB; want under 64 MiB", float64(m)/1024)
	}
	if failed.Load() != 0 {
		t.Errorf("%d downloads failed", failed.Load())
	}
	_ = child.Process.Signal(syscall.SIGTERM)
	_ = child.Wait()
}

// TestRSSServerChild is the server process of TestLargeFileRSS; it does
// nothing unless started by it.
func TestRSSServerChild(t *testing.T) {
	cfgPath := os.Getenv("GALE_RSS_CHILD")
	if cfgPath == "" {
		t.Skip("the server half of TestLargeFileRSS")
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run() }()
	<-srv.Booted()
	fmt.Printf("rss-child-listening %s\n", srv.Addrs()[0])
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	select {
	case <-sigs:
	case err := <-done:
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Stop(ctx)
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// procStatus returns a field of /proc/PID/status in KiB.
func procStatus(pid int, key string) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}
