package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// pipeWant is the size asked of F_SETPIPE_SZ for each connection's pipe.
const pipeWant = 1 << 20

// sendMoreSplice sends the head with MSG_MORE, then the body by splicing the
// memfd into the connection's pipe and the pipe into the socket, with
// SPLICE_F_MORE while more of the body is still to enter the pipe.
func sendMoreSplice(s *server, c *conn) (bool, error) {
	if c.pipe[0] < 0 {
		if err := openPipe(c); err != nil {
			return false, err
		}
	}
	hl, total := len(c.head), len(c.head)+len(s.body)
	return pump(c, total, func() (int, error) {
		if c.sent < hl {
			return sendFlags(c.fd, c.head[c.sent:], unix.MSG_MORE)
		}
		if c.pipeFill == 0 {
			return 0, fillPipe(s, c)
		}
		return drainPipe(s, c)
	})
}

// fillPipe splices the next piece of the body from the memfd into the
// connection's pipe.
func fillPipe(s *server, c *conn) error {
	size := int64(len(s.body))
	m, err := unix.Splice(s.memfd, &c.fileOff, c.pipe[1], nil, int(min(size-c.fileOff, int64(c.pipeSize))), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
	if err != nil {
		return err
	}
	if m <= 0 {
		return fmt.Errorf("splice from memfd: no bytes at %d", c.fileOff)
	}
	c.pipeFill = int(m)
	return nil
}

// drainPipe splices what the pipe holds into the socket, with
// SPLICE_F_MORE while more of the body is still to enter the pipe, and
// returns how much left.
func drainPipe(s *server, c *conn) (int, error) {
	flags := unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK
	if c.fileOff < int64(len(s.body)) {
		flags |= unix.SPLICE_F_MORE
	}
	m, err := unix.Splice(c.pipe[0], nil, c.fd, nil, c.pipeFill, flags)
	if err != nil {
		return 0, err
	}
	c.pipeFill -= int(m)
	return int(m), nil
}

// openPipe gives c a non-blocking pipe enlarged to pipeWant (or what the
// kernel allows), kept until the connection closes.
func openPipe(c *conn) error {
	p := make([]int, 2)
	if err := unix.Pipe2(p, unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("pipe2: %w", err)
	}
	c.pipe = [2]int{p[0], p[1]}
	unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, pipeWant)
	sz, err := unix.FcntlInt(uintptr(p[1]), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		return fmt.Errorf("F_GETPIPE_SZ: %w", err)
	}
	c.pipeSize = sz
	return nil
}
