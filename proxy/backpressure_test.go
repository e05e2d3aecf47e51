package proxy_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pattern fills b with the bytes of a body at offset off, so that any
// byte lost, repeated or reordered shows.
func pattern(b []byte, off int64) {
	for i := range b {
		p := off + int64(i)
		b[i] = byte(p ^ p>>8 ^ p>>16)
	}
}

// checkPattern reports the first offset in b (at off) that is wrong.
func checkPattern(b []byte, off int64) int64 {
	for i := range b {
		p := off + int64(i)
		if b[i] != byte(p^p>>8^p>>16) {
			return p
		}
	}
	return -1
}

// bigUpstream serves size bytes of pattern per request as fast as the
// socket takes them: with Content-Length, chunked, or until it closes.
func bigUpstream(t *testing.T, size int64, framing string) *rawUpstream {
	return newRawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if readHead(br) == "" {
				return
			}
			switch framing {
			case "length":
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size)
			case "chunked":
				io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
			case "close":
				io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
			}
			buf := make([]byte, 64<<10)
			for off := int64(0); off < size; {
				n := min(int64(len(buf)), size-off)
				pattern(buf[:n], off)
				var err error
				if framing == "chunked" {
					_, err = fmt.Fprintf(c, "%x\r\n%s\r\n", n, buf[:n])
				} else {
					_, err = c.Write(buf[:n])
				}
				if err != nil {
					return
				}
				off += n
			}
			if framing == "chunked" {
				io.WriteString(c, "0\r\n\r\n")
			}
			if framing == "close" {
				return
			}
		}
	})
}

func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestBoundedMemory streams a 256 MiB response from a fast upstream to a
// client reading about 3 MB/s for three seconds: the server must not
// buffer what the client has not taken. Without back-pressure gnet would
// pile up the whole body (the upstream writes it in well under a second).
func TestBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("slow reader for 3 s")
	}
	const size = 256 << 20
	up := bigUpstream(t, size, "length")
	g := startGale(t, proxyRoute(up.addr()))

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap0, rss0 := ms.HeapInuse, rssBytes()

	fds0 := openFDs()
	c, err := net.Dial("tcp", g.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(64 << 10)
	io.WriteString(c, "GET /big HTTP/1.1\r\nHost: a\r\n\r\n")
	br := bufio.NewReaderSize(c, 32<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.ContentLength != size {
		t.Fatalf("head: %v %v", resp, err)
	}
	var read int64
	var peakHeap uint64
	var peakRSS int64
	buf := make([]byte, 32<<10)
	start := time.Now()
	for time.Since(start) < 3*time.Second {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatalf("after %d bytes: %v", read, err)
		}
		if bad := checkPattern(buf[:n], read); bad >= 0 {
			t.Fatalf("wrong byte at %d", bad)
		}
		read += int64(n)
		time.Sleep(10 * time.Millisecond) // a slow client (about 3 MB/s) is the point
		runtime.ReadMemStats(&ms)
		peakHeap = max(peakHeap, ms.HeapInuse)
		peakRSS = max(peakRSS, rssBytes())
	}
	heapGrowth := int64(peakHeap) - int64(heap0)
	rssGrowth := peakRSS - rss0
	t.Logf("read %.1f MB in 3 s; heap in use grew %.1f MiB, RSS %.1f MiB", float64(read)/1e6, float64(heapGrowth)/(1<<20), float64(rssGrowth)/(1<<20))
	if heapGrowth > 64<<20 || rssGrowth > 64<<20 {
		t.Errorf("memory grew by %d MiB heap, %d MiB RSS, want well under 64 MiB", heapGrowth>>20, rssGrowth>>20)
	}
	if read > 32<<20 {
		t.Errorf("read %d bytes: the reader was not slow", read)
	}
	if s := g.srv.ProxyStats(); s.Handoffs != 1 {
		t.Errorf("handoffs %d, want 1", s.Handoffs)
	}
	// The client goes away: the off-loop copy ends and the upstream's
	// writer fails promptly.
	c.Close()
	eventually(t, 3*time.Second, "the upstream connection to close", func() bool {
		return g.srv.ProxyStats().Truncated == 1
	})
	// Every duplicate the off-loop copy made is closed.
	eventually(t, 3*time.Second, "the duplicated sockets to close", func() bool { return openFDs() <= fds0 })
}

// openFDs counts the process's open sockets (splice(2) pipes, which Go
// keeps in a pool, are not counted).
func openFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// TestHandoffComplete makes a slow client fall behind, so the body leaves
// the loop, then reads it all: every byte arrives, and the connections
// carry on (the upstream's re-enrolled into the pool).
func TestHandoffComplete(t *testing.T) {
	const size = 8 << 20
	for _, c := range []struct {
		framing string
		http10  bool
	}{{"length", false}, {"chunked", false}, {"close", false}, {"chunked", true}} {
		name := c.framing
		if c.http10 {
			name += " to HTTP/1.0"
		}
		t.Run(name, func(t *testing.T) {
			up := bigUpstream(t, size, c.framing)
			g := startGale(t, proxyRoute(up.addr()))
			conn, err := net.Dial("tcp", g.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.(*net.TCPConn).SetReadBuffer(64 << 10)
			br := bufio.NewReaderSize(conn, 64<<10)
			for round := 0; round < 2; round++ {
				proto := "HTTP/1.1"
				if c.http10 {
					proto = "HTTP/1.0"
				}
				fmt.Fprintf(conn, "GET /%d %s\r\nHost: a\r\n\r\n", round, proto)
				// Read nothing until the response has left the loop: the
				// client falls behind by not reading.
				eventually(t, 10*time.Second, "the handoff", func() bool { return g.srv.ProxyStats().Handoffs > uint64(round) })
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				body := make([]byte, 0, size)
				buf := make([]byte, 256<<10)
				for {
					n, err := resp.Body.Read(buf)
					body = append(body, buf[:n]...)
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatalf("round %d after %d bytes: %v", round, len(body), err)
					}
				}
				if len(body) != size {
					t.Fatalf("round %d: %d bytes, want %d", round, len(body), size)
				}
				if bad := checkPattern(body, 0); bad >= 0 {
					t.Fatalf("round %d: wrong byte at %d", round, bad)
				}
				if c.framing == "close" || c.http10 {
					if !resp.Close {
						t.Errorf("a close-delimited body must end the client's connection")
					}
					break
				}
			}
			s := g.srv.ProxyStats()
			if s.Handoffs == 0 {
				t.Errorf("no handoff: the client did not fall behind")
			}
			if c.framing == "length" || c.framing == "chunked" && !c.http10 {
				if s.Reenrolls != s.Handoffs || up.conns.Load() != 1 {
					t.Errorf("re-enrolled %d of %d, upstream connections %d; want all, and 1", s.Reenrolls, s.Handoffs, up.conns.Load())
				}
			}
		})
	}
}

// TestSlowUploadFastResponse checks a response that outruns its request's
// upload is still correct (no handoff while the request is in flight).
func TestSlowUploadFastResponse(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "early")
	})
	g := startGale(t, proxyRoute(up.hostport()))
	rc := g.dial()
	rc.send("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1000000\r\n\r\n" + string(bytes.Repeat([]byte("x"), 1000)))
	resp, body := rc.response("POST")
	if resp.StatusCode != 200 || body != "early" || !resp.Close {
		t.Errorf("status %d body %q close %v; the unread body must close the connection", resp.StatusCode, body, resp.Close)
	}
}

// TestClientsGoingAway has clients give up at random points (before the
// response, in its head, in its body, during an off-loop copy): the
// server survives, and every upstream connection ends pooled or closed.
func TestClientsGoingAway(t *testing.T) {
	t.Parallel()
	var clients sync.Map // "?slow=" id → closed when that client has gone
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		if id := r.URL.Query().Get("slow"); id != "" {
			gone, _ := clients.Load(id)
			<-gone.(chan struct{}) // answers once its client has gone
		}
		buf := make([]byte, n)
		pattern(buf, 0)
		if r.URL.Query().Has("chunked") {
			w.(http.Flusher).Flush()
		}
		w.Write(buf)
	})
	g := startGale(t, proxyRoute(up.hostport())+"server: {event_loops: 2, max_buffered_output: 64KiB}\n")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sizes := []int{0, 100, 70_000, 2_000_000}
			for j := range 12 {
				c, err := net.Dial("tcp", g.addr)
				if err != nil {
					t.Error(err)
					return
				}
				c.(*net.TCPConn).SetReadBuffer(16 << 10)
				c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				id := fmt.Sprintf("%d.%d", i, j)
				gone := make(chan struct{})
				clients.Store(id, gone)
				q := []string{"", "?slow=" + id, "?chunked", "?slow=" + id + "&chunked"}[(i+j)%4]
				fmt.Fprintf(c, "GET /%d%s HTTP/1.1\r\nHost: a\r\n\r\n", sizes[(i*7+j)%4], q)
				buf := make([]byte, []int{0, 10, 1000, 100_000}[(i+j*3)%4])
				io.ReadFull(c, buf)
				if j%3 == 0 {
					c.(*net.TCPConn).SetLinger(0) // a reset rather than a close
				}
				c.Close()
				close(gone)
			}
		}()
	}
	wg.Wait()
	// Everything still works, and the pools hold only reusable
	// connections, which the idle sweep would close in time.
	if code, _ := g.get(newClient(), "/5"); code != 200 {
		t.Errorf("after the storm: %d", code)
	}
	eventually(t, 5*time.Second, "the exchanges to end", func() bool {
		s := g.srv.ProxyStats()
		return s.Open <= 32
	})
}

// TestHandoffUnixUpstream leaves the loop with an upstream on a Unix
// socket, and enrolls it back into the pool afterwards.
func TestHandoffUnixUpstream(t *testing.T) {
	t.Parallel()
	const size = 16 << 20 // more than the kernel's socket buffers hold
	sock := t.TempDir() + "/big.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				body := make([]byte, size)
				pattern(body, 0)
				for readHead(br) != "" {
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size)
					if _, err := c.Write(body); err != nil {
						return
					}
				}
			}()
		}
	}()
	g := startGale(t, proxyRoute("unix:"+sock))
	conn, err := net.Dial("tcp", g.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(64 << 10)
	br := bufio.NewReaderSize(conn, 64<<10)
	for round := range 2 {
		fmt.Fprintf(conn, "GET /%d HTTP/1.1\r\nHost: a\r\n\r\n", round)
		if round == 0 { // read nothing until the response has left the loop
			eventually(t, 10*time.Second, "the handoff", func() bool { return g.srv.ProxyStats().Handoffs >= 1 })
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || len(body) != size || checkPattern(body, 0) >= 0 {
			t.Fatalf("round %d: %d bytes, %v", round, len(body), err)
		}
	}
	// Whether the second round falls behind too depends on the
	// machine's speed; every handoff must give its connection back.
	if s := g.srv.ProxyStats(); s.Handoffs == 0 || s.Reenrolls != s.Handoffs || conns.Load() != 1 {
		t.Errorf("handoffs %d re-enrolled %d upstream connections %d; want at least 1, as many, and 1", s.Handoffs, s.Reenrolls, conns.Load())
	}
}
