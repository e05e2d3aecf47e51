package app

import (
	"net"
	"sync/atomic"
	"time"
)

// tlsDupConn is a TLS client connection handed to goroutines off the
// loop (the proxy's body copies and tunnels): it reads and writes through
// the connection's tls.Conn, whose shim uses a duplicate of the socket for
// the directions in use. Writes move to the duplicate when the hand-off
// is made (the loop then writes nothing); reads move on the first Read
// (tunnels; the loop then reads nothing). Deadlines are set on the
// duplicate. Close closes the duplicate only: it neither blocks nor sends
// close_notify, since the loop may call it (to abort) while a goroutine
// writes. The loop takes the connection back (reclaim) before its next
// use of it once the duplicate is closed.
//
// Read and Write may be called from two goroutines at once (crypto/tls
// keeps separate locks for each direction); Close from any goroutine.
type tlsDupConn struct {
	t      *tlsConn
	nc     net.Conn
	closed atomic.Bool
}

var _ net.Conn = (*tlsDupConn)(nil)

// Dup hands the connection's output to nc, a duplicate of its socket, and
// returns the net.Conn to use from other goroutines. It runs on the loop.
func (t *tlsConn) Dup(nc net.Conn) (net.Conn, error) {
	if t.phase != tlsOpen || t.fatal {
		_ = nc.Close()
		return nil, errShimClosed
	}
	t.reclaim()
	t.flushOut()
	d := &tlsDupConn{t: t, nc: nc}
	t.dupc = d
	t.sh.fd = nc
	t.sh.wmode = shimFD
	return d, nil
}

// reclaim gives the connection back to the loop once the goroutines that
// used a duplicate are done with it (they close it last).
func (t *tlsConn) reclaim() {
	d := t.dupc
	if d == nil || !d.closed.Load() {
		return
	}
	t.dupc = nil
	t.sh.rmode, t.sh.wmode = shimLoop, shimLoop
	t.sh.fd = nil
}

func (d *tlsDupConn) Read(p []byte) (int, error) {
	if d.t.sh.rmode != shimFD {
		d.t.sh.rmode = shimFD
	}
	return d.t.tc.Read(p)
}

func (d *tlsDupConn) Write(p []byte) (int, error) { return d.t.tc.Write(p) }

func (d *tlsDupConn) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	return d.nc.Close()
}

func (d *tlsDupConn) LocalAddr() net.Addr                { return d.nc.LocalAddr() }
func (d *tlsDupConn) RemoteAddr() net.Addr               { return d.nc.RemoteAddr() }
func (d *tlsDupConn) SetDeadline(t time.Time) error      { return d.nc.SetDeadline(t) }
func (d *tlsDupConn) SetReadDeadline(t time.Time) error  { return d.nc.SetReadDeadline(t) }
func (d *tlsDupConn) SetWriteDeadline(t time.Time) error { return d.nc.SetWriteDeadline(t) }
