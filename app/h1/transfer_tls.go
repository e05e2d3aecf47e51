package h1

import (
	"io"
	"net"
	"sync"

	"gale/app/wire"
)

// transferBuf is the buffer a TLS transfer reads file regions through.
const transferBuf = 64 << 10

var transferBufs = sync.Pool{New: func() any { b := make([]byte, transferBuf); return &b }}

// runLayered sends a transfer's head and pieces over a TLS connection:
// they are encrypted by this goroutine through the layer (the
// connection's tls.Conn), which writes the records to w, the duplicate of
// the socket (sendfile cannot encrypt, so file regions are read into a
// pooled buffer). The loop does nothing on the connection meanwhile.
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
		if err := x.sendFileTLS(write, p.Off, p.Len); err != nil {
			return err
		}
	}
	return nil
}

// sendFileTLS reads n bytes of the file from off and writes them through
// write, one buffer at a time.
func (x *transfer) sendFileTLS(write func([]byte) error, off, n int64) error {
	if x.file == nil {
		return errNoFile
	}
	bp := transferBufs.Get().(*[]byte)
	defer transferBufs.Put(bp)
	buf := *bp
	for n > 0 {
		m, err := x.file.ReadAt(buf[:min(n, int64(len(buf)))], off)
		if m == 0 {
			if err == nil || err == io.EOF {
				return wire.ErrShortFile
			}
			return err
		}
		if err := write(buf[:m]); err != nil {
			return err
		}
		off += int64(m)
		n -= int64(m)
	}
	return nil
}
