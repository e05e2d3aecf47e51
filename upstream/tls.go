package upstream

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/internal/tlsrec"
)

// A connection to an upstream over TLS: crypto/tls does the protocol on a
// shim net.Conn whose I/O follows the connection through its life, the
// way the listener side drives it (app/tlsconn), with the same record
// framing (tlsrec):
//
//   - dial: the handshake runs in the dial goroutine, off the loop, over
//     the dialed socket itself (read in staged, record-framed pieces, so
//     that the loop takes over at a record boundary).
//   - loop: once enrolled, the loop calls tls.Conn.Read and Write itself.
//     Read takes ciphertext from gnet's inbound buffer and, when none is
//     left, returns tlsrec.ErrWouldBlock; Write appends records to a
//     buffer the loop hands to gnet with one Write.
//   - fd: the connection leaves the loop (an off-loop copy, a tunnel):
//     the same tls.Conn goes on over a duplicate of the socket, after the
//     ciphertext gnet had buffered.
//
// A mode changes only while nothing else uses the shim: after the
// handshake returned and before Enroll; on the loop, before the duplicate
// is handed to its goroutine.

const (
	shimDial uint8 = iota
	shimLoop
	shimFD
)

const (
	// minPlainRead is the free room given to each tls.Conn.Read on the
	// loop: one full record's plaintext.
	minPlainRead = 16 << 10
	// keepPlain is the largest decryption buffer a connection keeps once
	// consumed; a larger one (grown by a burst) is dropped.
	keepPlain = 64 << 10
	// stageBytes is the staging buffer of the handshake's reads.
	stageBytes = 16<<10 + 256
)

var errShimClosed = errors.New("upstream: tls: connection closed")

// tlsConn is the TLS session of one upstream connection. After the
// handshake it is touched on the connection's loop only, until it leaves
// the loop (fd mode).
type tlsConn struct {
	tc    *tls.Conn
	sh    tlsShim
	plain []byte // decrypted bytes not consumed yet
	eof   bool   // no more data will come: close_notify, or a bad record
	fatal bool   // the session failed (crypto/tls sent an alert)
}

// tlsShim is the net.Conn under the tls.Conn.
type tlsShim struct {
	mode  uint8
	nc    net.Conn  // dial and fd modes: the socket, or its duplicate
	gc    gnet.Conn // loop mode
	in    []byte    // ciphertext read or taken from gnet, not handed yet: handed first
	inOff int
	out   []byte // loop mode: records written, not given to gnet yet
	fr    tlsrec.Framer
}

var _ net.Conn = (*tlsShim)(nil)

// clientHandshake runs the TLS handshake over nc (dialed, not enrolled
// yet) with cfg, by deadline. It runs in the dial goroutine.
func clientHandshake(nc net.Conn, cfg *tls.Config, deadline time.Time) (*tlsConn, error) {
	t := &tlsConn{}
	t.sh.mode, t.sh.nc = shimDial, nc
	t.tc = tls.Client(&t.sh, cfg)
	_ = nc.SetDeadline(deadline)
	err := t.tc.Handshake()
	_ = nc.SetDeadline(time.Time{})
	if err != nil {
		return nil, fmt.Errorf("tls handshake: %w", err)
	}
	t.sh.mode, t.sh.nc = shimLoop, nil // Enroll takes the socket over
	return t, nil
}

// Handshake runs c's TLS handshake over nc as a dial does, for dial
// functions set with SetDial that open connections by hand: the session
// then reads and writes through the gnet.Conn OnOpen is given, and nc is
// no longer used. It does nothing for a plain upstream. It runs before
// OnOpen, in any goroutine.
func (c *Conn) Handshake(nc net.Conn) error {
	cfg := c.pool.lim.TLS
	if cfg == nil {
		return nil
	}
	t, err := clientHandshake(nc, cfg, time.Now().Add(c.pool.lim.ConnectTimeout))
	if err != nil {
		return err
	}
	c.tls = t
	return nil
}

// Read implements net.Conn for crypto/tls.
func (s *tlsShim) Read(p []byte) (int, error) {
	if s.inOff < len(s.in) {
		n := s.fr.Hand(p, s.in[s.inOff:])
		s.inOff += n
		if s.inOff == len(s.in) {
			s.in, s.inOff = s.in[:0], 0
		}
		return n, nil
	}
	switch s.mode {
	case shimLoop:
		b, _ := s.gc.Peek(-1)
		if len(b) == 0 || len(p) == 0 {
			return 0, tlsrec.ErrWouldBlock
		}
		n := s.fr.Hand(p, b)
		_, _ = s.gc.Discard(n) // n > 0: gnet's Discard(0) would drop everything
		return n, nil
	case shimDial:
		if cap(s.in) < stageBytes {
			s.in = make([]byte, 0, stageBytes)
		}
		m, err := s.nc.Read(s.in[:cap(s.in)])
		if m == 0 {
			return 0, err
		}
		s.in = s.in[:m]
		return s.Read(p)
	case shimFD:
		return s.nc.Read(p)
	}
	return 0, errShimClosed
}

// Write implements net.Conn for crypto/tls. p is copied in loop mode
// (crypto/tls reuses its buffer).
func (s *tlsShim) Write(p []byte) (int, error) {
	if s.mode == shimLoop {
		s.out = append(s.out, p...)
		return len(p), nil
	}
	return s.nc.Write(p)
}

// Close implements net.Conn: in loop mode gnet owns the socket.
func (s *tlsShim) Close() error {
	if s.mode == shimLoop || s.nc == nil {
		return nil
	}
	return s.nc.Close()
}

func (s *tlsShim) LocalAddr() net.Addr {
	if s.nc != nil {
		return s.nc.LocalAddr()
	}
	return s.gc.LocalAddr()
}

func (s *tlsShim) RemoteAddr() net.Addr {
	if s.nc != nil {
		return s.nc.RemoteAddr()
	}
	return s.gc.RemoteAddr()
}

// The deadlines are the socket's off the loop; on the loop timeouts are
// the sweep's.
func (s *tlsShim) SetDeadline(t time.Time) error {
	if s.nc == nil {
		return nil
	}
	return s.nc.SetDeadline(t)
}

func (s *tlsShim) SetReadDeadline(t time.Time) error {
	if s.nc == nil {
		return nil
	}
	return s.nc.SetReadDeadline(t)
}

func (s *tlsShim) SetWriteDeadline(t time.Time) error {
	if s.nc == nil {
		return nil
	}
	return s.nc.SetWriteDeadline(t)
}

// moreInput reports whether ciphertext waits in the shim or in gnet.
func (s *tlsShim) moreInput() bool {
	return s.inOff < len(s.in) || s.gc.InboundBuffered() > 0
}

// open switches to loop mode on the enrolled connection gc.
func (t *tlsConn) open(gc gnet.Conn) {
	t.sh.gc = gc
	t.sh.mode = shimLoop
}

// inbound decrypts what arrived and returns the plaintext not yet
// consumed; valid until consume or the next inbound.
func (t *tlsConn) inbound() []byte {
	for !t.eof {
		if cap(t.plain)-len(t.plain) < minPlainRead {
			np := make([]byte, len(t.plain), 2*cap(t.plain)+minPlainRead)
			copy(np, t.plain)
			t.plain = np
		}
		room := cap(t.plain) - len(t.plain)
		n, err := t.tc.Read(t.plain[len(t.plain):cap(t.plain)])
		t.plain = t.plain[:len(t.plain)+n]
		if err == nil {
			if n < room && !t.sh.moreInput() {
				break // crypto/tls holds no further record (tlsrec.Framer)
			}
			continue
		}
		if err == tlsrec.ErrWouldBlock {
			break
		}
		t.eof = true
		if err != io.EOF {
			t.fatal = true
		}
	}
	t.flush() // alerts, key update answers
	return t.plain
}

// consume drops the first n plaintext bytes (all when n < 0).
func (t *tlsConn) consume(n int) {
	if n < 0 || n >= len(t.plain) {
		if cap(t.plain) > keepPlain {
			t.plain = nil
		} else {
			t.plain = t.plain[:0]
		}
		return
	}
	m := copy(t.plain, t.plain[n:])
	t.plain = t.plain[:m]
}

// write encrypts b and hands the records to gnet with one Write.
func (t *tlsConn) write(b []byte) error {
	if _, err := t.tc.Write(b); err != nil {
		return err
	}
	return t.flush()
}

// flush hands the records written on the loop to gnet.
func (t *tlsConn) flush() error {
	s := &t.sh
	if len(s.out) == 0 {
		return nil
	}
	_, err := s.gc.Write(s.out)
	if cap(s.out) > 4<<20 {
		s.out = nil
	} else {
		s.out = s.out[:0]
	}
	return err
}

// leave moves the session off the loop onto dup, a duplicate of the
// socket: what gnet buffered of the ciphertext is read first. The
// plaintext already decrypted is the caller's to take (inbound) before.
// It returns the session as a net.Conn for the goroutine that goes on
// with it.
func (t *tlsConn) leave(dup net.Conn) net.Conn {
	s := &t.sh
	if b, _ := s.gc.Peek(-1); len(b) > 0 {
		s.in = append(s.in[s.inOff:], b...)
		s.inOff = 0
		_, _ = s.gc.Discard(len(b))
	}
	s.mode, s.nc, s.gc = shimFD, dup, nil
	return t.tc
}
