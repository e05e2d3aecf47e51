package codec

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// proxyV2 builds a version 2 header: command, family, and the bytes that
// follow the 16-byte head.
func proxyV2(cmd, fam byte, rest []byte) []byte {
	b := append([]byte(nil), proxyV2Sig...)
	b = append(b, 0x20|cmd, fam, 0, 0)
	binary.BigEndian.PutUint16(b[14:], uint16(len(rest)))
	return append(b, rest...)
}

// v2TCP4 is a PROXY command for 192.0.2.7:41000 to 198.51.100.1:443.
func v2TCP4(tlv []byte) []byte {
	rest := []byte{192, 0, 2, 7, 198, 51, 100, 1, 0xa0, 0x28, 0x01, 0xbb}
	return proxyV2(1, 0x11, append(rest, tlv...))
}

func TestParseProxyHeader(t *testing.T) {
	v6 := make([]byte, 36)
	copy(v6, netip.MustParseAddr("2001:db8::1").AsSlice())
	copy(v6[16:], netip.MustParseAddr("2001:db8::2").AsSlice())
	binary.BigEndian.PutUint16(v6[32:], 50000)
	binary.BigEndian.PutUint16(v6[34:], 443)
	for _, c := range []struct {
		name string
		in   string
		n    int // bytes of header; -1: an error; -2: needs more
		src  string
	}{
		{"v1 tcp4", "PROXY TCP4 192.0.2.7 198.51.100.1 41000 443\r\nGET /", 45, "192.0.2.7:41000"},
		{"v1 tcp6", "PROXY TCP6 2001:db8::1 2001:db8::2 50000 443\r\n", 46, "[2001:db8::1]:50000"},
		{"v1 unknown", "PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n", 35, ""},
		{"v1 unknown bare", "PROXY UNKNOWN\r\n", 15, ""},
		{"v1 partial", "PROXY TCP4 192.0.2.7 198.51", -2, ""},
		{"v1 prefix", "PRO", -2, ""},
		{"v1 wrong family", "PROXY TCP4 2001:db8::1 2001:db8::2 1 2\r\n", -1, ""},
		{"v1 bad port", "PROXY TCP4 192.0.2.7 198.51.100.1 041000 443\r\n", -1, ""},
		{"v1 port range", "PROXY TCP4 192.0.2.7 198.51.100.1 65536 443\r\n", -1, ""},
		{"v1 double space", "PROXY TCP4  192.0.2.7 198.51.100.1 1 2\r\n", -1, ""},
		{"v1 bare LF", "PROXY TCP4 192.0.2.7 198.51.100.1 1 2\n\r\n", -1, ""},
		{"v1 too long", "PROXY TCP4 " + string(make([]byte, 120)), -1, ""},
		{"v1 zone", "PROXY TCP6 fe80::1%eth0 2001:db8::2 1 2\r\n", -1, ""},
		{"no header", "GET / HTTP/1.1\r\n\r\n", -1, ""},
		{"tls first", "\x16\x03\x01\x00", -1, ""},
		{"v2 tcp4", string(v2TCP4(nil)) + "GET", 28, "192.0.2.7:41000"},
		{"v2 tcp4 tlv", string(v2TCP4([]byte{0x04, 0, 1, 'x'})), 32, "192.0.2.7:41000"},
		{"v2 tcp6", string(proxyV2(1, 0x21, v6)), 52, "[2001:db8::1]:50000"},
		{"v2 local", string(proxyV2(0, 0x00, nil)), 16, ""},
		{"v2 udp", string(proxyV2(1, 0x12, make([]byte, 12))), 28, ""},
		{"v2 partial", string(v2TCP4(nil)[:20]), -2, ""},
		{"v2 short sig", "\r\n\r\n\x00\r\n", -2, ""},
		{"v2 bad sig", "\r\n\r\n\x00\r\nQUIX\n\x21\x11\x00\x0c", -1, ""},
		{"v2 version 1", string(append(append([]byte(nil), proxyV2Sig...), 0x11, 0x11, 0, 12)), -1, ""},
		{"v2 command 2", string(proxyV2(2, 0x11, make([]byte, 12))), -1, ""},
		{"v2 short tcp4", string(proxyV2(1, 0x11, make([]byte, 8))), -1, ""},
		{"v2 family", string(proxyV2(1, 0x41, make([]byte, 12))), -1, ""},
		{"v2 too long", string(append(append([]byte(nil), proxyV2Sig...), 0x21, 0x11, 0x08, 0x00)), -1, ""},
	} {
		n, src, ok, err := ParseProxyHeader([]byte(c.in))
		switch {
		case c.n == -2:
			if err != ErrNeedMore {
				t.Errorf("%s: %d %v %v, want ErrNeedMore", c.name, n, src, err)
			}
		case c.n == -1:
			if _, isErr := err.(*Error); !isErr {
				t.Errorf("%s: %d %v %v, want an error", c.name, n, src, err)
			}
		default:
			want := ""
			if ok {
				want = src.String()
			}
			if err != nil || n != c.n || want != c.src {
				t.Errorf("%s: %d %q %v, want %d %q", c.name, n, want, err, c.n, c.src)
			}
		}
	}
}

// FuzzProxyHeader checks that the parser never reads past its input,
// that a header it accepts is no longer than the input and is accepted
// the same with more bytes after it, and that a prefix of it needs more.
func FuzzProxyHeader(f *testing.F) {
	f.Add([]byte("PROXY TCP4 192.0.2.7 198.51.100.1 41000 443\r\n"))
	f.Add([]byte("PROXY UNKNOWN\r\n"))
	f.Add(v2TCP4([]byte{0x04, 0, 1, 'x'}))
	f.Add(proxyV2(0, 0, nil))
	f.Fuzz(func(t *testing.T, in []byte) {
		n, src, ok, err := ParseProxyHeader(in)
		if err != nil {
			return
		}
		if n <= 0 || n > len(in) {
			t.Fatalf("header of %d bytes in %d", n, len(in))
		}
		n2, src2, ok2, err2 := ParseProxyHeader(append(in[:n:n], "GET / HTTP/1.1\r\n"...))
		if err2 != nil || n2 != n || src2 != src || ok2 != ok {
			t.Fatalf("with bytes after it: %d %v %v %v, alone %d %v %v", n2, src2, ok2, err2, n, src, ok)
		}
		if _, _, _, err := ParseProxyHeader(in[:n-1]); n > 1 && err != ErrNeedMore {
			t.Fatalf("a prefix of %d bytes: %v, want ErrNeedMore", n-1, err)
		}
	})
}
