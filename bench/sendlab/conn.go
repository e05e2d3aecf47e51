package main

import (
	"bytes"

	"golang.org/x/sys/unix"
)

// conn is one keep-alive connection and the progress of its response.
type conn struct {
	fd      int
	in      []byte // request bytes not yet answered
	sending bool   // a response is under way
	head    []byte // this response's head (copied: the Date may change)
	sent    int    // bytes of head+body the socket has taken
	corked  bool   // cork-sendfile: TCP_CORK is on
	iov     [2]unix.Iovec

	// more-splice: a pipe kept for the connection's lifetime.
	pipe     [2]int
	pipeSize int
	pipeFill int   // bytes in the pipe not yet spliced to the socket
	fileOff  int64 // bytes of the memfd moved into the pipe
}

func newConn(fd int) *conn {
	return &conn{fd: fd, in: make([]byte, 0, 4096), pipe: [2]int{-1, -1}}
}

// readIn reads what the socket has; eof is true when the peer closed.
func (c *conn) readIn() (eof bool, err error) {
	for {
		if len(c.in) == cap(c.in) {
			c.in = append(c.in, 0)[:len(c.in)]
		}
		n, err := unix.Read(c.fd, c.in[len(c.in):cap(c.in)])
		switch {
		case err == unix.EAGAIN:
			return false, nil
		case err == unix.EINTR:
			continue
		case err != nil:
			return true, err
		case n == 0:
			return true, nil
		}
		c.in = c.in[:len(c.in)+n]
	}
}

// nextRequest drops one complete request head from the input and reports
// whether there was one. The request's content is ignored.
func (c *conn) nextRequest() bool {
	i := bytes.Index(c.in, []byte("\r\n\r\n"))
	if i < 0 {
		return false
	}
	c.in = c.in[:copy(c.in, c.in[i+4:])]
	return true
}

// startResponse resets the send position for a new response.
func (c *conn) startResponse(head []byte) {
	c.head = append(c.head[:0], head...)
	c.sent = 0
	c.fileOff = 0
	c.sending = true
}

func (c *conn) close() {
	unix.Close(c.fd)
	for _, p := range c.pipe {
		if p >= 0 {
			unix.Close(p)
		}
	}
}
