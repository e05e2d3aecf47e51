package app

import (
	"net"
	"testing"
)

// TestUDPFree: a port UDP already holds is not free for an HTTP/3
// listener's port 0; once released it is.
func TestUDPFree(t *testing.T) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ua := c.LocalAddr().(*net.UDPAddr)
	a := &net.TCPAddr{IP: ua.IP, Port: ua.Port}
	if udpFree(a) {
		t.Errorf("udpFree(%v) with the port bound: true", a)
	}
	_ = c.Close()
	if !udpFree(a) {
		t.Errorf("udpFree(%v) after closing: false", a)
	}
}
