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
// bind would otherwise silently share the port with that process). With
// udpToo (a listener that also serves HTTP/3) a port 0 is one free for
// UDP as well: the port is bound for both at once, and another is tried
// when UDP already has it.
func resolveListen(addr string, udpToo bool) (string, error) {
	host, port, _ := net.SplitHostPort(addr)
	for tries := 0; ; tries++ {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return "", fmt.Errorf("listen %s: address already in use by another process", addr)
			}
			return "", fmt.Errorf("listen %s: %w", addr, err)
		}
		bound := ln.Addr().(*net.TCPAddr)
		free := !udpToo || port != "0" || tries >= 20 || udpFree(bound)
		_ = ln.Close()
		if free {
			return net.JoinHostPort(host, fmt.Sprint(bound.Port)), nil
		}
	}
}

// udpFree reports whether UDP's port of a (its address and port) can be
// bound.
func udpFree(a *net.TCPAddr) bool {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: a.IP, Port: a.Port, Zone: a.Zone})
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
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
