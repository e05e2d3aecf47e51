package h1

import (
	"bytes"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"gale/app/wire"
	"gale/cache"
	"gale/handlers"
)

// transferChunk is how much one write step sends before the write
// deadline is pushed forward: the write timeout means "no progress for
// that long", not "the whole body within that long".
const transferChunk = 512 << 10

// transfer sends one large response (head and body) from a goroutine over
// a duplicate of the connection's descriptor, so that gnet never buffers
// the body: with sendfile for file regions, through Go's poller, which
// waits for writability without a thread per slow reader (an idle slow
// reader costs no CPU and no buffer). While a transfer is pending the
// connection parses nothing and the loop writes nothing to it; the
// goroutine reports back with Conn.Wake.
//
// The body is a list of pieces: in-memory bytes (a cached file's body,
// a range of it, multipart boundaries) and regions of an open file (a
// large file, a range of it). A file opened for the response keeps the
// version it was opened on: a file replaced by a rename while a slow
// client downloads it is sent complete from the old inode. A cached
// entry whose bytes are sent is pinned (cache.Entry.Pin) until the
// transfer ends, so that the cache's byte budget keeps counting an old
// version still in flight.
//
// Fields other than done and err are set on the loop before the goroutine
// starts and read-only afterwards; err is written by the goroutine before
// done is set and read by the loop after it observed done.
type transfer struct {
	cs      *Conn
	head    []byte              // the rendered response head (a copy)
	parts   []handlers.BodyPart // the body, in order
	file    *os.File            // what file regions are read from; nil when there are none
	entry   *cache.Entry        // the cache entry in-memory pieces alias, pinned; nil for none
	write   time.Duration
	fds     int64 // descriptors counted in the budget for it (transferFDs)
	started bool
	done    atomic.Bool
	err     error
}

// transferFDs is how many descriptors the transfer of resp holds, which
// the caller acquires from the budget before newTransfer: the file it
// reads, if any, and the socket's duplicate with the second duplicate
// net.FileConn makes while it wraps the first (run gives that one back
// once the first is closed). A transfer outlives its client connection
// when the client closes mid-body, and gives the rest back only when its
// goroutine ends.
func transferFDs(resp *handlers.Response) int64 {
	if resp.File != nil {
		return 3
	}
	return 2
}

// newTransfer prepares the transfer of resp's body behind head. It takes
// over resp.File (the caller clears it), pins resp.Entry, and owns the fds
// descriptors acquired for it. In-memory pieces up to inlineBody bytes
// (multipart boundaries, which may live in the request's scratch memory)
// are copied; larger ones alias immutable memory (cached bodies) and are
// referenced.
func newTransfer(cs *Conn, head []byte, resp *handlers.Response, write, fds int64) *transfer {
	x := &transfer{
		cs:    cs,
		head:  bytes.Clone(head),
		file:  resp.File,
		entry: resp.Entry,
		write: time.Duration(write),
		fds:   fds,
	}
	switch {
	case resp.Parts != nil:
		x.parts = copyParts(resp.Parts)
	case resp.File != nil:
		x.parts = []handlers.BodyPart{{Off: resp.FileOffset, Len: resp.FileSize}}
	default:
		x.parts = []handlers.BodyPart{{Data: resp.Body}}
	}
	if x.entry != nil {
		x.entry.Pin()
	}
	return x
}

// copyParts copies the list and the small in-memory pieces into one
// allocation each.
func copyParts(ps []handlers.BodyPart) []handlers.BodyPart {
	out := make([]handlers.BodyPart, len(ps))
	n := 0
	for _, p := range ps {
		if p.Data != nil && len(p.Data) <= inlineBody {
			n += len(p.Data)
		}
	}
	buf := make([]byte, 0, n)
	for i, p := range ps {
		if p.Data != nil && len(p.Data) <= inlineBody {
			at := len(buf)
			buf = append(buf, p.Data...)
			p.Data = buf[at:len(buf):len(buf)]
		}
		out[i] = p
	}
	return out
}

func (x *transfer) finished() bool { return x.done.Load() }

// release closes the file, unpins the entry and gives the descriptors
// back to the budget; it runs once, when the transfer ended (its
// duplicates are closed by then) or was abandoned.
func (x *transfer) release() {
	if x.file != nil {
		_ = x.file.Close()
	}
	if x.entry != nil {
		x.entry.Release()
		x.entry = nil
	}
	x.cs.loop.Shared.Budget.Release(x.fds)
	x.fds = 0
}

// abandon releases a transfer that never started.
func (x *transfer) abandon() { x.release() }

// startTransfer starts cs's pending transfer once everything written
// before it has left gnet's buffer (responses must not overtake each
// other). Otherwise the sweep calls again.
func (cs *Conn) startTransfer() {
	x := cs.xfer
	if x.started || cs.OutboundBuffered() > 0 {
		return
	}
	fd, err := cs.C.Dup()
	if err != nil {
		cs.loop.Shared.Log.Warn("dup for transfer", "err", err)
		x.started = true
		x.err = err
		x.done.Store(true)
		x.abandon()
		_ = cs.C.Wake(nil)
		return
	}
	x.started = true
	c := cs.C
	go func() {
		x.err = x.run(fd)
		x.release()
		x.done.Store(true)
		_ = c.Wake(nil) // a no-op if the connection closed meanwhile
	}()
}

func (x *transfer) run(fd int) error {
	f := os.NewFile(uintptr(fd), "transfer")
	nc, err := net.FileConn(f) // duplicates fd again
	_ = f.Close()
	x.cs.loop.Shared.Budget.Release(1) // the second duplicate is all that is left
	x.fds--
	if err != nil {
		return err
	}
	defer nc.Close()
	w := nc.(*net.TCPConn)
	if ly := x.cs.Layer(); ly != nil {
		return x.runLayered(w, ly) // transfer_tls.go
	}
	if err := x.step(w, func() error { _, err := w.Write(x.head); return err }); err != nil {
		return err
	}
	for _, p := range x.parts {
		var err error
		if p.Data != nil {
			err = x.sendBytes(w, p.Data)
		} else {
			err = x.sendFile(w, p.Off, p.Len)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sendBytes writes b in steps of transferChunk.
func (x *transfer) sendBytes(w *net.TCPConn, b []byte) error {
	for len(b) > 0 {
		n := min(len(b), transferChunk)
		if err := x.step(w, func() error { _, err := w.Write(b[:n]); return err }); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// sendFile sends n bytes of the file from off, with sendfile(2), in steps
// of transferChunk.
func (x *transfer) sendFile(w *net.TCPConn, off, n int64) error {
	if x.file == nil {
		return errNoFile
	}
	if _, err := x.file.Seek(off, io.SeekStart); err != nil {
		return err
	}
	for left := n; left > 0; {
		chunk := min(left, transferChunk)
		var sent int64
		err := x.step(w, func() error {
			var err error
			// ReadFrom with an *io.LimitedReader over an *os.File uses
			// sendfile(2).
			sent, err = w.ReadFrom(&io.LimitedReader{R: x.file, N: chunk})
			return err
		})
		if err != nil {
			return err
		}
		if sent == 0 {
			return wire.ErrShortFile
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
