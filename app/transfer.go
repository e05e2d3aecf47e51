package app

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"gale/handlers"
)

// transferChunk is how much one write step sends before the write
// deadline is pushed forward: the write timeout means "no progress for
// that long", not "the whole body within that long".
const transferChunk = 512 << 10

// transfer sends one large response (head and body) from a goroutine over
// a duplicate of the connection's descriptor, so that gnet never buffers
// the body: with sendfile for files, through Go's poller, which waits for
// writability without a thread per slow reader. While a transfer is
// pending the connection parses nothing and the loop writes nothing to it;
// the goroutine reports back with Conn.Wake.
//
// Fields other than done and err are set on the loop before the goroutine
// starts and read-only afterwards; err is written by the goroutine before
// done is set and read by the loop after it observed done.
type transfer struct {
	cs      *conn
	head    []byte   // the rendered response head (a copy)
	file    *os.File // file body, or nil
	size    int64    // file body length
	body    []byte   // in-memory body (immutable memory), when file is nil
	write   time.Duration
	started bool
	done    atomic.Bool
	err     error
}

func newTransfer(cs *conn, head []byte, resp *handlers.Response, write int64) *transfer {
	return &transfer{
		cs:    cs,
		head:  bytes.Clone(head),
		file:  resp.File,
		size:  resp.FileSize,
		body:  resp.Body,
		write: time.Duration(write),
	}
}

func (x *transfer) finished() bool { return x.done.Load() }

// abandon releases a transfer that never started.
func (x *transfer) abandon() {
	if x.file != nil {
		_ = x.file.Close()
	}
}

// startTransfer starts cs's pending transfer once everything written
// before it has left gnet's buffer (responses must not overtake each
// other). Otherwise the sweep calls again.
func (cs *conn) startTransfer() {
	x := cs.xfer
	if x.started || cs.outboundBuffered() > 0 {
		return
	}
	fd, err := cs.c.Dup()
	if err != nil {
		cs.loop.srv.log.Warn("dup for transfer", "err", err)
		x.started = true
		x.err = err
		x.done.Store(true)
		x.abandon()
		_ = cs.c.Wake(nil)
		return
	}
	x.started = true
	c := cs.c
	go func() {
		x.err = x.run(fd)
		if x.file != nil {
			_ = x.file.Close()
		}
		x.done.Store(true)
		_ = c.Wake(nil) // a no-op if the connection closed meanwhile
	}()
}

var errShortFile = errors.New("app: file shorter than its announced length")

func (x *transfer) run(fd int) error {
	f := os.NewFile(uintptr(fd), "transfer")
	nc, err := net.FileConn(f) // duplicates fd again
	_ = f.Close()
	if err != nil {
		return err
	}
	defer nc.Close()
	w := nc.(*net.TCPConn)
	if err := x.step(w, func() error { _, err := w.Write(x.head); return err }); err != nil {
		return err
	}
	if x.file == nil {
		for b := x.body; len(b) > 0; {
			n := min(len(b), transferChunk)
			if err := x.step(w, func() error { _, err := w.Write(b[:n]); return err }); err != nil {
				return err
			}
			b = b[n:]
		}
		return nil
	}
	if _, err := x.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	for left := x.size; left > 0; {
		n := min(left, transferChunk)
		var sent int64
		err := x.step(w, func() error {
			var err error
			// ReadFrom with an *io.LimitedReader over an *os.File uses
			// sendfile(2).
			sent, err = w.ReadFrom(&io.LimitedReader{R: x.file, N: n})
			return err
		})
		if err != nil {
			return err
		}
		if sent == 0 {
			return errShortFile
		}
		left -= sent
	}
	return nil
}

func (x *transfer) step(w *net.TCPConn, fn func() error) error {
	if err := w.SetWriteDeadline(time.Now().Add(x.write)); err != nil {
		return err
	}
	return fn()
}
