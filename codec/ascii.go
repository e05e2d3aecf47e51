package codec

// ASCII helpers for header names and tokens, shared by every package that
// inspects header fields so that there is one definition of "the same
// name". None of them allocates (the Append ones when dst has room);
// other results alias their input.

// EqualFold reports whether b and s are equal ignoring ASCII case (header
// names and tokens are case-insensitive; other bytes compare exactly).
func EqualFold(b []byte, s string) bool {
	return equalFold(b, s)
}

// EqualFoldBytes is EqualFold for two byte slices.
func EqualFoldBytes(a, b []byte) bool {
	return equalFold(a, b)
}

func equalFold[T string | []byte](a []byte, b T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

// TrimOWS trims optional whitespace (SP and HTAB, RFC 9110 section 5.6.3)
// from both ends of b.
func TrimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// AppendLower appends b to dst with ASCII upper-case letters lower-cased:
// header names as HTTP/2 and HTTP/3 send them (RFC 9113 section 8.2.1),
// host names as routes compare them. Other bytes are copied as they are.
func AppendLower(dst, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, lower(c))
	}
	return dst
}

// ConnectionSpecific reports whether a field name (in any case) is one of
// the connection-specific fields that HTTP/2 forbids (RFC 9113 section
// 8.2.2; HTTP/3 likewise, RFC 9114 section 4.2): Connection, Keep-Alive,
// Proxy-Connection, Transfer-Encoding and Upgrade. TE, allowed with the
// value "trailers" in requests, is left to the caller.
func ConnectionSpecific(name []byte) bool {
	switch len(name) {
	case 7:
		return EqualFold(name, "upgrade")
	case 10:
		return EqualFold(name, "connection") || EqualFold(name, "keep-alive")
	case 16:
		return EqualFold(name, "proxy-connection")
	case 17:
		return EqualFold(name, "transfer-encoding")
	}
	return false
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
