package main

import "golang.org/x/sys/unix"

// sendWritev sends what is left of head and body from memory in one writev.
func sendWritev(s *server, c *conn) (bool, error) {
	hl, total := len(c.head), len(c.head)+len(s.body)
	for c.sent < total {
		iov := c.iov[:0]
		if c.sent < hl {
			c.iov[0] = iovec(c.head[c.sent:])
			c.iov[1] = iovec(s.body)
			iov = c.iov[:2]
		} else {
			c.iov[0] = iovec(s.body[c.sent-hl:])
			iov = c.iov[:1]
		}
		n, err := writev2(c.fd, iov)
		if err != nil {
			if later, now := retry(err); later || now {
				if later {
					return false, nil
				}
				continue
			}
			return false, err
		}
		c.sent += n
	}
	return true, nil
}

// sendTwoWrites writes the head, then the body, each with its own write and
// no MSG_MORE, so (with TCP_NODELAY) the head leaves in a segment of its own.
func sendTwoWrites(s *server, c *conn) (bool, error) {
	hl, total := len(c.head), len(c.head)+len(s.body)
	for c.sent < total {
		var p []byte
		if c.sent < hl {
			p = c.head[c.sent:]
		} else {
			p = s.body[c.sent-hl:]
		}
		n, err := unix.Write(c.fd, p)
		if err != nil {
			if later, now := retry(err); later || now {
				if later {
					return false, nil
				}
				continue
			}
			return false, err
		}
		c.sent += n
	}
	return true, nil
}

func iovec(p []byte) unix.Iovec {
	v := unix.Iovec{Base: &p[0]}
	v.SetLen(len(p))
	return v
}
