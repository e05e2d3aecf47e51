package h1

import (
	"bytes"

	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"gale/cache"
	"gale/handlers"
)

// transferChunk is how much one write step sends before the write
// deadline is pushed forward: the write timeout means "no progress for
// that long", not "the whole body within that long".
const transferChunk = 512 << 10

// transfer sends one large response (head and body) from a goroutine over
// a duplicate of the connection's descriptor, so that gnet never buffers
// the body: through Go's poller, which waits for writability without a
// thread per slow reader (an idle slow reader costs no CPU, and one
// buffer at most while a file region is being written: sendFile). While a transfer is pending the
// connection parses nothing and the loop writes nothing to it; the
// goroutine reports back with Conn.Wake.
//
// The body is a list of pieces: in-memory bytes (a cached file's body,
// a range of it, multipart boundaries) and regions of an open file (a
// large file, a range of it). A cached body with a Blob (one piece) goes
// with sendfile from the Blob instead, and starts on the loop: a client
// that reads as fast as it is sent gets it without a goroutine
// (transfer_blob.go). A file opened for the response keeps the
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
	version cache.Version       // the version of file the head's validators name
	entry   *cache.Entry        // the cache entry in-memory pieces alias, pinned; nil for none
	blob    *cache.Blob         // the one in-memory piece's bytes, from blobOff, sent with sendfile (transfer_blob.go); nil for none
	blobOff int64
	onLoop  bool // the loop sent it all (the rest, if any, waits in gnet's buffer): no goroutine ran
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
		cs:      cs,
		head:    bytes.Clone(head),
		file:    resp.File,
		version: resp.FileVersion,
		entry:   resp.Entry,
		write:   time.Duration(write),
		fds:     fds,
	}
	switch {
	case resp.Parts != nil:
		x.parts = copyParts(resp.Parts)
	case resp.File != nil:
		x.parts = []handlers.BodyPart{{Off: resp.FileOffset, Len: resp.FileSize}}
	default:
		x.parts = []handlers.BodyPart{{Data: resp.Body}}
		if seg := cs.blobSegment(resp, resp.Body); seg.Blob != nil {
			x.blob, x.blobOff = seg.Blob, seg.Off
		}
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
// other). Otherwise the sweep calls again. It reports whether the
// transfer ended on the loop (sendOnLoop): then no goroutine runs.
func (cs *Conn) startTransfer() bool {
	x := cs.xfer
	if x.started || cs.OutboundBuffered() > 0 {
		return false
	}
	if x.blob != nil && x.sendOnLoop(cs) {
		x.started, x.onLoop = true, true
		x.release()
		x.done.Store(true)
		return true
	}
	fd, err := cs.C.Dup()
	if err != nil {
		cs.loop.Shared.Log.Warn("dup for transfer", "err", err)
		x.started = true
		x.err = err
		x.done.Store(true)
		x.abandon()
		_ = cs.C.Wake(nil)
		return false
	}
	x.started = true
	c := cs.C
	go func() {
		x.err = x.run(fd)
		x.release()
		x.done.Store(true)
		_ = c.Wake(nil) // a no-op if the connection closed meanwhile
	}()
	return false
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
	if x.blob != nil {
		return x.runBlob(w) // transfer_blob.go
	}
	write := func(b []byte) error {
		return x.step(w, func() error { _, err := w.Write(b); return err })
	}
	if err := write(x.head); err != nil {
		return err
	}
	for _, p := range x.parts {
		var err error
		if p.Data != nil {
			err = x.sendBytes(w, p.Data)
		} else {
			err = x.sendFile(write, p.Off, p.Len)
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

// transferBuf is the buffer a transfer reads file regions through.
const transferBuf = 64 << 10

var transferBufs = sync.Pool{New: func() any { b := make([]byte, transferBuf); return &b }}

// sendFile reads n bytes of the file from off into a pooled buffer, one
// buffer at a time, each read checked against the version the response's
// validators name (cache.Version.ReadAt), and writes them through write.
// Not sendfile(2): the socket would hold references to the page cache's
// pages, and a write to the file in place before the client read them
// would reach the client under the old ETag (with sendfile here,
// TestStaticRewriteKeepsETagVersion gets such mixed bodies). A file that
// changed or shrank ends the transfer with an error, and the connection
// closes before the body's end, so the client sees the response
// incomplete.
// Memory stays bounded per transfer: the one buffer.
func (x *transfer) sendFile(write func([]byte) error, off, n int64) error {
	if x.file == nil {
		return errNoFile
	}
	bp := transferBufs.Get().(*[]byte)
	defer transferBufs.Put(bp)
	buf := *bp
	for n > 0 {
		m, err := x.version.ReadAt(x.file, buf[:min(n, int64(len(buf)))], off)
		if err != nil {
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

func (x *transfer) step(w *net.TCPConn, fn func() error) error {
	if err := w.SetWriteDeadline(time.Now().Add(x.write)); err != nil {
		return err
	}
	return fn()
}
