package app

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/http2"
)

// upgradingUpstream is an upstream that switches to HTTP/2 for any request whose
// Upgrade names h2c, in any case, with or without HTTP2-Settings (more
// lenient than RFC 7540 section 3.2 asks, as some servers are), and
// answers other requests over HTTP/1.1 with what it saw of them.
type upgradingUpstream struct {
	*httptest.Server
	h2 atomic.Int64 // requests served over HTTP/2

	mu   sync.Mutex
	seen []string // "upgrade=...;settings=..." of each HTTP/1.1 request
}

func newUpgradingUpstream(t *testing.T) *upgradingUpstream {
	u := &upgradingUpstream{}
	h2srv := &http2.Server{}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.h2.Add(1)
		io.WriteString(w, "reached over h2: "+r.URL.Path)
	})
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := strings.ToLower(strings.Join(r.Header.Values("Upgrade"), ","))
		if strings.Contains(up, "h2c") {
			settings, _ := base64.RawURLEncoding.DecodeString(r.Header.Get("HTTP2-Settings"))
			conn, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
			rw.Flush()
			r.Header.Del("Upgrade")
			h2srv.ServeConn(conn, &http2.ServeConnOpts{Handler: inner, UpgradeRequest: r, Settings: settings})
			return
		}
		u.mu.Lock()
		u.seen = append(u.seen, fmt.Sprintf("upgrade=%s;settings=%s", up, r.Header.Get("HTTP2-Settings")))
		u.mu.Unlock()
		io.WriteString(w, "plain: "+r.URL.Path)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upgradingUpstream) lastSeen() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 {
		return ""
	}
	return u.seen[len(u.seen)-1]
}

// TestProxyH2CUpgradeRefused is issue 29, finding 3: an h2c upgrade
// through a proxy route let the client speak HTTP/2 to the upstream,
// past gale's routes. gale forwards only the protocols the route allows
// (websocket by default), never h2c nor HTTP2-Settings, so the upstream
// answers a plain request; over plain HTTP/1.1 and TLS, in several
// spellings.
func TestProxyH2CUpgradeRefused(t *testing.T) {
	t.Parallel()
	up := newUpgradingUpstream(t)
	ts := startTLSServer(t, fmt.Sprintf(`listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT]}}
  - "127.0.0.1:0"
routes:
  - path: /
    proxy: {to: [%q]}
`, up.Listener.Addr().String()), nil, nil)
	const settings = "AAMAAABkAARAAAAAAAIAAAAA"
	cases := []struct {
		name, fields, upstreamSaw string
	}{
		{"h2c", "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: " + settings + "\r\n", "upgrade=;settings="},
		{"connection-upgrade-only", "Connection: Upgrade\r\nUpgrade: h2c\r\nHTTP2-Settings: " + settings + "\r\n", "upgrade=;settings="},
		{"websocket-and-h2c", "Connection: Upgrade\r\nUpgrade: websocket, h2c\r\nHTTP2-Settings: " + settings + "\r\n", "upgrade=websocket;settings="},
		{"upper-case", "connection: upgrade\r\nupgrade: H2C\r\nhttp2-settings: " + settings + "\r\n", "upgrade=;settings="},
		{"settings-without-upgrade", "HTTP2-Settings: " + settings + "\r\n", "upgrade=;settings="},
	}
	dials := map[string]func() net.Conn{
		"plain": func() net.Conn {
			c, err := net.Dial("tcp", ts.srv.Addrs()[1])
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		},
		"tls": func() net.Conn {
			cfg := ts.clientConfig("localhost")
			cfg.NextProtos = []string{"http/1.1"}
			return ts.dialTLS(cfg)
		},
	}
	for _, over := range []string{"plain", "tls"} {
		for _, tc := range cases {
			t.Run(over+"/"+tc.name, func(t *testing.T) {
				c := dials[over]()
				br := bufio.NewReader(c)
				fmt.Fprintf(c, "GET /secret HTTP/1.1\r\nHost: localhost\r\n%s\r\n", tc.fields)
				resp, body := readResponse(t, br, "GET")
				if resp.StatusCode != 200 || body != "plain: /secret" {
					t.Fatalf("%d %q (%v); want the upstream's plain answer", resp.StatusCode, body, resp.Header)
				}
				if got := up.lastSeen(); got != tc.upstreamSaw {
					t.Fatalf("upstream saw %q; want %q", got, tc.upstreamSaw)
				}
				// The connection goes on as HTTP/1.1.
				resp, body = getOver(t, c, br, "/next")
				if resp.StatusCode != 200 || body != "plain: /next" {
					t.Fatalf("next request: %d %q", resp.StatusCode, body)
				}
			})
		}
	}
	if n := up.h2.Load(); n != 0 {
		t.Fatalf("%d requests reached the upstream over HTTP/2", n)
	}
}

// TestProxyUpgradeOnlyOffered: a 101 switching to a protocol gale did not
// offer on the client's behalf starts no tunnel (502), and
// proxy.upgrade: [] forwards a WebSocket request as a plain one.
func TestProxyUpgradeOnlyOffered(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	heads := make(chan string, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				var head strings.Builder
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					head.WriteString(line)
					if line == "\r\n" {
						break
					}
				}
				heads <- head.String()
				c.Write([]byte("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"))
				io.Copy(io.Discard, br)
			}()
		}
	}()
	addr := ln.Addr().String()
	ts := startServer(t, fmt.Sprintf(`routes:
  - path: /
    proxy: {to: [%q]}
  - path: /none/
    proxy: {to: [%q], upgrade: []}
`, addr, addr), nil)
	const ws = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	for _, tc := range []struct{ path, wantUpgrade string }{
		{"/ws", "Upgrade: websocket\r\n"},
		{"/none/ws", ""},
	} {
		c := ts.dial()
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n", tc.path, ws)
		head := <-heads
		if tc.wantUpgrade != "" && !strings.Contains(head, tc.wantUpgrade) ||
			tc.wantUpgrade == "" && strings.Contains(strings.ToLower(head), "upgrade") {
			t.Fatalf("%s: upstream got %q", tc.path, head)
		}
		resp, _ := readResponse(t, br, "GET")
		if resp.StatusCode != 502 {
			t.Fatalf("%s: %d %v; want 502 for a 101 to h2c", tc.path, resp.StatusCode, resp.Header)
		}
	}
}
