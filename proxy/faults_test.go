package proxy_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Upstream faults an edge server meets, each with its precise outcome,
// and none of them stalling the event loop for the loop's other clients
// (the server runs one loop, so every client shares it).

// faultRoutes proxies / to the upstreams and answers /local itself.
func faultRoutes(timeouts string, to ...string) string {
	return proxyRoute(to...) + timeouts +
		"  - path: /local\n    respond: {body: \"local\"}\n"
}

// TestUpstreamKilledMidResponse: an upstream that dies in the middle of a
// body leaves the client with a response that cannot pass for complete
// (the connection closes before Content-Length, or before the last
// chunk), and the next requests are served by the healthy upstream.
func TestUpstreamKilledMidResponse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, head, part string }{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", strings.Repeat("x", 5000)},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "1388\r\n" + strings.Repeat("x", 5000) + "\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dying := newRawUpstream(t, func(conn net.Conn) {
				readHead(bufio.NewReader(conn))
				io.WriteString(conn, c.head+c.part)
				conn.(*net.TCPConn).SetLinger(0) // killed: a reset, no orderly end
			})
			healthy := named(t, "healthy")
			g := startGale(t, faultRoutes("      health_check: {passive: {fails: 1, cooldown: 1m}}\n", dying.addr(), healthy.hostport()))
			var cut bool
			for range 2 { // round-robin: one of the first two goes to the dying upstream
				rc := g.dial()
				rc.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
				resp, err := http.ReadResponse(rc.br, nil)
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				if resp.Header.Get("X-Upstream") == "healthy" {
					if err != nil || string(body) != "healthy" {
						t.Fatalf("healthy upstream: %q, %v", body, err)
					}
					continue
				}
				if err == nil || len(body) != 5000 {
					t.Fatalf("killed upstream: %d bytes read and the body looked complete (%v)", len(body), err)
				}
				if !readToEnd(rc.c, 10*time.Second) {
					t.Fatal("the connection stayed open after the cut body")
				}
				cut = true
			}
			if !cut {
				t.Fatal("no request reached the dying upstream")
			}
			cl := newClient()
			for range 4 {
				if code, body := g.get(cl, "/"); code != 200 || body != "healthy" {
					t.Fatalf("after the kill: %d %q, want the healthy upstream", code, body)
				}
			}
		})
	}
}

// TestUpstreamFaultsDoNotStallTheLoop: upstreams that accept and never
// answer, reset, answer garbage, or trickle their head a byte a second
// get 502 or 504 within the route's timeouts, while a client of the same
// loop is answered meanwhile (before the faulty exchange ends).
func TestUpstreamFaultsDoNotStallTheLoop(t *testing.T) {
	t.Parallel()
	silent := newRawUpstream(t, func(c net.Conn) {
		readHead(bufio.NewReader(c))
		_, _ = io.Copy(io.Discard, c) // never answers
	})
	reset := newRawUpstream(t, func(c net.Conn) {
		readHead(bufio.NewReader(c))
		c.(*net.TCPConn).SetLinger(0)
	})
	garbage := newRawUpstream(t, func(c net.Conn) {
		readHead(bufio.NewReader(c))
		io.WriteString(c, "\x16\x03\x01 not http at all\r\n\r\n")
	})
	trickle := newRawUpstream(t, func(c net.Conn) {
		readHead(bufio.NewReader(c))
		for _, b := range []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") {
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
			// The pace is the point: each byte comes well within the
			// 1.5 s response_header, the head long after it.
			time.Sleep(time.Second)
		}
	})
	for _, c := range []struct {
		name   string
		up     string
		status int
	}{
		{"never answers", silent.addr(), 504},
		{"resets", reset.addr(), 502},
		{"garbage", garbage.addr(), 502},
		{"trickles", trickle.addr(), 504},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g := startGale(t, faultRoutes("      timeouts: {response_header: 1500ms}\n      retries: 0\n", c.up))
			faulty := make(chan int, 1)
			var faultyDone time.Time
			var mu sync.Mutex
			rc := g.dial()
			start := time.Now()
			rc.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
			go func() {
				resp, err := http.ReadResponse(rc.br, nil)
				mu.Lock()
				faultyDone = time.Now()
				mu.Unlock()
				if err != nil {
					faulty <- 0
					return
				}
				resp.Body.Close()
				faulty <- resp.StatusCode
			}()
			// Another client of the same loop, while the faulty exchange
			// is in flight.
			other := g.dial()
			other.send("GET /local HTTP/1.1\r\nHost: a\r\n\r\n")
			resp, body := other.response("GET")
			answered := time.Now()
			if resp.StatusCode != 200 || body != "local" {
				t.Fatalf("the other client: %d %q", resp.StatusCode, body)
			}
			status := <-faulty
			elapsed := time.Since(start)
			mu.Lock()
			if c.status == 504 && !answered.Before(faultyDone) {
				t.Errorf("the other client was answered only after the faulty exchange ended")
			}
			mu.Unlock()
			if status != c.status {
				t.Fatalf("status %d, want %d", status, c.status)
			}
			if c.status == 504 && (elapsed < 1400*time.Millisecond || elapsed > 10*time.Second) {
				t.Errorf("504 after %v, want it after response_header (1.5 s)", elapsed)
			}
			noUpstreamOpen(t, g)
		})
	}
}

// TestUpstreamTricklingBody: an upstream that sends its head and the
// start of its body, then stops, pauses longer than response_header
// between two reads: the client's response is cut (the connection closes before
// Content-Length), never completed with missing bytes.
func TestUpstreamTricklingBody(t *testing.T) {
	t.Parallel()
	up := newRawUpstream(t, func(c net.Conn) {
		readHead(bufio.NewReader(c))
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab")
		io.Copy(io.Discard, c) // then nothing, until gale gives up and closes
	})
	g := startGale(t, faultRoutes("      timeouts: {response_header: 500ms}\n", up.addr()))
	rc := g.dial()
	rc.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || err == nil || len(body) >= 10 {
		t.Fatalf("status %d, %q (%v): want a body cut short", resp.StatusCode, body, err)
	}
	noUpstreamOpen(t, g)
}
