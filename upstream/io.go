package upstream

import (
	"net"
	"os"
)

// The bytes of a connection, for its user: plain connections read and
// write gnet's buffers directly; TLS ones (tls.go) through their session.
// Every method runs on the connection's loop, while it is open.

// TLS reports whether the connection speaks TLS.
func (c *Conn) TLS() bool { return c.tls != nil }

// Inbound returns what the upstream sent that was not consumed yet
// (decrypted, over TLS). The slice is valid until Consume, the next
// Inbound, or the callback's return.
func (c *Conn) Inbound() []byte {
	if c.tls != nil {
		return c.tls.inbound()
	}
	b, _ := c.gc.Peek(-1)
	return b
}

// Consume drops the first n bytes Inbound returned (all when n < 0; none
// when n is 0).
func (c *Conn) Consume(n int) {
	switch {
	case n == 0:
	case c.tls != nil:
		c.tls.consume(n)
	default:
		_, _ = c.gc.Discard(n)
	}
}

// Write sends b (encrypted, over TLS). b is copied. An error means the
// connection closed, inside the call.
func (c *Conn) Write(b []byte) error {
	if c.tls != nil {
		return c.tls.write(b)
	}
	_, err := c.gc.Write(b)
	return err
}

// InboundBuffered is how many received bytes wait: gnet's (ciphertext,
// over TLS) and those decrypted but not consumed.
func (c *Conn) InboundBuffered() int {
	n := c.gc.InboundBuffered()
	if c.tls != nil {
		n += len(c.tls.plain)
	}
	return n
}

// OutboundBuffered is how many bytes wait in gnet to leave.
func (c *Conn) OutboundBuffered() int { return c.gc.OutboundBuffered() }

// Ended reports whether no more data will come over TLS (the upstream
// sent close_notify, or a bad record); always false for plain
// connections, whose end is OnClose.
func (c *Conn) Ended() bool { return c.tls != nil && c.tls.eof }

// DupConn returns a connection over a duplicate of the socket, for a
// goroutine that goes on with it off the loop (the loop's descriptor is
// closed after). Over TLS it is the session itself, which first reads the
// ciphertext gnet buffered: take what Inbound holds before. The returned
// connection holds one descriptor.
func (c *Conn) DupConn() (net.Conn, error) {
	fd, err := c.gc.Dup()
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "upstream")
	nc, err := net.FileConn(f)
	_ = f.Close()
	if err != nil || c.tls == nil {
		return nc, err
	}
	return c.tls.leave(nc), nil
}
