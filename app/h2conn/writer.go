package h2conn

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"gale/app/wire"
	"gale/cache"
	"gale/fds"
)

// writer owns the output direction of an HTTP/2 connection once large
// bodies flow: a goroutine writing, with blocking writes on a duplicate of
// the socket (through the TLS writer on TLS connections), what the loop
// queues: frame bytes (copied), and file regions that the goroutine reads
// itself, so that no large file is read on the loop and none is held in
// memory. The loop queues only while less than server.max_buffered_output
// waits (Conn.room); when it stopped for lack of room it says so
// (askRoom), and the writer wakes the loop once half of that drained. A
// write that makes no progress for timeouts.write fails the writer, and
// the loop closes the connection. File regions are read into the
// writer's buffer and checked against the version the response named
// (cache.Version.ReadAt), not spliced: a pipe or the socket would hold
// page-cache pages that a write to the file in place could still change
// under the old ETag. A file that changed fails the writer, and the
// connection closes before the stream's end.
//
// Files are closed by the goroutine while it runs (they may be in the
// batch it writes), by the loop only once it exited.
//
// Every method but run is called on the loop.
type writer struct {
	nc      net.Conn
	wakeFn  func()        // wakes the connection's loop; safe from any goroutine
	max     int64         // server.max_buffered_output
	timeout time.Duration // timeouts.write

	mu      sync.Mutex
	cond    sync.Cond
	items   []writeItem // queued, in order
	spare   []writeItem // the previous batch's storage, for reuse
	free    [][]byte    // byte buffers the goroutine is done with
	stopped bool        // abort was called: write nothing more
	exited  bool        // the goroutine is done: the loop closes files itself

	queued   atomic.Int64 // bytes queued and not yet written
	wantRoom atomic.Bool  // the loop stopped producing for lack of room
	dead     atomic.Bool  // a write failed, or abort: the connection must close
	release  func()       // gives the duplicate's place in the descriptor budget back
	files    *fds.Budget  // where the exchanges' files it closes are counted (closeHeld)
}

// writeItem is one piece of queued output: bytes, a region of a file, or
// (with n == 0 and closeFile) a file to close once what precedes is out.
type writeItem struct {
	b         []byte
	f         *os.File
	v         cache.Version // the version f's region must be read from
	off, n    int64
	closeFile bool
}

// writeChunk is how many bytes the writer gathers into one write.
const writeChunk = 64 << 10

// startWriter moves the connection's output to a writer once gnet's
// buffer is empty (the writer must not overtake bytes gnet still holds).
// It reports whether output may be produced now.
func (h *Conn) startWriter() bool {
	cs := h.wc
	h.flush()
	if cs.Dead || cs.OutboundBuffered() > 0 {
		return false // the sweep wakes the loop once it drained
	}
	b := cs.Loop.Shared.Budget
	if !b.Acquire(1) {
		return false // no descriptor for the duplicate: the sweep tries again
	}
	nc, err := cs.Dup()
	if err != nil {
		b.Release(1)
		h.wantWriter = false // stay inline; the sweep resumes production
		return true
	}
	set := cs.Loop.Shared.Set.Load()
	gc := cs.C
	w := &writer{
		nc:      nc,
		wakeFn:  func() { _ = gc.Wake(nil) },
		max:     int64(set.MaxOut),
		timeout: time.Duration(set.Write),
		release: func() { b.Release(1) },
		files:   b,
	}
	w.cond.L = &w.mu
	h.w = w
	h.wantWriter = false
	go w.run()
	return true
}

// queuedBytes is how many bytes wait to be written.
func (w *writer) queuedBytes() int { return int(w.queued.Load()) }

// failed reports whether the writer stopped for good.
func (w *writer) failed() bool { return w.dead.Load() }

// askRoom says the loop has more to produce once the queue shrank.
func (w *writer) askRoom() {
	w.wantRoom.Store(true)
	if w.queued.Load() <= w.max/2 {
		w.wakeFn() // it shrank meanwhile
	}
}

// queueBytes queues a copy of b (written after the next kick).
func (w *writer) queueBytes(b []byte) {
	w.mu.Lock()
	if n := len(w.items); n > 0 && w.items[n-1].f == nil && len(w.items[n-1].b)+len(b) <= writeChunk {
		w.items[n-1].b = append(w.items[n-1].b, b...)
	} else {
		var buf []byte
		if k := len(w.free); k > 0 {
			buf, w.free = w.free[k-1][:0], w.free[:k-1]
		}
		w.items = append(w.items, writeItem{b: append(buf, b...)})
	}
	w.queued.Add(int64(len(b)))
	w.mu.Unlock()
}

// queueFile queues n bytes of f from off (a DATA frame's payload whose
// header was queued just before), written after the next kick.
func (w *writer) queueFile(f *os.File, v cache.Version, off, n int64) {
	w.mu.Lock()
	w.items = append(w.items, writeItem{f: f, v: v, off: off, n: n})
	w.queued.Add(n)
	w.mu.Unlock()
}

// kick lets the goroutine write what was queued since the last kick: the
// loop queues a turn's frames first and wakes the writer once, so that it
// writes them in few large writes rather than one per frame.
func (w *writer) kick() { w.cond.Signal() }

// queueClose has the writer close f once it is done with everything
// queued before.
func (w *writer) queueClose(f *os.File) {
	w.mu.Lock()
	if w.exited {
		w.mu.Unlock()
		closeHeld(f, w.files)
		return
	}
	w.items = append(w.items, writeItem{f: f, closeFile: true})
	w.mu.Unlock()
	w.cond.Signal()
}

// abort stops the writer: what is queued is dropped, files are closed.
// The connection closed or is closing now.
func (w *writer) abort() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.dead.Store(true)
	w.cond.Signal()
	_ = w.nc.SetWriteDeadline(time.Now()) // unblocks a write in progress
}

// run writes batches until abort or a failed write.
func (w *writer) run() {
	buf := make([]byte, 0, writeChunk)
	var err error
	for {
		batch, ok := w.next()
		if !ok {
			break
		}
		buf, err = w.writeBatch(buf, batch)
		if err != nil {
			w.closeFiles(batch) // the files the failed batch was to close after its bytes
			w.recycle(batch)
			break
		}
		w.recycle(batch)
	}
	w.dead.Store(true)
	w.mu.Lock()
	w.stopped = true
	w.exited = true
	rest := w.items
	w.items = nil
	w.mu.Unlock()
	w.closeFiles(rest)
	_ = w.nc.Close()
	w.release()
	w.wakeFn()
}

// closeFiles closes the files that items were to close (those writeBatch
// did not reach): the writer stopped, and nothing else will.
func (w *writer) closeFiles(items []writeItem) {
	for i := range items {
		if items[i].closeFile {
			closeHeld(items[i].f, w.files)
			items[i] = writeItem{}
		}
	}
}

// next waits for queued items and takes them all.
func (w *writer) next() ([]writeItem, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.items) == 0 && !w.stopped {
		w.cond.Wait()
	}
	if w.stopped {
		return nil, false
	}
	batch := w.items
	w.items = w.spare[:0]
	w.spare = nil
	return batch, true
}

// recycle keeps the batch's storage and byte buffers for reuse.
func (w *writer) recycle(batch []writeItem) {
	w.mu.Lock()
	for i := range batch {
		if b := batch[i].b; b != nil && cap(b) <= writeChunk && len(w.free) < 4 {
			w.free = append(w.free, b[:0])
		}
		batch[i] = writeItem{}
	}
	if w.spare == nil {
		w.spare = batch[:0]
	}
	w.mu.Unlock()
}

// writeBatch writes the items in order, gathering bytes and file regions
// into buf for fewer, larger writes.
func (w *writer) writeBatch(buf []byte, batch []writeItem) ([]byte, error) {
	buf = buf[:0]
	for i := range batch {
		it := &batch[i]
		switch {
		case it.closeFile:
			if len(buf) > 0 {
				if err := w.write(buf); err != nil {
					return buf, err
				}
				buf = buf[:0]
			}
			closeHeld(it.f, w.files)
			*it = writeItem{} // closed: closeFiles must not see it again
		case it.f != nil:
			for n := it.n; n > 0; {
				if len(buf) == cap(buf) {
					if err := w.write(buf); err != nil {
						return buf, err
					}
					buf = buf[:0]
				}
				k := min(n, int64(cap(buf)-len(buf)))
				m, err := it.v.ReadAt(it.f, buf[len(buf):len(buf)+int(k)], it.off+it.n-n)
				if err != nil || int64(m) != k {
					return buf, wire.ErrShortFile
				}
				buf = buf[:len(buf)+int(k)]
				n -= k
			}
		default:
			b := it.b
			for len(b) > 0 {
				if len(buf) == cap(buf) {
					if err := w.write(buf); err != nil {
						return buf, err
					}
					buf = buf[:0]
				}
				k := copy(buf[len(buf):cap(buf)], b)
				buf = buf[:len(buf)+k]
				b = b[k:]
			}
		}
	}
	if len(buf) > 0 {
		if err := w.write(buf); err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// write writes b whole, within the write timeout, and wakes the loop when
// it waits for room and the queue has shrunk to half the bound.
func (w *writer) write(b []byte) error {
	_ = w.nc.SetWriteDeadline(time.Now().Add(w.timeout))
	if w.dead.Load() {
		return errWriterStopped // abort set the deadline before ours
	}
	n, err := w.nc.Write(b)
	w.sent(n)
	return err
}

// sent counts n bytes written, and wakes the loop when it waits for room
// and the queue has shrunk to half the bound.
func (w *writer) sent(n int) {
	if w.queued.Add(-int64(n)) <= w.max/2 && w.wantRoom.CompareAndSwap(true, false) {
		w.wakeFn()
	}
}

var errWriterStopped = errors.New("app: the HTTP/2 writer was stopped")
