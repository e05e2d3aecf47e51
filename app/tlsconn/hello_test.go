package tlsconn

import (
	"crypto/tls"
	"net"
	"testing"
	"time"
)

// fragmented re-frames the handshake bytes of a one-record ClientHello
// into records of at most n payload bytes.
func fragmented(hello []byte, n int) []byte {
	var out []byte
	for p := hello[recordHeaderLen:]; len(p) > 0; {
		k := min(n, len(p))
		out = append(out, hello[0], hello[1], hello[2], byte(k>>8), byte(k))
		out = append(out, p[:k]...)
		p = p[k:]
	}
	return out
}

// TestHelloScanSplits finds a ClientHello complete exactly at its last
// byte, however the bytes arrive and however the records are cut, and
// the record layer's faults wherever they fall.
func TestHelloScanSplits(t *testing.T) {
	hello := captureClientHello(t)
	for _, in := range [][]byte{hello, fragmented(hello, 1), fragmented(hello, 300)} {
		for step := 1; step <= 7; step += 3 {
			var h helloScan
			for n := step; ; n += step {
				n = min(n, len(in))
				r := h.scan(in[:n])
				if n < len(in) && r != helloMore {
					t.Fatalf("%d of %d bytes: %d, want more", n, len(in), r)
				}
				if n == len(in) {
					if r != helloDone {
						t.Fatalf("all %d bytes: %d, want done", n, r)
					}
					break
				}
			}
		}
	}
	// Bytes after the ClientHello are crypto/tls's.
	var h helloScan
	if r := h.scan(append(append([]byte{}, hello...), "\x14\x03\x03\x00\x01\x01"...)); r != helloDone {
		t.Fatalf("ClientHello then change_cipher_spec: %d", r)
	}
	// A second record of another type, in the middle of the message.
	h = helloScan{}
	bad := append(fragmented(hello, 100)[:105], "\x17\x03\x03\x00\x01x"...)
	if r := h.scan(bad); r != helloBad {
		t.Fatalf("application data between fragments: %d", r)
	}
}

// captureClientHello returns the first flight of a crypto/tls client.
func captureClientHello(t *testing.T) []byte {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		c := tls.Client(a, &tls.Config{ServerName: "localhost"})
		_ = c.Handshake()
	}()
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64<<10)
	n, err := b.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}
