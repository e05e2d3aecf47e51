package main

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// server is the single-threaded, level-triggered epoll responder.
type server struct {
	mode  mode
	body  []byte
	memfd int
	heads headMaker
	epfd  int
	lfd   int
	conns map[int]*conn
}

// serve answers every request on 127.0.0.1:port with the same response,
// sent the way m says, until the process is killed.
func serve(port int, m mode, size int) error {
	runtime.LockOSThread()
	s := &server{mode: m, body: makeBody(size), heads: headMaker{size: size}, conns: map[int]*conn{}}
	var err error
	if s.memfd, err = sealedMemfd(s.body); err != nil {
		return err
	}
	if s.lfd, err = listen(port); err != nil {
		return err
	}
	if s.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	if err := s.ctl(unix.EPOLL_CTL_ADD, s.lfd, unix.EPOLLIN); err != nil {
		return err
	}
	return s.loop()
}

func listen(port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return -1, fmt.Errorf("bind 127.0.0.1:%d: %w", port, err)
	}
	if err := unix.Listen(fd, 1024); err != nil {
		return -1, fmt.Errorf("listen: %w", err)
	}
	return fd, nil
}

func (s *server) ctl(op, fd int, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(fd)}
	if err := unix.EpollCtl(s.epfd, op, fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	return nil
}

func (s *server) loop() error {
	events := make([]unix.EpollEvent, 128)
	for {
		n, err := unix.EpollWait(s.epfd, events, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("epoll_wait: %w", err)
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			if fd == s.lfd {
				s.accept()
				continue
			}
			if c := s.conns[fd]; c != nil {
				s.handle(c, ev.Events)
			}
		}
	}
}

func (s *server) accept() {
	for {
		fd, _, err := unix.Accept4(s.lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			return // EAGAIN, or an error the next event retries
		}
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		if s.ctl(unix.EPOLL_CTL_ADD, fd, unix.EPOLLIN) != nil {
			unix.Close(fd)
			continue
		}
		s.conns[fd] = newConn(fd)
	}
}
