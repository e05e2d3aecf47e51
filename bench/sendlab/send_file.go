package main

import "golang.org/x/sys/unix"

// sendMoreSendfile sends the head with MSG_MORE, then the body with sendfile
// from the sealed memfd.
func sendMoreSendfile(s *server, c *conn) (bool, error) {
	return headThenSendfile(s, c, func(p []byte) (int, error) {
		return sendFlags(c.fd, p, unix.MSG_MORE)
	})
}

// sendCorkSendfile sets TCP_CORK, writes the head, sends the body with
// sendfile and clears TCP_CORK: two more system calls than MSG_MORE.
func sendCorkSendfile(s *server, c *conn) (bool, error) {
	if !c.corked {
		if err := setCork(c.fd, true); err != nil {
			return false, err
		}
		c.corked = true
	}
	done, err := headThenSendfile(s, c, func(p []byte) (int, error) {
		return unix.Write(c.fd, p)
	})
	if done && err == nil {
		c.corked = false
		err = setCork(c.fd, false)
	}
	return done, err
}

// headThenSendfile sends the head with sendHead, then the body from the
// memfd with sendfile, from wherever c.sent says the response stands.
func headThenSendfile(s *server, c *conn, sendHead func([]byte) (int, error)) (bool, error) {
	hl, total := len(c.head), len(c.head)+len(s.body)
	return pump(c, total, func() (int, error) {
		if c.sent < hl {
			return sendHead(c.head[c.sent:])
		}
		off := int64(c.sent - hl)
		return unix.Sendfile(c.fd, s.memfd, &off, total-c.sent)
	})
}
