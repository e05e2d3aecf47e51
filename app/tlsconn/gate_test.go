package tlsconn

import (
	"net/netip"
	"testing"

	"gale/app/wire"
)

// TestShareKey groups IPv6 clients by /64 and IPv4 ones (mapped or not)
// by address.
func TestShareKey(t *testing.T) {
	cases := []struct{ a, b string }{
		{"[2001:db8:1:2:aaaa::1]:1", "[2001:db8:1:2:ffff::9]:2"},
		{"[2001:db8:1:2::1%eth0]:1", "[2001:db8:1:2::2]:1"},
		{"[::ffff:192.0.2.7]:1", "192.0.2.7:9"},
	}
	for _, c := range cases {
		ka, kb := wire.AddrKey(netip.MustParseAddrPort(c.a).Addr()), wire.AddrKey(netip.MustParseAddrPort(c.b).Addr())
		if ka != kb {
			t.Errorf("%s and %s: keys %v and %v, want one", c.a, c.b, ka, kb)
		}
	}
	for _, c := range [][2]string{
		{"[2001:db8:1:2::1]:1", "[2001:db8:1:3::1]:1"},
		{"192.0.2.7:1", "192.0.2.8:1"},
	} {
		if wire.AddrKey(netip.MustParseAddrPort(c[0]).Addr()) == wire.AddrKey(netip.MustParseAddrPort(c[1]).Addr()) {
			t.Errorf("%s and %s share a key", c[0], c[1])
		}
	}
}
