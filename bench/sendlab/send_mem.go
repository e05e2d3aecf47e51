package main

import "golang.org/x/sys/unix"

// sendWritev sends what is left of head and body from memory in one writev.
func sendWritev(s *server, c *conn) (bool, error) {
	hl := len(c.head)
	return pump(c, hl+len(s.body), func() (int, error) {
		iov := c.iov[:1]
		if c.sent < hl {
			c.iov[0] = iovec(c.head[c.sent:])
			c.iov[1] = iovec(s.body)
			iov = c.iov[:2]
		} else {
			c.iov[0] = iovec(s.body[c.sent-hl:])
		}
		return writev2(c.fd, iov)
	})
}

// sendTwoWrites writes the head, then the body, each with its own write and
// no MSG_MORE, so (with TCP_NODELAY) the head leaves in a segment of its own.
func sendTwoWrites(s *server, c *conn) (bool, error) {
	hl := len(c.head)
	return pump(c, hl+len(s.body), func() (int, error) {
		if c.sent < hl {
			return unix.Write(c.fd, c.head[c.sent:])
		}
		return unix.Write(c.fd, s.body[c.sent-hl:])
	})
}

func iovec(p []byte) unix.Iovec {
	v := unix.Iovec{Base: &p[0]}
	v.SetLen(len(p))
	return v
}
