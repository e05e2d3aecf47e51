package proxy_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// halfClosingUpstream is a Unix-socket upstream that answers the first
// request of a connection, shutting down its reading side first, and keeps
// the connection open: on a Unix socket gale's next write to it fails at
// once with EPIPE, while gale's side sees no event before it writes. That
// is a pooled connection failing as a request head is written, without a
// race.
func halfClosingUpstream(t *testing.T) string {
	t.Helper()
	sock := t.TempDir() + "/up.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				// Shut reading before answering, so that gale's next
				// write fails whenever it comes.
				c.(*net.UnixConn).CloseRead()
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				<-hold
			}()
		}
	}()
	t.Cleanup(func() { close(hold); ln.Close() })
	return "unix:" + sock
}

// TestLoadReleasedOnWriteFailure sends a request that may not be repeated
// on a pooled connection that fails as its head is written: the 502 must
// give back the request's share of the upstream's load, or
// least-connections and random-two count it against the upstream for
// good.
func TestLoadReleasedOnWriteFailure(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"POST", "PATCH", "GET"} {
		t.Run(method, func(t *testing.T) {
			g := startGale(t, proxyRoute(halfClosingUpstream(t))+"      load_balancing: least-connections\n")
			rc := g.dial()
			rc.send("GET /first HTTP/1.1\r\nHost: a\r\n\r\n")
			if resp, body := rc.response("GET"); resp.StatusCode != 200 || body != "ok" {
				t.Fatalf("first: %d %q", resp.StatusCode, body)
			}
			body := ""
			if method != "GET" {
				body = "x"
			}
			rc.send(method + " /second HTTP/1.1\r\nHost: a\r\nContent-Length: " + map[bool]string{true: "1", false: "0"}[body != ""] + "\r\n\r\n" + body)
			resp, _ := rc.response(method)
			want := 502 // not safe to repeat
			if method == "GET" {
				want = 200 // repeated on a fresh connection
			}
			if resp.StatusCode != want {
				t.Fatalf("%s on the failing connection: %d, want %d", method, resp.StatusCode, want)
			}
			// The 502 is written once the exchange has ended; a relayed
			// response just before its exchange ends: wait for the load
			// to come back to zero (it never does when a share leaks).
			eventually(t, 5*time.Second, "the upstream's load back to 0", func() bool {
				return g.srv.ProxyStats().Load == 0
			})
		})
	}
}
