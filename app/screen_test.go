package app

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"gale/app/wire"
)

// TestListenerScreening: a listener's deny list closes a client's
// connections at accept, unanswered (after the PROXY header on a
// proxy_protocol listener, by the client it names), and
// max_conns_per_address closes a client's connections past the limit
// until one of its open ones closes; every refusal is counted.
func TestListenerScreening(t *testing.T) {
	t.Parallel()
	ts := startServer(t, `listen:
  - {address: "127.0.0.1:0", deny: [127.0.0.2/32]}
  - {address: "127.0.0.1:0", max_conns_per_address: 2}
  - {address: "127.0.0.1:0", proxy_protocol: true, deny: [192.0.2.0/24]}
routes:
  - path: /
    respond: {status: 200, body: "ok\n"}
`, nil)
	addrs := ts.srv.Addrs()
	dialFrom := func(local, addr string) net.Conn {
		t.Helper()
		d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	// served sends one request on c and reports whether it was answered;
	// a connection closed unanswered reads nothing.
	served := func(c net.Conn, prefix string) bool {
		t.Helper()
		if _, err := io.WriteString(c, prefix+"GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return false
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	before := ts.srv.Stats().Screened
	if served(dialFrom("127.0.0.2", addrs[0]), "") {
		t.Error("a denied address was served")
	}
	if !served(dialFrom("127.0.0.3", addrs[0]), "") {
		t.Error("an address the deny list does not name was refused")
	}
	first, second := dialFrom("127.0.0.4", addrs[1]), dialFrom("127.0.0.4", addrs[1])
	if !served(first, "") || !served(second, "") {
		t.Fatal("the first two connections of an address were refused")
	}
	if served(dialFrom("127.0.0.4", addrs[1]), "") {
		t.Error("a third connection past max_conns_per_address 2 was served")
	}
	if !served(dialFrom("127.0.0.5", addrs[1]), "") {
		t.Error("another address was refused")
	}
	first.Close()
	eventually(t, 5*time.Second, "a place freed for 127.0.0.4", func() bool {
		return served(dialFrom("127.0.0.4", addrs[1]), "")
	})
	if served(dialFrom("127.0.0.1", addrs[2]), "PROXY TCP4 192.0.2.7 198.51.100.1 41000 443\r\n") {
		t.Error("a client the PROXY header names in the deny list was served")
	}
	if !served(dialFrom("127.0.0.1", addrs[2]), "PROXY TCP4 198.51.100.9 198.51.100.1 41000 443\r\n") {
		t.Error("a client the deny list does not name was refused behind the PROXY header")
	}
	if n := ts.srv.Stats().Screened - before; n < 3 {
		t.Errorf("%d refusals counted, want at least 3", n)
	}
}

// TestAddrKey: an IPv4 client reported as an IPv4-mapped IPv6 address (a
// dual-stack listener) is counted as itself, not with every other IPv4
// client under ::/64; an IPv6 client by its /64.
func TestAddrKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1":           "192.0.2.1",
		"::ffff:192.0.2.1":    "192.0.2.1",
		"::ffff:198.51.100.7": "198.51.100.7",
		"2001:db8:1:2:3::4":   "2001:db8:1:2::",
	} {
		if got := wire.AddrKey(netip.MustParseAddr(in)); got != netip.MustParseAddr(want) {
			t.Errorf("AddrKey(%s) = %s, want %s", in, got, want)
		}
	}
}
