package wire

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"

	"gale/accesslog"
	"gale/clientcert"
)

const (
	// MaxPendingInput bounds the bytes a client may send while its
	// connection parses nothing (output paused or a transfer in
	// progress); past it the connection is closed, since gnet cannot stop
	// reading.
	MaxPendingInput = 1 << 20
	// LingerTime is how long a closing connection keeps reading (and
	// discarding) after its final response, so that unread request bytes
	// do not turn the close into a reset that destroys the response.
	LingerTime = 2 * time.Second
)

// Conn is the transport of one client connection: everything an engine
// reads from or writes to its client goes through its methods, so that a
// Layer (TLS) can sit between the engine and gnet without the engine
// knowing which one it talks to. On a plain connection each is a direct
// gnet call. All methods must be called on the connection's loop, unless
// they say otherwise.
type Conn struct {
	C          gnet.Conn
	Loop       *Loop
	Remote     netip.AddrPort   // client address
	LastActive int64            // last progress: a response written or body bytes read (unix ns)
	Dead       bool             // gnet closed the connection; touch nothing
	Detached   bool             // a tunnel took the socket over, and the connection's place in the budget
	Cert       *clientcert.Info // the certificate the TLS client presented (set when its handshake finished); nil for none

	layer    Layer // nil for plain connections
	queued   int64 // bytes ever handed to gnet for the client
	leftSeen int64 // bytes that had left gnet's buffer at the previous sweep; -1 = nothing was waiting
	outSince int64 // when bytes last left gnet's buffer while some waited
}

// Layer is a transport between the engines and gnet, such as TLS: it
// turns what gnet received into the bytes an engine reads, and what an
// engine sends into what goes to gnet (through Conn.WriteRaw). Its
// methods run on the connection's loop.
type Layer interface {
	// Inbound returns the bytes received and not yet consumed; the
	// slice is valid until Consume or the next Inbound.
	Inbound() []byte
	// Consume drops the first n bytes returned by Inbound (all when
	// n < 0).
	Consume(n int)
	// Buffered is how many received bytes the layer holds, beyond what
	// waits in gnet's buffer.
	Buffered() int
	// Send and Sendv queue bytes for the client; they may be reused
	// once the call returns.
	Send(b []byte)
	Sendv(bs [][]byte)
	// CloseWrite ends the output after the final response.
	CloseWrite()
	// CloseNotify tells the client that no more data follows (TLS
	// close_notify), once, after the last response.
	CloseNotify()
	// Ended reports whether no more data will come from the client
	// (eof) and whether the session failed (fatal).
	Ended() (eof, fatal bool)
	// Unconsumed is how many bytes the layer decoded that wait to be
	// consumed.
	Unconsumed() int
	// Dup takes nc, a duplicate of the socket, and returns the
	// net.Conn that goroutines off the loop use instead.
	Dup(nc net.Conn) (net.Conn, error)
	// SendOffLoop points the output at w, a duplicate of the socket,
	// for a goroutine that sends a large body through the returned
	// writer while the loop writes nothing; that goroutine calls
	// EndOffLoop when done, before the loop learns of it.
	SendOffLoop(w net.Conn) io.Writer
	EndOffLoop()
}

// Init makes c the transport of gnet connection gc on loop l, at time
// now (unix ns).
func (c *Conn) Init(l *Loop, gc gnet.Conn, now int64) {
	c.Loop, c.C = l, gc
	if ta, ok := gc.RemoteAddr().(*net.TCPAddr); ok {
		c.Remote = Unmapped(ta.AddrPort())
	}
	c.LastActive = now
	c.leftSeen = -1
	c.Cert = nil
}

// Unmapped is ap with an IPv4-mapped IPv6 address (what a dual-stack
// listener reports for an IPv4 client) as the IPv4 address: the one form
// of a client address that access rules, the access log, the forwarded
// fields and FastCGI's REMOTE_ADDR all see.
func Unmapped(ap netip.AddrPort) netip.AddrPort {
	if a := ap.Addr(); a.Is4In6() {
		return netip.AddrPortFrom(a.Unmap(), ap.Port())
	}
	return ap
}

// SetLayer puts ly between the engines and gnet, for the rest of the
// connection's life.
func (c *Conn) SetLayer(ly Layer) { c.layer = ly }

// Layered reports whether a Layer sits under the engines.
func (c *Conn) Layered() bool { return c.layer != nil }

// Layer returns the layer under the engines, or nil on a plain
// connection.
func (c *Conn) Layer() Layer { return c.layer }

// Inbound returns the request bytes received and not yet consumed. The
// slice aliases the connection's buffer and is valid until Consume or the
// end of the current event handler call.
func (c *Conn) Inbound() []byte {
	if c.layer != nil {
		return c.layer.Inbound()
	}
	b, _ := c.C.Peek(-1)
	return b
}

// Consume drops the first n bytes returned by Inbound; n < 0 drops all.
func (c *Conn) Consume(n int) {
	if c.layer != nil {
		c.layer.Consume(n)
		if n >= 0 {
			return
		}
	}
	_, _ = c.C.Discard(n)
}

// InboundBuffered is how many received bytes wait to be consumed.
func (c *Conn) InboundBuffered() int {
	if c.layer != nil {
		return c.C.InboundBuffered() + c.layer.Buffered()
	}
	return c.C.InboundBuffered()
}

// Send queues b for the client. b may be reused once Send returns. A
// failing write closes the connection (Dead is set by OnClose).
func (c *Conn) Send(b []byte) {
	if c.layer != nil {
		c.layer.Send(b)
		return
	}
	c.WriteRaw(b)
}

// Sendv queues bs for the client, in order, like Send.
func (c *Conn) Sendv(bs [][]byte) {
	if c.layer != nil {
		c.layer.Sendv(bs)
		return
	}
	n, _ := c.C.Writev(bs)
	c.queued += int64(n)
}

// WriteRaw hands b to gnet as it is, past any Layer, counting what it
// queued: every byte for the client goes through here or Sendv, so that
// queued minus what is still buffered is what left, the measure of write
// progress. A Layer writes its records with it.
func (c *Conn) WriteRaw(b []byte) {
	n, _ := c.C.Write(b)
	c.queued += int64(n)
}

// SentPast counts n bytes that an engine wrote to the socket itself, past
// gnet and any Layer (sendfile from the loop, with gnet's buffer empty):
// they left at once.
func (c *Conn) SentPast(n int) { c.queued += int64(n) }

// OutboundBuffered is how many bytes were sent but have not yet left for
// the socket.
func (c *Conn) OutboundBuffered() int { return c.C.OutboundBuffered() }

// WriteStalled reports, from the sweep, whether bytes wait for the client
// and none of them left for longer than limit. Progress is bytes leaving
// gnet's buffer, not its size: a buffer that keeps growing because more
// is queued while the client reads nothing is no progress.
func (c *Conn) WriteStalled(now, limit int64) bool {
	out := c.OutboundBuffered()
	if out == 0 {
		c.leftSeen = -1
		return false
	}
	left := c.queued - int64(out)
	if left != c.leftSeen {
		c.leftSeen, c.outSince = left, now
		return false
	}
	return now-c.outSince > limit
}

// CloseWrite ends the connection's output half (after the final response)
// while reading goes on.
func (c *Conn) CloseWrite() {
	if c.layer != nil {
		c.layer.CloseWrite()
		return
	}
	c.ShutdownWrite()
}

// ShutdownWrite half-closes the socket itself, past any Layer.
func (c *Conn) ShutdownWrite() { _ = unix.Shutdown(c.C.Fd(), unix.SHUT_WR) }

// Wake asks gnet for another OnTraffic call of the connection. Safe for
// concurrent use; a no-op once the connection closed.
func (c *Conn) Wake() { _ = c.C.Wake(nil) }

// ErrShortFile is the error of a body sender whose file ended before the
// length its response announced.
var ErrShortFile = errors.New("app: file shorter than its announced length")

var errNoDup = errors.New("app: the connection has no descriptor to duplicate")

// Dup returns a net.Conn over a duplicate of the connection's socket, for
// goroutines off the loop; on a layered connection it carries the layer's
// records, not plaintext.
func (c *Conn) Dup() (net.Conn, error) {
	fd, err := c.C.Dup()
	if err != nil {
		return nil, err
	}
	if fd < 0 {
		return nil, errNoDup
	}
	f := os.NewFile(uintptr(fd), "client")
	nc, err := net.FileConn(f) // duplicates fd again
	_ = f.Close()
	if err == nil && c.layer != nil {
		return c.layer.Dup(nc)
	}
	return nc, err
}

// Record counts one answered request and appends its access log line,
// which names what rec says of the request. The line is formatted into
// the loop's buffer before Record returns, so rec's slices need to be
// valid only now (see accesslog.Record). m is what the engine noted of
// the exchange (its start, first byte and route) for the per-route
// metrics, which are counted when the server has a metrics listener. The
// clock is read here when either needs it.
func (c *Conn) Record(rec *accesslog.Record, m *Meter, status int, bodyBytes int64) {
	c.Loop.Record(c.Remote.Addr(), rec, m, status, bodyBytes)
}

// RecordFor is Record for a request whose client is remote (behind
// server.trusted_proxies, the one they named, rather than the peer).
func (c *Conn) RecordFor(remote netip.Addr, rec *accesslog.Record, m *Meter, status int, bodyBytes int64) {
	c.Loop.Record(remote, rec, m, status, bodyBytes)
}

// Record counts one request answered on the loop to a client at remote
// and appends its access log line (see Conn.Record).
func (l *Loop) Record(remote netip.Addr, rec *accesslog.Record, m *Meter, status int, bodyBytes int64) {
	l.Stats.Requests.Add(1)
	if k := status / 100; k >= 1 && k <= 5 {
		l.Stats.ByClass[k].Add(1)
	}
	a := l.Shared.Access
	var now int64
	if l.Shared.Metered || a != nil {
		// The clock is read here, once per exchange, rather than taken
		// from the event's start: a batch of pipelined requests shares
		// one start, but each ends when its own response is rendered.
		now = time.Now().UnixNano()
	}
	if l.Shared.Metered {
		l.Meters.observe(m, status, bodyBytes, now)
	}
	if a != nil {
		rec.SetTiming(now-m.Start, m.InBytes)
		l.Alog = a.AppendLine(l.Alog, remote, rec, status, bodyBytes, now)
		if len(l.Alog) >= accesslog.FlushBytes {
			l.FlushAccessLog()
		}
	}
}

// GrowLen extends b by n bytes, reallocating when its capacity is short,
// and returns it; the new bytes are not cleared.
func GrowLen(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}
