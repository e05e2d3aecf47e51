package codec

import (
	"bytes"
	"encoding/binary"
	"net/netip"
)

// The PROXY protocol (HAProxy's specification, versions 1 and 2): a load
// balancer in front of gale sends one header before the connection's
// first byte, naming the client it accepted. ParseProxyHeader reads it
// strictly from the bytes that arrived, the way the request parser does:
// no I/O, the result does not alias the input.

// proxyV2Sig opens every version 2 header.
var proxyV2Sig = []byte("\r\n\r\n\x00\r\nQUIT\n")

// Bounds of the headers gale accepts.
const (
	proxyV1Max = 107  // the specification's longest version 1 line, CRLF included
	proxyV2Max = 1024 // addresses and TLVs of a version 2 header past its 16 bytes
)

var (
	errProxyHeader  = &Error{400, "malformed PROXY protocol header"}
	errProxyMissing = &Error{400, "no PROXY protocol header"}
)

// ParseProxyHeader reads a PROXY protocol header (version 1 or 2) from the
// front of b. It returns the header's length and, when the header names
// a TCP client (PROXY TCP4/TCP6, or a version 2 PROXY command over TCP),
// its address with ok; a header that names none (UNKNOWN, LOCAL, UDP or
// unix sockets) has ok false, and the connection's own peer stands. It
// returns ErrNeedMore while b may still become a header, and an *Error
// when it cannot.
func ParseProxyHeader(b []byte) (n int, src netip.AddrPort, ok bool, err error) {
	switch {
	case len(b) == 0:
		return 0, src, false, ErrNeedMore
	case b[0] == 'P':
		return parseProxyV1(b)
	case b[0] == '\r':
		return parseProxyV2(b)
	}
	return 0, src, false, errProxyMissing
}

// parseProxyV1 reads "PROXY TCP4|TCP6 SRC DST SPORT DPORT\r\n" or
// "PROXY UNKNOWN ...\r\n".
func parseProxyV1(b []byte) (int, netip.AddrPort, bool, error) {
	var src netip.AddrPort
	const prefix = "PROXY "
	if k := min(len(b), len(prefix)); string(b[:k]) != prefix[:k] {
		return 0, src, false, errProxyMissing
	}
	end := bytes.Index(b[:min(len(b), proxyV1Max)], []byte("\r\n"))
	if end < 0 {
		if len(b) >= proxyV1Max {
			return 0, src, false, errProxyHeader
		}
		return 0, src, false, ErrNeedMore
	}
	line := b[len(prefix):end]
	if bytes.IndexByte(line, '\n') >= 0 || bytes.IndexByte(line, '\r') >= 0 {
		return 0, src, false, errProxyHeader
	}
	f := bytes.Split(line, []byte(" "))
	if string(f[0]) == "UNKNOWN" {
		return end + 2, src, false, nil
	}
	if len(f) != 5 || string(f[0]) != "TCP4" && string(f[0]) != "TCP6" {
		return 0, src, false, errProxyHeader
	}
	sa, err1 := netip.ParseAddr(string(f[1]))
	da, err2 := netip.ParseAddr(string(f[2]))
	sp, ok1 := proxyPort(f[3])
	_, ok2 := proxyPort(f[4])
	v4 := string(f[0]) == "TCP4"
	if err1 != nil || err2 != nil || !ok1 || !ok2 || sa.Is4() != v4 || da.Is4() != v4 || sa.Zone() != "" {
		return 0, src, false, errProxyHeader
	}
	return end + 2, netip.AddrPortFrom(sa, sp), true, nil
}

// proxyPort reads a version 1 port: 1 to 5 digits, no leading zero, at
// most 65535.
func proxyPort(b []byte) (uint16, bool) {
	if len(b) == 0 || len(b) > 5 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return uint16(n), n <= 65535
}

// parseProxyV2 reads the binary header: the signature, version and
// command, family and protocol, the length of what follows, the
// addresses, and TLVs (skipped).
func parseProxyV2(b []byte) (int, netip.AddrPort, bool, error) {
	var src netip.AddrPort
	if k := min(len(b), len(proxyV2Sig)); !bytes.Equal(b[:k], proxyV2Sig[:k]) {
		return 0, src, false, errProxyMissing
	}
	if len(b) < 16 {
		return 0, src, false, ErrNeedMore
	}
	verCmd, fam := b[12], b[13]
	size := int(binary.BigEndian.Uint16(b[14:16]))
	if verCmd>>4 != 2 || verCmd&0xf > 1 || size > proxyV2Max {
		return 0, src, false, errProxyHeader
	}
	n := 16 + size
	if len(b) < n {
		return 0, src, false, ErrNeedMore
	}
	addrs := b[16:n]
	if verCmd&0xf == 0 { // LOCAL: the balancer's own connection (a health check)
		return n, src, false, nil
	}
	switch fam {
	case 0x11: // TCP over IPv4
		if len(addrs) < 12 {
			return 0, src, false, errProxyHeader
		}
		a := netip.AddrFrom4([4]byte(addrs[0:4]))
		return n, netip.AddrPortFrom(a, binary.BigEndian.Uint16(addrs[8:10])), true, nil
	case 0x21: // TCP over IPv6
		if len(addrs) < 36 {
			return 0, src, false, errProxyHeader
		}
		a := netip.AddrFrom16([16]byte(addrs[0:16]))
		return n, netip.AddrPortFrom(a, binary.BigEndian.Uint16(addrs[32:34])), true, nil
	case 0x00, 0x12, 0x22, 0x31, 0x32: // unspecified, UDP, unix sockets: no TCP client to name
		return n, src, false, nil
	}
	return 0, src, false, errProxyHeader
}
