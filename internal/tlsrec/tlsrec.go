// Package tlsrec is what a crypto/tls.Conn needs to run over bytes that
// an event loop hands it instead of a socket: a would-block error that
// crypto/tls takes as temporary (it keeps a partial record for the next
// call), and a framer that hands it at most one record per Read. Both the
// listener side (app/tlsconn) and the upstream side (upstream) drive
// crypto/tls this way.
package tlsrec

import "net"

// HeaderLen is the length of a TLS record header: type, version, length.
const HeaderLen = 5

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "tls: no buffered ciphertext" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// ErrWouldBlock is what a transport's Read returns when no ciphertext is
// buffered: crypto/tls checks Temporary and keeps what it has of a record
// instead of failing the connection.
var ErrWouldBlock net.Error = wouldBlock{}

// Framer follows the record boundaries of a stream of ciphertext. Handing
// crypto/tls at most one record per Read keeps its buffer free of whole
// records it has not processed: once a tls.Conn.Read returned data,
// whether more can be decrypted is known from the transport's own input
// alone, and the Read that would only find nothing (it costs an
// allocation in crypto/tls) is skipped. The zero value expects a header.
type Framer struct {
	hdr  [HeaderLen]byte
	hdrN int // header bytes of the current record handed so far
	left int // payload bytes of the current record not handed yet
}

// Hand copies into p the bytes of b up to the end of the record being
// read, and returns how many.
func (f *Framer) Hand(p, b []byte) int {
	i, n := 0, min(len(p), len(b))
	for f.hdrN < HeaderLen && i < n {
		f.hdr[f.hdrN] = b[i]
		f.hdrN++
		i++
		if f.hdrN == HeaderLen {
			f.left = int(f.hdr[3])<<8 | int(f.hdr[4])
		}
	}
	k := min(f.left, n-i)
	copy(p, b[:i+k])
	f.left -= k
	if f.hdrN == HeaderLen && f.left == 0 {
		f.hdrN = 0 // the record is complete: a header comes next
	}
	return i + k
}
