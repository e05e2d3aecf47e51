package tlsconn

import (
	"io"
	"net"
	"sync/atomic"
	"time"
)

// dupConn is a TLS client connection handed to goroutines off the
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
type dupConn struct {
	t      *Conn
	nc     net.Conn
	closed atomic.Bool
}

var _ net.Conn = (*dupConn)(nil)

// Dup hands the connection's output to nc, a duplicate of its socket, and
// returns the net.Conn to use from other goroutines. It runs on the loop.
func (t *Conn) Dup(nc net.Conn) (net.Conn, error) {
	if t.phase != tlsOpen || t.fatal {
		_ = nc.Close()
		return nil, errShimClosed
	}
	t.reclaim()
	t.flushOut()
	d := &dupConn{t: t, nc: nc}
	t.dupc = d
	t.sh.fd = nc
	t.sh.wmode = shimFD
	return d, nil
}

// reclaim gives the connection back to the loop once the goroutines that
// used a duplicate are done with it (they close it last).
func (t *Conn) reclaim() {
	d := t.dupc
	if d == nil || !d.closed.Load() {
		return
	}
	t.dupc = nil
	t.sh.rmode, t.sh.wmode = shimLoop, shimLoop
	t.sh.fd = nil
}

func (d *dupConn) Read(p []byte) (int, error) {
	if d.t.sh.rmode != shimFD {
		d.t.sh.rmode = shimFD
	}
	return d.t.tc.Read(p)
}

func (d *dupConn) Write(p []byte) (int, error) { return d.t.tc.Write(p) }

func (d *dupConn) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	return d.nc.Close()
}

func (d *dupConn) LocalAddr() net.Addr                { return d.nc.LocalAddr() }
func (d *dupConn) RemoteAddr() net.Addr               { return d.nc.RemoteAddr() }
func (d *dupConn) SetDeadline(t time.Time) error      { return d.nc.SetDeadline(t) }
func (d *dupConn) SetReadDeadline(t time.Time) error  { return d.nc.SetReadDeadline(t) }
func (d *dupConn) SetWriteDeadline(t time.Time) error { return d.nc.SetWriteDeadline(t) }

// SendOffLoop points the connection's output at w, a duplicate of its
// socket, for a goroutine that sends a large body: it encrypts through
// the returned writer (the session's tls.Conn), while the loop does
// nothing on the connection. That goroutine calls EndOffLoop when it is
// done, before the loop learns that the transfer ended. Memory stays
// bounded per transfer: crypto/tls's record buffer.
func (t *Conn) SendOffLoop(w net.Conn) io.Writer {
	t.sh.fd = w
	t.sh.wmode = shimFD
	return t.tc
}

// EndOffLoop gives the output back to the loop after SendOffLoop.
func (t *Conn) EndOffLoop() {
	t.sh.wmode = shimLoop
	t.sh.fd = nil
}
