package hpack

import "strconv"

// The encoder is stateless: it references the static table and writes
// literals that are never added to the peer's dynamic table (RFC 7541
// section 6.2.2 and 6.2.3), so nothing a connection sends depends on what
// it sent before and a pre-encoded block can be replayed on any
// connection. None of these functions allocates when dst has room.

// AppendTableSizeZero appends a dynamic table size update to 0 (RFC 7541
// section 6.3), the octet 0x20. Sent at the start of a connection's first
// header block, it tells the peer's decoder that this encoder uses no
// dynamic table, so the peer may free it.
func AppendTableSizeZero(dst []byte) []byte {
	return append(dst, 0x20)
}

// staticStatuses are the :status values of the static table, in its
// order from index firstStaticStatus (RFC 7541 Appendix A).
var staticStatuses = [...]int{200, 204, 206, 304, 400, 404, 500}

const firstStaticStatus = 8

// AppendStatus appends the :status pseudo-header field (RFC 9113 section
// 8.3.2): an indexed field (RFC 7541 section 6.1) for the seven statuses
// of the static table (200, 204, 206, 304, 400, 404 and 500), else a
// literal without indexing whose name is static index 8 (section 6.2.2).
// status should have three digits; other values are written in decimal.
func AppendStatus(dst []byte, status int) []byte {
	for i, st := range staticStatuses {
		if st == status {
			return append(dst, 0x80|byte(firstStaticStatus+i))
		}
	}
	dst = append(dst, 8) // 0000 1000: without indexing, name index 8
	if status >= 100 && status <= 999 {
		return append(dst, 3, byte('0'+status/100), byte('0'+status/10%10), byte('0'+status%10))
	}
	n := len(dst)
	dst = strconv.AppendInt(append(dst, 0), int64(status), 10)
	dst[n] = byte(len(dst) - n - 1)
	return dst
}

// AppendField appends name and value as a literal header field without
// indexing (RFC 7541 section 6.2.2): the name by its static-table index
// when the table has it (StaticNameIndex), else as a string, and the value
// as a string, neither Huffman-coded. name must be lowercase (RFC 9113
// section 8.2.1) and both must be valid field bytes: nothing is checked.
func AppendField(dst []byte, name, value []byte) []byte {
	return appendLiteral(dst, 0x00, name, value, false)
}

// AppendFieldNeverIndexed is AppendField with the never-indexed literal of
// RFC 7541 section 6.2.3, for a field an intermediary must not compress
// either (section 7.1.3: a credential, a cookie that guards one).
func AppendFieldNeverIndexed(dst []byte, name, value []byte) []byte {
	return appendLiteral(dst, 0x10, name, value, false)
}

// AppendFieldHuffman is AppendField with the name (when literal) and the
// value Huffman-coded (RFC 7541 section 5.2) whenever that is shorter. It
// costs a pass over each string to measure it and is meant for blocks that
// are encoded once and sent many times.
func AppendFieldHuffman(dst []byte, name, value []byte) []byte {
	return appendLiteral(dst, 0x00, name, value, true)
}

// appendLiteral appends a literal field without (first 0x00) or never
// (0x10) indexed, with a 4-bit name index prefix.
func appendLiteral(dst []byte, first byte, name, value []byte, huffman bool) []byte {
	if i := StaticNameIndex(name); i > 0 {
		dst = appendInt(dst, first, 4, uint64(i))
	} else {
		dst = appendString(append(dst, first), name, huffman)
	}
	return appendString(dst, value, huffman)
}

// appendString appends s as a string literal (RFC 7541 section 5.2),
// Huffman-coded when huffman is set and that is shorter.
func appendString(dst, s []byte, huffman bool) []byte {
	if huffman {
		if n := huffmanEncodedLen(s); n < len(s) {
			return huffmanAppendEncoded(appendInt(dst, 0x80, 7, uint64(n)), s)
		}
	}
	return append(appendInt(dst, 0, 7, uint64(len(s))), s...)
}

// appendInt appends v as an integer with an n-bit prefix (RFC 7541 section
// 5.1) whose first octet's other bits are those of first.
func appendInt(dst []byte, first byte, n uint8, v uint64) []byte {
	mask := uint64(1)<<n - 1
	if v < mask {
		return append(dst, first|byte(v))
	}
	dst = append(dst, first|byte(mask))
	for v -= mask; v >= 0x80; v >>= 7 {
		dst = append(dst, byte(v)|0x80)
	}
	return append(dst, byte(v))
}
