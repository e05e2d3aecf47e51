package main

import "golang.org/x/sys/unix"

// handle reads what c has, goes on with a response under way and starts
// the next ones; it closes c on EOF or any error.
func (s *server) handle(c *conn, events uint32) {
	if events&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		if eof, err := c.readIn(); eof || err != nil {
			s.drop(c)
			return
		}
	}
	wasSending := c.sending
	if err := s.respond(c); err != nil {
		s.drop(c)
		return
	}
	switch {
	case c.sending && !wasSending:
		s.ctl(unix.EPOLL_CTL_MOD, c.fd, unix.EPOLLIN|unix.EPOLLOUT)
	case !c.sending && wasSending:
		s.ctl(unix.EPOLL_CTL_MOD, c.fd, unix.EPOLLIN)
	}
}

// respond continues the response under way, then answers each complete
// request in c's input, until one has to wait for EPOLLOUT.
func (s *server) respond(c *conn) error {
	for {
		if !c.sending {
			if !c.nextRequest() {
				return nil
			}
			c.startResponse(s.heads.head())
		}
		done, err := s.mode.send(s, c)
		if err != nil {
			return err
		}
		if !done {
			return nil
		}
		c.sending = false
	}
}

func (s *server) drop(c *conn) {
	delete(s.conns, c.fd)
	c.close() // closing the descriptor also removes it from the epoll set
}
