package h1

import (
	"net"
	"time"

	"golang.org/x/sys/unix"

	"gale/app/wire"
)

// A transfer whose body is a cached body with a Blob (sendfile.go) is
// sent with sendfile from the Blob: first from the loop, as far as the
// socket takes it, then, when more than server.max_buffered_output is
// left, by the transfer's goroutine on the duplicate of the socket.

// sendOnLoop sends a transfer's head and as much of its Blob body as the
// socket takes now, from the loop, with gnet's buffer empty: a client
// that reads as fast as the body is sent needs no goroutine, no duplicate
// of the socket and no wake-up. It reports true when nothing is left for
// a goroutine: the body went out whole, or what is left fits in
// server.max_buffered_output and was handed to gnet. Otherwise the
// transfer goes on from where this left off.
func (x *transfer) sendOnLoop(cs *Conn) bool {
	fd := cs.C.Fd()
	n := sendMore(fd, x.head)
	cs.SentPast(n)
	x.head = x.head[n:]
	if len(x.head) > 0 {
		return false
	}
	body := x.parts[0].Data
	m := sendBlobNow(fd, x.blob, x.blobOff, len(body))
	cs.SentPast(m)
	x.blobOff += int64(m)
	body = body[m:]
	x.parts[0].Data = body
	if len(body) == 0 {
		return true
	}
	if len(body) > cs.loop.Shared.Set.Load().MaxOut {
		return false
	}
	cs.WriteRaw(body)
	return true
}

// runBlob sends a transfer's head (what the loop left of it) and its Blob
// body over w, the duplicate of the socket, with sendfile: the goroutine
// waits for room in the socket's buffer in Go's poller, and the write
// deadline moves on with every step that made progress.
func (x *transfer) runBlob(w *net.TCPConn) error {
	rc, err := w.SyscallConn()
	if err != nil {
		return err
	}
	off, end := x.blobOff, x.blobOff+int64(len(x.parts[0].Data))
	head := x.head
	var opErr error
	step := func(fd uintptr) bool {
		if len(head) > 0 {
			n, err := unix.SendmsgN(int(fd), head, nil, nil, headFlags)
			return x.progress(n, err, &opErr, func() { head = head[n:] })
		}
		n, err := x.blob.SendTo(int(fd), &off, int(min(end-off, transferChunk)))
		if err == nil && n == 0 {
			err = wire.ErrShortFile
		}
		return x.progress(n, err, &opErr, func() {})
	}
	for len(head) > 0 || off < end {
		if err := w.SetWriteDeadline(time.Now().Add(x.write)); err != nil {
			return err
		}
		if err := rc.Write(step); err != nil {
			return err
		}
		if opErr != nil {
			return opErr
		}
	}
	return nil
}

// progress is what a step of runBlob reports to the poller: false (wait
// for room) when the socket's buffer is full; else true, after advance,
// or with the error kept in opErr (an interrupted call is made again).
func (x *transfer) progress(n int, err error, opErr *error, advance func()) bool {
	switch {
	case err == unix.EAGAIN:
		return false
	case err == unix.EINTR:
		return true
	case err != nil:
		*opErr = err
		return true
	}
	advance()
	return true
}
