package gateway_test

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// countingProxy forwards TCP connections on 127.0.0.1 to network/addr
// and counts them.
type countingProxy struct {
	addr  string
	count atomic.Int64
}

func startCountingProxy(t *testing.T, network, addr string) *countingProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	p := &countingProxy{addr: l.Addr().String()}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.count.Add(1)
			u, err := net.Dial(network, addr)
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

// TestFPMKeepConn: kept-alive requests reuse the loop's pooled
// connections (FCGI_KEEP_CONN): a few connections carry many requests.
func TestFPMKeepConn(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "www"), scripts)
	f := startFPM(t, dir, "a", false, 3)
	p := startCountingProxy(t, "unix", strings.TrimPrefix(f.listen, "unix:"))
	g := startGale(t, dir, `
routes:
  - path: /
    fastcgi:
      to: "`+p.addr+`"
      root: www
`, nil)
	c := httpClient()
	for i := 0; i < 30; i++ {
		if resp, body := get(t, c, g.url("/status.php")); resp.StatusCode != 201 {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
	}
	if n := p.count.Load(); n > 2 {
		t.Fatalf("%d connections for 30 requests", n)
	}
	st := g.srv.FastCGIStats()
	if st.Requests != 30 || st.Reused < 28 || st.Dials > 2 || st.Open < 1 || st.Errors != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestFPMStalePooledConn: a worker that ends after each request
// (pm.max_requests) closes its kept connection; the next request on it
// is sent again on a fresh connection, so the client never sees it.
func TestFPMStalePooledConn(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "www"), scripts)
	f := startFPM(t, dir, "a", false, 2, "pm.max_requests = 1")
	g := startGale(t, dir, `
routes:
  - path: /
    fastcgi:
      to: "`+f.listen+`"
      root: www
`, nil)
	c := httpClient()
	for i := 0; i < 20; i++ {
		if resp, body := get(t, c, g.url("/status.php")); resp.StatusCode != 201 {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
}

// TestFPMBalancing: a route over two pools (a unix socket and TCP) uses
// both; with one of them gone, every request is still served (the failed
// connects try the other, and passive health takes the dead one out).
func TestFPMBalancing(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "www"), scripts)
	a := startFPM(t, dir, "a", false, 2)
	b := startFPM(t, dir, "b", true, 2)
	g := startGale(t, dir, `
server: {event_loops: 1}
routes:
  - path: /
    fastcgi:
      to: ["`+a.listen+`", "`+b.listen+`"]
      root: www
      health_check: {passive: {fails: 1, cooldown: 1m}}
`, nil)
	c := httpClient()
	seen := map[string]int{}
	for i := 0; i < 10; i++ {
		_, body := get(t, c, g.url("/env.php"))
		seen[decodeEnv(t, body).Pool]++
	}
	if seen["a"] != 5 || seen["b"] != 5 {
		t.Fatalf("round-robin: %v", seen)
	}
	b.stop()
	for i := 0; i < 10; i++ {
		resp, body := get(t, c, g.url("/env.php"))
		if resp.StatusCode != 200 || decodeEnv(t, body).Pool != "a" {
			t.Fatalf("with b gone: %d %q", resp.StatusCode, body)
		}
	}
}

// TestFPMMoreClientsThanWorkers: PHP-FPM gives each connection a worker
// until it closes, so gale keeps at most max_conns connections to a pool
// and queues the requests beyond them: 24 concurrent requests to 2
// workers all complete, none waits behind a kept connection until it
// times out.
func TestFPMMoreClientsThanWorkers(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "www"), map[string]string{"nap.php": `<?php usleep(20000); echo "ok";`})
	f := startFPM(t, dir, "a", false, 2)
	g := startGale(t, dir, `
server: {event_loops: 2}
routes:
  - path: /
    fastcgi:
      to: "`+f.listen+`"
      root: www
      max_conns: 2
      timeouts: {response_header: 5s}
`, nil)
	var wg sync.WaitGroup
	errs := make(chan string, 24)
	for i := 0; i < 24; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := httpClient()
			for j := 0; j < 3; j++ {
				resp, err := c.Get(g.url("/nap.php"))
				if err != nil {
					errs <- err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(b) != "ok" {
					errs <- fmt.Sprintf("%d %q", resp.StatusCode, b)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
