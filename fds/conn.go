package fds

import (
	"net"
	"sync/atomic"
)

// Conn is a net.Conn whose descriptor is counted in a budget: its first
// Close gives the descriptor back, however many goroutines call Close
// and however often (the proxy's copies close both ends from both
// directions, and the loop may abort them meanwhile).
type Conn struct {
	net.Conn
	b    *Budget
	done atomic.Bool // the descriptor was given back or handed on
}

// Track returns c counted as one descriptor of b, which the caller has
// acquired.
func Track(b *Budget, c net.Conn) *Conn { return &Conn{Conn: c, b: b} }

// Close closes the connection and gives its descriptor back, the first
// time only; later calls, and calls after Hand, do nothing.
func (c *Conn) Close() error {
	if c.done.Swap(true) {
		return nil
	}
	err := c.Conn.Close()
	c.b.Release(1)
	return err
}

// Hand returns the underlying connection with its descriptor still
// counted: the caller now owns both (and releases the count when the
// descriptor closes). Close on c afterwards does nothing. It reports
// false when c was already closed.
func (c *Conn) Hand() (net.Conn, bool) {
	if c.done.Swap(true) {
		return nil, false
	}
	return c.Conn, true
}
