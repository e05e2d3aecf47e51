package codec

// The host a request names (RFC 9110 section 7.2: uri-host [":" port]),
// in the one normal form that routing, redirects and configured host
// patterns compare: without the port, without one trailing dot (the
// absolute form "example.com." names the same host as "example.com",
// RFC 1034 section 3.1) and, with AppendNormalHost, in lower case (host
// names are case-insensitive, RFC 3986 section 3.2.2).

// HostName returns the host of a Host field value or authority h without
// its port and one trailing dot, as given otherwise: "Example.COM.:8080"
// gives "Example.COM", "[::1]:443" gives "[::1]". For an IP literal the
// host ends at its first "]"; otherwise at the first ":". It validates
// nothing (Parse has checked a request's Host) and aliases h.
func HostName(h []byte) []byte {
	if len(h) > 0 && h[0] == '[' {
		for i, b := range h {
			if b == ']' {
				return h[:i+1]
			}
		}
	} else {
		for i, b := range h {
			if b == ':' {
				h = h[:i]
				break
			}
		}
	}
	if n := len(h); n > 0 && h[n-1] == '.' {
		h = h[:n-1]
	}
	return h
}

// AppendNormalHost appends the normal form of h (HostName, lower-cased)
// to dst. It does not allocate when dst has room.
func AppendNormalHost(dst, h []byte) []byte {
	return AppendLower(dst, HostName(h))
}
