package main

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Thin system-call wrappers that return the byte count and allocate nothing,
// so the modes differ only in the calls they make.

func sendFlags(fd int, p []byte, flags int) (int, error) {
	r, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func writev2(fd int, iov []unix.Iovec) (int, error) {
	r, _, e := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func setCork(fd int, on bool) error {
	v := 0
	if on {
		v = 1
	}
	return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_CORK, v)
}

// retry says whether err means "call again later" (EAGAIN) or "again now"
// (EINTR); any other error is fatal for the connection.
func retry(err error) (later, now bool) {
	return err == unix.EAGAIN, err == unix.EINTR
}

// pump calls step until the response's total bytes are sent, counting
// what each call sent in c.sent (0 for a step that moved bytes short of
// the socket, into a pipe). EAGAIN leaves the rest for the next EPOLLOUT
// (false, nil); EINTR calls step again.
func pump(c *conn, total int, step func() (int, error)) (bool, error) {
	for c.sent < total {
		n, err := step()
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
