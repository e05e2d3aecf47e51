package codec

// Percent-encoding (RFC 3986 section 2.1) of what gale writes into URLs
// it sends: paths and queries put into a Location field, and the bytes a
// normal path keeps escaped. Upper-case hex digits, the form RFC 3986
// section 6.2.2.1 normalises to. The functions do not allocate when dst
// has room and are safe for concurrent use.

const upperHex = "0123456789ABCDEF"

// AppendPercent appends b as a pct-encoded triplet "%XX".
func AppendPercent(dst []byte, b byte) []byte {
	return append(dst, '%', upperHex[b>>4], upperHex[b&15])
}

// AppendLocationSafe appends p to dst, percent-encoding the bytes that
// must not appear raw in a Location value: controls, space, non-ASCII,
// '\\' (read as '/' by browsers), '"', '<', '>' and '#'. The parser
// already refuses most of them in a request-target; this keeps the
// output safe whatever the input. Other bytes, '%' included, are copied,
// so an escape in p stays as it was.
func AppendLocationSafe(dst, p []byte) []byte {
	for _, b := range p {
		if b <= ' ' || b >= 0x7f || b == '\\' || b == '"' || b == '<' || b == '>' || b == '#' {
			dst = AppendPercent(dst, b)
			continue
		}
		dst = append(dst, b)
	}
	return dst
}
