package h1

import (
	"net"

	"gale/app/wire"
)

// runLayered sends a transfer's head and pieces over a TLS connection:
// they are encrypted by this goroutine through the layer (the
// connection's tls.Conn), which writes the records to w, the duplicate of
// the socket. The loop does nothing on the connection meanwhile.
// Memory stays bounded per transfer: the buffer and crypto/tls's record
// buffer.
func (x *transfer) runLayered(w *net.TCPConn, ly wire.Layer) error {
	tw := ly.SendOffLoop(w)
	// The loop observes the transfer's end (done) before it uses the
	// connection again.
	defer ly.EndOffLoop()
	write := func(b []byte) error {
		return x.step(w, func() error { _, err := tw.Write(b); return err })
	}
	if err := write(x.head); err != nil {
		return err
	}
	for _, p := range x.parts {
		if p.Data != nil {
			for b := p.Data; len(b) > 0; {
				n := min(len(b), transferChunk)
				if err := write(b[:n]); err != nil {
					return err
				}
				b = b[n:]
			}
			continue
		}
		if err := x.sendFile(write, p.Off, p.Len); err != nil {
			return err
		}
	}
	return nil
}
