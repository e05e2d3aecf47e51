package h3

import (
	"log/slog"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// udpBuffer is the receive and send buffer size quic-go recommends for a
// QUIC server's UDP socket (its wiki's "UDP Buffer Sizes"; the default of
// most kernels, 208 KiB, drops packets at a few hundred Mbit/s).
const udpBuffer = 7 << 20

// sizeBuffers raises the socket's receive and send buffers to udpBuffer,
// with SO_RCVBUFFORCE and SO_SNDBUFFORCE when the sysctl limits refuse
// the plain options (they need CAP_NET_ADMIN), and logs one line naming
// the sizes the kernel kept when it refused. quic-go would log its own
// warning then; ours replaces it.
func sizeBuffers(c *net.UDPConn, log *slog.Logger) {
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	recv := grow(raw, unix.SO_RCVBUF, unix.SO_RCVBUFFORCE)
	send := grow(raw, unix.SO_SNDBUF, unix.SO_SNDBUFFORCE)
	if recv >= udpBuffer && send >= udpBuffer {
		return
	}
	log.Warn("http3: the kernel refused the UDP buffer size QUIC needs under load; raise its limits with sysctl -w net.core.rmem_max=7340032 net.core.wmem_max=7340032",
		"want_bytes", udpBuffer, "receive_bytes", recv, "send_bytes", send, "address", c.LocalAddr().String())
	_ = os.Setenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING", "true")
}

// grow sets the buffer option opt (then force, when opt fell short) to
// udpBuffer and returns the size the kernel reports afterwards (Linux
// reports twice what it reserves for bookkeeping; quic-go compares the
// same number).
func grow(raw syscall.RawConn, opt, force int) int {
	size := 0
	_ = raw.Control(func(fd uintptr) {
		get := func() int {
			n, _ := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, opt)
			return n
		}
		if size = get(); size >= udpBuffer {
			return
		}
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, udpBuffer)
		if size = get(); size >= udpBuffer {
			return
		}
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, force, udpBuffer)
		size = get()
	})
	return size
}
