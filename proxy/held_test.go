package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// heldConfig is a server whose clients fall behind quickly (small socket
// buffers, 64 KiB of buffered output) and whose write timeout is short.
const heldConfig = "server: {event_loops: 1, max_buffered_output: 64KiB, socket_send_buffer: 64KiB, timeouts: {write: 1s}}\n"

// interimFlood answers every request with 103 Early Hints responses, as
// fast as the socket takes them, until size bytes went out.
func interimFlood(t *testing.T, size int64) *rawUpstream {
	hint := "HTTP/1.1 103 Early Hints\r\nLink: </" + strings.Repeat("x", 900) + ">; rel=preload\r\n\r\n"
	return newRawUpstream(t, func(c net.Conn) {
		if readHead(bufio.NewReader(c)) == "" {
			return
		}
		for sent := int64(0); sent < size; sent += int64(len(hint)) {
			if _, err := io.WriteString(c, hint); err != nil {
				return
			}
		}
	})
}

// memPeak samples the heap in use and RSS until stop is closed.
type memPeak struct {
	heap0, rss0 int64
	heap, rss   int64
	stop, done  chan struct{}
}

func watchMemory() *memPeak {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := &memPeak{heap0: int64(ms.HeapInuse), rss0: rssBytes(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			runtime.ReadMemStats(&ms)
			m.heap = max(m.heap, int64(ms.HeapInuse)-m.heap0)
			m.rss = max(m.rss, rssBytes()-m.rss0)
			select {
			case <-m.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return m
}

func (m *memPeak) end() { close(m.stop); <-m.done }

// TestHeldWhileRequestUnfinished sends requests whose response cannot
// leave the loop (the request body is unfinished, or only interim
// responses arrive) from a client that reads nothing, while the upstream
// sends 256 MiB as fast as it can. gale must keep its memory bounded,
// cut the upstream off, and close the client by the write timeout
// (measured as bytes leaving), however the request or response is framed.
func TestHeldWhileRequestUnfinished(t *testing.T) {
	if testing.Short() {
		t.Skip("256 MiB upstreams against clients that read nothing: not in -short")
	}
	const size = 256 << 20
	for _, c := range []struct {
		name, req string
		up        func(t *testing.T) *rawUpstream
	}{
		{"length body unfinished", "POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n",
			func(t *testing.T) *rawUpstream { return bigUpstream(t, size, "length") }},
		{"chunked body unfinished", "POST /big HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
			func(t *testing.T) *rawUpstream { return bigUpstream(t, size, "length") }},
		{"chunked response de-chunked for HTTP/1.0", "POST /big HTTP/1.0\r\nHost: a\r\nContent-Length: 1\r\n\r\n",
			func(t *testing.T) *rawUpstream { return bigUpstream(t, size, "chunked") }},
		{"close-delimited response", "POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n",
			func(t *testing.T) *rawUpstream { return bigUpstream(t, size, "close") }},
		{"interim responses in a loop", "GET /hints HTTP/1.1\r\nHost: a\r\n\r\n",
			func(t *testing.T) *rawUpstream { return interimFlood(t, size) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := c.up(t)
			g := startGale(t, proxyRoute(up.addr())+heldConfig)
			mem := watchMemory()
			conn, err := net.Dial("tcp", g.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.(*net.TCPConn).SetReadBuffer(4 << 10) // what gale sent stays in its buffer
			t0 := time.Now()
			io.WriteString(conn, c.req)
			// Read nothing until the write timeout closed the connection.
			eventually(t, 10*time.Second, "the write timeout", func() bool { return g.srv.Stats().TimedOut >= 1 })
			mem.end()
			t.Logf("closed by the write timeout after %v", time.Since(t0))
			conn.Close()
			s := g.srv.ProxyStats()
			t.Logf("heap in use grew %.1f MiB, RSS %.1f MiB; held %d, cut %d", float64(mem.heap)/(1<<20), float64(mem.rss)/(1<<20), s.Held, s.Cut)
			if mem.heap > 32<<20 || mem.rss > 32<<20 {
				t.Errorf("memory grew by %d MiB heap, %d MiB RSS, want well under 32 MiB", mem.heap>>20, mem.rss>>20)
			}
			if s.Held != 1 || s.Cut != 1 || s.Handoffs != 0 {
				t.Errorf("held %d cut %d handoffs %d, want 1, 1, 0", s.Held, s.Cut, s.Handoffs)
			}
			eventually(t, 5*time.Second, "the upstream connection to close", func() bool { return g.srv.ProxyStats().Open == 0 })
		})
	}
}

// TestWriteTimeoutWhileOutputGrows has an upstream fill the client's
// buffers and then trickle more of the response, so that gale's output
// for a client that reads nothing keeps growing, but stays under
// max_buffered_output: the write timeout must still fire, since nothing
// leaves.
func TestWriteTimeoutWhileOutputGrows(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a write timeout: not in -short")
	}
	up := newRawUpstream(t, func(c net.Conn) {
		if readHead(bufio.NewReader(c)) == "" {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", 1<<30)
		buf := make([]byte, 1<<20)
		if _, err := c.Write(buf); err != nil {
			return
		}
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := c.Write(buf[:512]); err != nil {
				return
			}
			// The trickle (about 50 KB/s): gale's output must keep
			// growing, slowly, across the 1 s write timeout; the pace
			// over time is the point, not a synchronisation.
			time.Sleep(10 * time.Millisecond)
		}
	})
	g := startGale(t, proxyRoute(up.addr())+
		"server: {event_loops: 1, max_buffered_output: 8MiB, socket_send_buffer: 64KiB, timeouts: {write: 1s}}\n")
	for _, req := range []string{
		"GET /trickle HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /trickle HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n",
	} {
		t0 := g.srv.Stats().TimedOut
		conn, err := net.Dial("tcp", g.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.(*net.TCPConn).SetReadBuffer(64 << 10)
		io.WriteString(conn, req)
		eventually(t, 8*time.Second, "the write timeout", func() bool { return g.srv.Stats().TimedOut > t0 })
		if !readToEnd(conn, 10*time.Second) {
			t.Fatal("the connection is still open after its write timeout")
		}
	}
}

// TestHeldResumes has a client fall behind while its request body is
// unfinished, so that the response waits in the loop, then send the rest
// of its body: the response must carry on (off the loop now) with every
// byte in place.
func TestHeldResumes(t *testing.T) {
	const first, rest = 768 << 10, 7 << 20
	up := newRawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if readHead(br) == "" {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", first+rest)
		body := make([]byte, first+rest)
		pattern(body, 0)
		if _, err := c.Write(body[:first]); err != nil {
			return
		}
		if _, err := br.ReadByte(); err != nil { // the request body
			return
		}
		c.Write(body[first:])
	})
	g := startGale(t, proxyRoute(up.addr())+heldConfig)
	conn, err := net.Dial("tcp", g.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(64 << 10)
	io.WriteString(conn, "POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n")
	eventually(t, 5*time.Second, "the response to be held", func() bool { return g.srv.ProxyStats().Held == 1 })
	io.WriteString(conn, "x")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || len(body) != first+rest {
		t.Fatalf("%d bytes, %v; want %d (%+v %+v)", len(body), err, first+rest, g.srv.ProxyStats(), g.srv.Stats())
	}
	if bad := checkPattern(body, 0); bad >= 0 {
		t.Fatalf("wrong byte at %d", bad)
	}
	if s := g.srv.ProxyStats(); s.Cut != 0 || s.Handoffs != 1 {
		t.Errorf("cut %d handoffs %d, want 0 and 1", s.Cut, s.Handoffs)
	}
}

// TestHeldReadBodyTimeout: a client sends part of its body and reads
// nothing while the upstream answers early. The response is held (well
// under the bound that cuts it), and the client must still be timed out
// by read_body, not kept until the (much longer) write timeout.
func TestHeldReadBodyTimeout(t *testing.T) {
	var srv atomic.Pointer[gale]
	up := newRawUpstream(t, func(c net.Conn) {
		if readHead(bufio.NewReader(c)) == "" {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", 1<<30)
		// Small socket buffers and a send paced by gale's reads: what
		// the upstream sent is what gale read, not megabytes waiting in
		// kernel buffers that would reach gale after it held and cut the
		// hold on a loaded machine.
		_ = c.(*net.TCPConn).SetWriteBuffer(64 << 10)
		chunk := make([]byte, 64<<10)
		held := func() bool { g := srv.Load(); return g != nil && g.srv.ProxyStats().Held >= 1 }
		for !held() { // once gale holds, send no more, so the hold is not cut
			if _, err := c.Write(chunk); err != nil {
				return
			}
			waitUntil(10*time.Second, func() bool { return held() || inFlight(c.LocalAddr(), c.RemoteAddr()) == 0 })
		}
		io.Copy(io.Discard, c) // until gale closes the connection
	})
	g := startGale(t, proxyRoute(up.addr())+
		"server: {event_loops: 1, max_buffered_output: 64KiB, socket_send_buffer: 64KiB, timeouts: {write: 60s, read_body: 1s}}\n")
	srv.Store(g)
	conn, err := net.Dial("tcp", g.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	io.WriteString(conn, "POST /early HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nx")
	eventually(t, 10*time.Second, "the read_body timeout", func() bool {
		s := g.srv.ProxyStats()
		if s.Cut != 0 {
			t.Fatalf("the hold was cut (the upstream ran a MiB ahead): %+v", s)
		}
		return s.Timeouts >= 1
	})
	if s := g.srv.ProxyStats(); s.Held != 1 || s.Cut != 0 {
		t.Errorf("held %d cut %d, want 1 and 0", s.Held, s.Cut)
	}
	eventually(t, 5*time.Second, "the upstream connection to close", func() bool { return g.srv.ProxyStats().Open == 0 })
}
