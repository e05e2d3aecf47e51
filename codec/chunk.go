package codec

// Chunked transfer coding as gale sends it (RFC 9112 section 7.1): every
// chunk gale writes, towards an upstream or a client, is rendered here,
// with a bare hexadecimal size (no extensions) and no trailer fields of
// the peer's. Like the field renderers, the functions do not allocate
// when dst has room, keep no reference to their arguments and are safe
// for concurrent use.

// ChunkEnd ends a chunk's data.
const ChunkEnd = "\r\n"

// LastChunk is the last chunk with an empty trailer section: the end of
// a chunked body.
const LastChunk = "0\r\n\r\n"

// AppendChunkSize appends the size line of a chunk of n > 0 bytes: lower
// case hexadecimal without leading zeros.
func AppendChunkSize(dst []byte, n int) []byte {
	var b [18]byte // 16 digits and CRLF
	i := len(b) - 2
	b[i], b[i+1] = '\r', '\n'
	for u := uint64(n); ; u >>= 4 {
		i--
		b[i] = hexDigits[u&0xf]
		if u < 16 {
			break
		}
	}
	return append(dst, b[i:]...)
}

const hexDigits = "0123456789abcdef"

// AppendChunk appends p as one chunk (nothing when p is empty, which
// would end the body).
func AppendChunk(dst, p []byte) []byte {
	if len(p) == 0 {
		return dst
	}
	dst = AppendChunkSize(dst, len(p))
	dst = append(dst, p...)
	return append(dst, crlf...)
}

// AppendLastChunk appends the last chunk, the trailer fields (nil for
// none) and the empty line that end a chunked body.
func AppendLastChunk(dst []byte, trailers []Header) []byte {
	dst = append(dst, "0\r\n"...)
	dst = AppendFieldLines(dst, trailers)
	return append(dst, crlf...)
}
