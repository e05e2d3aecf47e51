package codec

// ASCII helpers for header names and tokens, shared by every package that
// inspects header fields so that there is one definition of "the same
// name". None of them allocates; results alias their input.

// EqualFold reports whether b and s are equal ignoring ASCII case (header
// names and tokens are case-insensitive; other bytes compare exactly).
func EqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

// EqualFoldBytes is EqualFold for two byte slices.
func EqualFoldBytes(a, b []byte) bool {
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

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// AppendLower appends b with ASCII letters lower-cased (HTTP/2 and HTTP/3
// field names are lower case on the wire, RFC 9113 section 8.2). It does
// not allocate when dst has room.
func AppendLower(dst, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, lower(c))
	}
	return dst
}
