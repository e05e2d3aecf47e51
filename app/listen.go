package app

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// resolveListen turns a configured address into the concrete "host:port"
// gnet will bind. It binds the address once without SO_REUSEPORT, which
// both resolves port 0 to a free port and refuses an address another
// process already listens on (with SO_REUSEPORT on every loop, gnet's own
// bind would otherwise silently share the port with that process).
func resolveListen(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return "", fmt.Errorf("listen %s: address already in use by another process", addr)
		}
		return "", fmt.Errorf("listen %s: %w", addr, err)
	}
	bound := ln.Addr().(*net.TCPAddr)
	host, _, _ := net.SplitHostPort(addr)
	_ = ln.Close()
	return net.JoinHostPort(host, fmt.Sprint(bound.Port)), nil
}

// raiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit and
// returns the resulting soft limit.
func raiseFileLimit() uint64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 1024
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &rl)
		_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &rl)
	}
	return rl.Cur
}
