package app

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gale/config"
	"gale/internal/poll"
)

// eventually polls cond for up to d (a failsafe: cond waits on a
// counter); see waitUntil.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !waitUntil(d, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// cacheIdle waits until s's file cache has no load or compression queued
// or running: what the requests so far asked of its workers is done.
func cacheIdle(t *testing.T, s *Server) {
	t.Helper()
	eventually(t, 10*time.Second, "the file cache's workers to be idle", func() bool { return s.files.Stats().Pending == 0 })
}

// waitUntil polls cond (poll.Until) until it holds or d has passed, and
// reports whether it held; the caller's own checks then say what is
// wrong. cond reads a counter, a scrape, a log or the kernel, none of
// which announces a change.
func waitUntil(d time.Duration, cond func() bool) bool { return poll.Until(d, cond) }

// TestBudgetCountsUpstreamsAndTransfers: upstream connections and
// off-loop transfers hold descriptors of the budget. A large download
// that the client does not read holds its file and the socket's
// duplicates while it waits; with the budget spent, a proxied request
// that needs a new upstream connection is answered 503 without a dial, a
// large file that needs a transfer is answered 503, and a new client
// connection is answered 503 and closed. With room again the same
// requests are served, and once every client left and the upstream
// closed its pooled connection, the count is back where it started.
func TestBudgetCountsUpstreamsAndTransfers(t *testing.T) {
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "ok\n")
	}))
	defer up.Close()
	ts := startServer(t, fmt.Sprintf(`
server: {event_loops: 1, max_buffered_output: 64KiB}
routes:
  - path: /api/
    proxy: {to: [%q]}
  - path: /
    static: {root: ./site}
`, strings.TrimPrefix(up.URL, "http://")), map[string]string{"small.txt": "small\n"})
	writeBigFile(t, filepath.Join(ts.dir, "site", "big.bin"), 8<<20)
	budget := ts.srv.sh.Budget
	used := func() int64 { return ts.srv.Stats().Budget.Used }
	base := used()
	if base != 1 {
		t.Fatalf("at start %d descriptors counted; want 1 (the static root)", base)
	}

	// A download that is not read holds the client, its file and the
	// socket's duplicates.
	a := ts.dial()
	_ = a.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprint(a, "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
	eventually(t, 5*time.Second, "the download's descriptors", func() bool { return used() == base+1+2 })

	// Spend the budget: the next client takes the last descriptor.
	budget.SetLimit(used() + 1)
	b := ts.dial()
	bb := bufio.NewReader(b)
	fmt.Fprint(b, "GET /api/x HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, _ := readResponse(t, bb, "GET"); resp.StatusCode != 503 {
		t.Fatalf("proxied request with the budget spent: %d; want 503", resp.StatusCode)
	}
	if s := ts.srv.ProxyStats(); s.Refused != 1 || s.Dials != 0 {
		t.Fatalf("refused %d, dials %d; want 1 and 0", s.Refused, s.Dials)
	}
	fmt.Fprint(b, "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, _ := readResponse(t, bb, "GET"); resp.StatusCode != 503 || !resp.Close {
		t.Fatalf("large file with the budget spent: %d, close %v; want 503 and close", resp.StatusCode, resp.Close)
	}
	expectClosed(t, bb)
	eventually(t, 5*time.Second, "the refused client's descriptor back", func() bool { return used() == base+1+2 })
	budget.SetLimit(used())
	c := ts.dial()
	fmt.Fprint(c, "GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n")
	cb := bufio.NewReader(c)
	if resp, _ := readResponse(t, cb, "GET"); resp.StatusCode != 503 || !resp.Close {
		t.Fatalf("new client with the budget spent: %d, close %v; want 503 and close", resp.StatusCode, resp.Close)
	}
	expectClosed(t, cb)
	if st := ts.srv.Stats(); st.Rejected == 0 || st.Budget.Refused == 0 {
		t.Fatalf("rejected %d, refused %d", st.Rejected, st.Budget.Refused)
	}

	// Room again: served, and the pooled upstream connection stays
	// counted.
	budget.SetLimit(1 << 20)
	d := ts.dial()
	db := bufio.NewReader(d)
	fmt.Fprint(d, "GET /api/x HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, body := readResponse(t, db, "GET"); resp.StatusCode != 200 || body != "ok\n" {
		t.Fatalf("proxied request with room: %d %q", resp.StatusCode, body)
	}
	eventually(t, 5*time.Second, "the client, the download and the pooled upstream", func() bool {
		return used() == base+1+2+1+1
	})

	// Everyone leaves: the abandoned download ends its transfer, and the
	// upstream's close ends the pooled connection.
	a.Close()
	d.Close()
	eventually(t, 10*time.Second, "the clients' descriptors back", func() bool { return used() == base+1 })
	up.CloseClientConnections()
	eventually(t, 5*time.Second, "the starting count", func() bool {
		s := ts.srv.Stats()
		return s.Budget.Used == base && s.Budget.Conns == 0 && s.Open == 0
	})
	if hits.Load() != 1 {
		t.Fatalf("upstream requests %d; want 1", hits.Load())
	}
}

// TestReloadGivesRootsBack: a reload counts the new routes' root
// directories at once and gives the old ones back after the grace
// period; a reload without room for its roots is refused and the running
// config stays.
func TestReloadGivesRootsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a reload's grace period: not in -short")
	}
	t.Parallel()
	ts := startServer(t, siteConfig, siteFiles)
	cfg, err := config.Load(filepath.Join(ts.dir, "gale.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	used := func() int64 { return ts.srv.Stats().Budget.Used }
	if used() != 1 {
		t.Fatalf("at start %d descriptors; want 1 (the static root)", used())
	}
	ts.srv.sh.Budget.SetLimit(used())
	if _, err := ts.srv.Reload(cfg); err == nil || !strings.Contains(err.Error(), "no descriptors left") {
		t.Fatalf("reload without room: %v", err)
	}
	if used() != 1 {
		t.Fatalf("a refused reload holds %d descriptors; want 1", used())
	}
	ts.srv.sh.Budget.SetLimit(1 << 20)
	if _, err := ts.srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if used() != 2 {
		t.Fatalf("during the grace period %d descriptors; want 2 (old and new roots)", used())
	}
	eventually(t, 15*time.Second, "the old root given back", func() bool { return used() == 1 })
	resp, err := http.Get(ts.url("/a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("after reloads: %d", resp.StatusCode)
	}
}

// The headroom reserves, per loop and listener, the listener copy and
// one accepted connection with reuse_port; without it a whole backlog per
// listener, or a warning when the limit cannot hold that.
func TestHeadroom(t *testing.T) {
	sc := config.Server{EventLoops: 2, ReusePort: true}
	if h, warn := headroom(1<<20, sc, 3); h != fixedHeadroom+workerHeadroom+2*loopHeadroom+2*3*2 || warn != "" {
		t.Fatalf("reuse_port: %d %q", h, warn)
	}
	sc.ReusePort = false
	h, warn := headroom(1<<20, sc, 3)
	if h != fixedHeadroom+workerHeadroom+2*loopHeadroom+2+3+3*somaxconn() || warn != "" {
		t.Fatalf("one acceptor: %d %q", h, warn)
	}
	if _, warn := headroom(1024, sc, 3); !strings.Contains(warn, "reuse_port") {
		t.Fatalf("one acceptor under a low limit: no warning")
	}
	if _, _, err := newBudget(40, &config.Config{Server: config.Server{EventLoops: 4, ReusePort: true}, Listen: make([]config.Listener, 2)}); err == nil {
		t.Fatal("a limit below the headroom must refuse to start")
	}
}

// TestBudgetCountsProxyHandoffs: a proxied body that leaves the loop for a
// client that does not read holds the duplicates of both sockets (the
// upstream's gnet connection is closed), and they are given back when the
// client leaves.
func TestBudgetCountsProxyHandoffs(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 1<<20) // 16 MiB
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(big)))
		io.WriteString(w, big)
	}))
	defer up.Close()
	ts := startServer(t, fmt.Sprintf(`
server: {event_loops: 1, max_buffered_output: 64KiB}
routes:
  - path: /
    proxy: {to: [%q]}
`, strings.TrimPrefix(up.URL, "http://")), nil)
	used := func() int64 { return ts.srv.Stats().Budget.Used }
	base := used()
	c := ts.dial()
	_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprint(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	eventually(t, 5*time.Second, "the handoff", func() bool { return ts.srv.ProxyStats().Handoffs == 1 })
	eventually(t, 5*time.Second, "the client and both duplicates", func() bool { return used() == base+1+2 })
	c.Close()
	eventually(t, 5*time.Second, "the starting count", func() bool {
		s := ts.srv.Stats()
		return s.Budget.Used == base && s.Budget.Conns == 0
	})
}

// TestProxyHeldWithoutDescriptors: a proxied response whose client falls
// behind would leave the loop, but the budget has no room for the two
// duplicates. The response must then be held like one that may not leave
// the loop (bounded by server.max_buffered_output, cut once the upstream
// runs a MiB ahead), never relayed into gnet's buffer without bound; and
// once room is back, the held response leaves the loop and arrives whole.
func TestProxyHeldWithoutDescriptors(t *testing.T) {
	if testing.Short() {
		t.Skip("a client held behind for seconds: not in -short")
	}
	t.Parallel()
	for _, room := range []bool{false, true} {
		t.Run(fmt.Sprintf("room comes back %v", room), func(t *testing.T) {
			const size, step = 16 << 20, 64 << 10
			chunk := strings.Repeat("0123456789abcdef", step/16)
			var srv atomic.Pointer[Server] // the upstream pauses once gale holds (when room comes back)
			resume := make(chan struct{})
			var resumeOnce sync.Once
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", fmt.Sprint(size))
				local := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
				gale, _ := net.ResolveTCPAddr("tcp", r.RemoteAddr)
				for sent := 0; sent < size; sent += step {
					if s := srv.Load(); room && s != nil && s.ProxyStats().Held >= 1 {
						<-resume
					}
					if _, err := io.WriteString(w, chunk); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					// Paced by gale's reads, so that what the upstream sent
					// is what gale read, not megabytes waiting in kernel
					// buffers that a hold would find in one go; once gale
					// holds, it reads no more.
					waitUntil(10*time.Second, func() bool {
						s := srv.Load()
						return inFlight(local, gale) == 0 || s != nil && s.ProxyStats().Held >= 1
					})
				}
			}))
			t.Cleanup(up.Close) // after the server stopped: a paused handler may be writing to it
			ts := startServer(t, fmt.Sprintf(`
server: {event_loops: 1, max_buffered_output: 64KiB}
routes:
  - path: /
    proxy: {to: [%q]}
`, strings.TrimPrefix(up.URL, "http://")), nil)
			srv.Store(ts.srv)
			t.Cleanup(func() { resumeOnce.Do(func() { close(resume) }) })
			budget := ts.srv.sh.Budget
			defer budget.SetLimit(1 << 20)
			conn := ts.dial()
			_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
			eventually(t, 5*time.Second, "the client counted", func() bool { return ts.srv.Stats().Budget.Conns == 1 })
			// Room for the upstream connection's dial (two descriptors
			// until it is enrolled, one after), not for the duplicates of
			// an off-loop copy as well.
			budget.SetLimit(ts.srv.Stats().Budget.Used + 2)
			fmt.Fprint(conn, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
			eventually(t, 10*time.Second, "a hold for want of descriptors", func() bool {
				s := ts.srv.ProxyStats()
				return s.Deferred >= 1 && s.Held >= 1
			})
			if !room {
				eventually(t, 10*time.Second, "the held response cut", func() bool { return ts.srv.ProxyStats().Cut == 1 })
				return
			}
			// Room again: the held bytes are relayed and the response
			// leaves the loop; the upstream stays paused and the client
			// reads nothing until it has, so that neither lets the output
			// drain under the bound first (which would relay in the loop).
			budget.SetLimit(1 << 20)
			eventually(t, 10*time.Second, "the off-loop copy", func() bool { return ts.srv.ProxyStats().Handoffs == 1 })
			resumeOnce.Do(func() { close(resume) })
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, resp.Body); err != nil || n != size {
				t.Fatalf("body: %d bytes of %d, err %v", n, size, err)
			}
		})
	}
}
