package app

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// proxyV2Header is a version 2 PROXY command naming src (TCP) as the
// client of a connection to 198.51.100.1:443 (or [2001:db8::2]:443).
func proxyV2Header(src netip.AddrPort) []byte {
	b := []byte("\r\n\r\n\x00\r\nQUIT\n\x21")
	var addrs []byte
	if src.Addr().Is4() {
		b = append(b, 0x11)
		a := src.Addr().As4()
		addrs = append(append(addrs, a[:]...), 198, 51, 100, 1)
	} else {
		b = append(b, 0x21)
		a := src.Addr().As16()
		d := netip.MustParseAddr("2001:db8::2").As16()
		addrs = append(append(addrs, a[:]...), d[:]...)
	}
	addrs = binary.BigEndian.AppendUint16(addrs, src.Port())
	addrs = binary.BigEndian.AppendUint16(addrs, 443)
	b = binary.BigEndian.AppendUint16(b, uint16(len(addrs)))
	return append(b, addrs...)
}

// TestProxyProtocol: on listeners with proxy_protocol, the client a PROXY
// header (version 1 or 2, over TCP and under TLS, whole or a byte at a
// time) names is the client for access rules and the forwarded fields; a
// header naming none leaves the balancer's address; a connection without
// a valid header is closed unanswered and counted.
func TestProxyProtocol(t *testing.T) {
	t.Parallel()
	up := netUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "xff=%s", r.Header.Get("X-Forwarded-For"))
	}))
	ts := startTLSServer(t, `listen:
  - {address: "127.0.0.1:0", proxy_protocol: true, tls: {certificates: [$CERT]}}
  - {address: "127.0.0.1:0", proxy_protocol: true}
routes:
  - path: /only/
    access: [{allow: [192.0.2.0/24]}]
    respond: {status: 200, body: "allowed\n"}
  - path: /
    proxy: {to: ["`+up+`"]}
`, nil, nil)
	plain := ts.srv.Addrs()[1]
	ask := func(c net.Conn, path string) (int, string) {
		t.Helper()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	dial := func(addr string, header []byte, trickle bool) net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if trickle {
			for _, b := range header {
				if _, err := c.Write([]byte{b}); err != nil {
					t.Fatal(err)
				}
			}
		} else if _, err := c.Write(header); err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, c := range []struct {
		name, header, xff string
		trickle           bool
	}{
		{"v1 tcp4", "PROXY TCP4 192.0.2.7 198.51.100.1 41000 443\r\n", "192.0.2.7", false},
		{"v1 tcp4 trickled", "PROXY TCP4 192.0.2.8 198.51.100.1 41000 443\r\n", "192.0.2.8", true},
		{"v1 tcp6", "PROXY TCP6 2001:db8::1 2001:db8::2 50000 443\r\n", "2001:db8::1", false},
		{"v1 unknown", "PROXY UNKNOWN\r\n", "127.0.0.1", false},
		{"v2 tcp4", string(proxyV2Header(netip.MustParseAddrPort("192.0.2.9:1234"))), "192.0.2.9", false},
		{"v2 tcp6 trickled", string(proxyV2Header(netip.MustParseAddrPort("[2001:db8::7]:1234"))), "2001:db8::7", true},
		{"v2 local", "\r\n\r\n\x00\r\nQUIT\n\x20\x00\x00\x00", "127.0.0.1", false},
	} {
		conn := dial(plain, []byte(c.header), c.trickle)
		if st, body := ask(conn, "/x"); st != 200 || body != "xff="+c.xff {
			t.Errorf("%s: %d %q, want xff=%s", c.name, st, body, c.xff)
		}
		want := 403
		if strings.HasPrefix(c.xff, "192.0.2.") {
			want = 200
		}
		if st, _ := ask(conn, "/only/"); st != want {
			t.Errorf("%s: the access rule answered %d, want %d", c.name, st, want)
		}
	}
	// Under TLS: the header comes before the ClientHello.
	raw := dial(ts.tlsAddr, proxyV2Header(netip.MustParseAddrPort("192.0.2.10:999")), false)
	tc := tls.Client(raw, ts.clientConfig("localhost"))
	if st, body := ask(tc, "/x"); st != 200 || body != "xff=192.0.2.10" {
		t.Errorf("TLS: %d %q", st, body)
	}
	// No header, or a bad one: closed unanswered.
	before := ts.srv.Stats().BadProxyHdr
	for _, bad := range []string{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "PROXY TCP4 192.0.2.7 198.51.100.1 041000 443\r\n", "PROXY TCP5 x\r\n", "\r\n\r\n\x00\r\nQUIT\n\x21\x41\x00\x00"} {
		c := dial(plain, []byte(bad), false)
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if got, err := io.ReadAll(c); len(got) != 0 {
			t.Errorf("%q: answered %q (%v), want a close", bad, got, err)
		}
	}
	if n := ts.srv.Stats().BadProxyHdr - before; n != 4 {
		t.Errorf("%d connections counted as without a valid header, want 4", n)
	}
}
