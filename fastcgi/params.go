package fastcgi

// Name-value pairs (FastCGI specification section 3.4): each length is one
// byte when below 128, else four bytes with the high bit set; the name
// and value bytes follow. The pairs of FCGI_PARAMS form one stream that
// records may split anywhere.

// MaxPairLen is the longest name or value a pair may carry (31 bits).
const MaxPairLen = 1<<31 - 1

// AppendPair appends one name-value pair.
func AppendPair(dst, name, value []byte) []byte {
	dst = appendPairLen(dst, len(name))
	dst = appendPairLen(dst, len(value))
	dst = append(dst, name...)
	return append(dst, value...)
}

// AppendPairString is AppendPair for a name held as a string (static
// memory: the CGI variable names).
func AppendPairString(dst []byte, name string, value []byte) []byte {
	dst = appendPairLen(dst, len(name))
	dst = appendPairLen(dst, len(value))
	dst = append(dst, name...)
	return append(dst, value...)
}

// AppendPairStrings is AppendPair for a name and a value held as strings.
func AppendPairStrings(dst []byte, name, value string) []byte {
	dst = appendPairLen(dst, len(name))
	dst = appendPairLen(dst, len(value))
	dst = append(dst, name...)
	return append(dst, value...)
}

func appendPairLen(dst []byte, n int) []byte {
	if n < 128 {
		return append(dst, byte(n))
	}
	return append(dst, byte(n>>24)|0x80, byte(n>>16), byte(n>>8), byte(n))
}

// NextPair parses the pair at the start of b: name and value (aliasing b)
// and the bytes it takes. A pair cut short is ErrParams: b must hold the
// whole stream.
func NextPair(b []byte) (name, value []byte, n int, err error) {
	nl, p, ok := pairLen(b, 0)
	if !ok {
		return nil, nil, 0, ErrParams
	}
	vl, p, ok := pairLen(b, p)
	if !ok || nl > len(b)-p || vl > len(b)-p-nl {
		return nil, nil, 0, ErrParams
	}
	name = b[p : p+nl : p+nl]
	value = b[p+nl : p+nl+vl : p+nl+vl]
	return name, value, p + nl + vl, nil
}

// pairLen reads a length at b[p:].
func pairLen(b []byte, p int) (int, int, bool) {
	if p >= len(b) {
		return 0, p, false
	}
	if b[p] < 0x80 {
		return int(b[p]), p + 1, true
	}
	if p+4 > len(b) {
		return 0, p, false
	}
	n := int(b[p]&0x7f)<<24 | int(b[p+1])<<16 | int(b[p+2])<<8 | int(b[p+3])
	return n, p + 4, true
}
