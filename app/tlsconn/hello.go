package tlsconn

// The ClientHello gate. A TLS connection takes a handshake slot (and a
// goroutine) only once its whole first flight is buffered, so a client
// that sends one byte, half a ClientHello, or drips it, holds nothing but
// its socket until client_hello_timeout. helloScan follows the record
// layer of the bytes received so far, on the loop and without allocating,
// and tells whether the ClientHello is complete, incomplete, or not TLS
// at all (closed at once).

// helloScan results.
const (
	helloMore = iota // the ClientHello is not complete yet
	helloDone        // a whole ClientHello is buffered
	helloBad         // not a TLS ClientHello: close the connection
)

const (
	// recordTypeHandshake is the content type of handshake records
	// (RFC 8446 §5.1).
	recordTypeHandshake = 22
	// maxPlainRecord bounds the payload of a plaintext record: 2^14
	// bytes (RFC 8446 §5.1, RFC 5246 §6.2.1).
	maxPlainRecord = 1 << 14
	// handshakeTypeClientHello is the msg_type of a ClientHello
	// (RFC 8446 §4).
	handshakeTypeClientHello = 1
	// handshakeHeaderLen is the length of a handshake message header:
	// msg_type and a 24-bit length (RFC 8446 §4).
	handshakeHeaderLen = 4
	// maxClientHello bounds the length of a ClientHello body: crypto/tls's
	// own bound on a handshake message (maxHandshake), so nothing it
	// would accept is refused. Real ones, post-quantum key shares
	// included, are under 2 KiB.
	maxClientHello = 1 << 16
)

// helloScan is the state of scanning a client's first flight as it
// arrives. The zero value expects the first byte of a record.
type helloScan struct {
	off     int                      // bytes of the input already scanned
	hdr     [recordHeaderLen]byte    // the current record's header
	hdrN    int                      // bytes of hdr received
	recLeft int                      // payload bytes of the current record not yet scanned
	msg     [handshakeHeaderLen]byte // the handshake message header
	msgN    int                      // bytes of msg received
	msgLeft int                      // ClientHello body bytes still to come
}

// scan goes on scanning in, which holds everything the client sent so
// far (what an earlier call saw and what arrived since), and returns
// helloMore, helloDone or helloBad. Bytes after the ClientHello (a
// change_cipher_spec, early data) are left to crypto/tls.
func (h *helloScan) scan(in []byte) int {
	for h.off < len(in) {
		if h.hdrN < recordHeaderLen {
			h.hdr[h.hdrN] = in[h.off]
			h.hdrN++
			h.off++
			if h.hdrN == recordHeaderLen && !h.header() {
				return helloBad
			}
			continue
		}
		k := min(h.recLeft, len(in)-h.off)
		if r := h.payload(in[h.off : h.off+k]); r != helloMore {
			return r
		}
		h.off += k
		if h.recLeft -= k; h.recLeft == 0 {
			h.hdrN = 0
		}
	}
	return helloMore
}

// header checks a complete record header: a handshake record (a
// ClientHello may not be interleaved with other record types, RFC 8446
// §5.1), a legacy version of the form {3, x} (which a server must accept
// for a ClientHello, RFC 8446 Appendix D), and a length from 1 (no
// zero-length handshake fragments) to 2^14.
func (h *helloScan) header() bool {
	n := int(h.hdr[3])<<8 | int(h.hdr[4])
	if h.hdr[0] != recordTypeHandshake || h.hdr[1] != 3 || n == 0 || n > maxPlainRecord {
		return false
	}
	h.recLeft = n
	return true
}

// payload scans p, the next bytes of the handshake stream. The stream
// must open with a ClientHello header of bounded length.
func (h *helloScan) payload(p []byte) int {
	for h.msgN < handshakeHeaderLen && len(p) > 0 {
		h.msg[h.msgN] = p[0]
		h.msgN++
		p = p[1:]
		if h.msgN == handshakeHeaderLen {
			n := int(h.msg[1])<<16 | int(h.msg[2])<<8 | int(h.msg[3])
			if h.msg[0] != handshakeTypeClientHello || n == 0 || n > maxClientHello {
				return helloBad
			}
			h.msgLeft = n
		}
	}
	if h.msgN < handshakeHeaderLen {
		return helloMore
	}
	if h.msgLeft -= min(h.msgLeft, len(p)); h.msgLeft == 0 {
		return helloDone
	}
	return helloMore
}
