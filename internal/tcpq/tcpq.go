// Package tcpq reads the kernel's TCP queues of this machine's sockets
// (/proc/net/tcp), so that a test can wait until bytes left one end or
// reached the other instead of guessing how long that takes.
package tcpq

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// InFlight returns the bytes the TCP connection's end at from wrote and
// its end at to has not read yet: the send queue of the one and the
// receive queue of the other, as the kernel counts them. Both ends must
// be IPv4 sockets of this machine; an end that is gone counts nothing.
func InFlight(from, to net.Addr) int {
	a, b := procNetAddr(from), procNetAddr(to)
	tx, _ := queues(a, b)
	_, rx := queues(b, a)
	return tx + rx
}

// procNetAddr spells a 127.x TCP address as /proc/net/tcp does.
func procNetAddr(a net.Addr) string {
	ta := a.(*net.TCPAddr)
	ip := ta.IP.To4()
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], ta.Port)
}

// queues returns the send and receive queues of the TCP socket from local
// to remote (spelled as procNetAddr does); 0 and 0 if there is no such
// socket.
func queues(local, remote string) (tx, rx int) {
	b, _ := os.ReadFile("/proc/net/tcp")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[1] != local || f[2] != remote {
			continue
		}
		txs, rxs, _ := strings.Cut(f[4], ":")
		t, _ := strconv.ParseInt(txs, 16, 64)
		r, _ := strconv.ParseInt(rxs, 16, 64)
		return int(t), int(r)
	}
	return 0, 0
}
