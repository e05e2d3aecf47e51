package h2conn

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"gale/app/wire"
	"gale/fds"
)

// The HTTP/2 writer's zero-copy path on cleartext connections. Frames
// interleave 9-byte DATA headers with file regions, so sendfile(2) would
// cost a system call per frame; instead the writer builds each batch in
// a pipe: the small byte items are written into it, the file regions are
// spliced into it from the page cache (page references, not copies), and
// the pipe is spliced to the socket in large pieces. TLS connections keep
// the copying path (their records are encrypted in user space).
//
// Bytes in the pipe have not left: they stay counted in the writer's
// queue until spliced to the socket. The socket splice waits in the
// runtime's poller under the socket's write deadline, so timeouts.write
// and abort bound it as they bound a write.

// pipeMax is the largest pipe the writer asks for (F_SETPIPE_SZ).
const pipeMax = 1 << 20

// pipeMin is the smallest pipe worth splicing through: below it (a user
// over fs.pipe-user-pages-soft gets pipes of a page or two) the writer
// copies instead.
const pipeMin = 64 << 10

// pipeFor is the pipe size for a writer that holds at most held bytes: a
// spliced 16 KiB region takes 4 or 5 page slots and its frame header one,
// so held bytes of frames need about 1.5 times that of pipe (the default 16
// slots would hold only about 3 frames). Each slot counts against the
// user's fs.pipe-user-pages-soft, so the pipe is no larger than that. A
// pipe that fills is drained early, which costs a system call, never
// order or bytes.
func pipeFor(held int64) int {
	return int(min(max(held+held/2, pipeMin), int64(pipeLimit())))
}

// pipeLimit is fs.pipe-max-size, at most pipeMax (read once).
var pipeLimit = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/fs/pipe-max-size")
	if err != nil {
		return pipeMax
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return pipeMax
	}
	return min(n, pipeMax)
})

// h2pipe is a writer's pipe and what it holds. Used by the writer
// goroutine only.
type h2pipe struct {
	r, w int   // the pipe's read and write ends (non-blocking)
	held int   // bytes in the pipe, not yet spliced to the socket
	off  int64 // the file offset of the splice in progress
	more bool  // more bytes follow the socket splice in progress (SPLICE_F_MORE)
	n    int   // what the socket splice in progress moved
	err  error // and its error

	sock   syscall.RawConn // the socket
	toSock func(fd uintptr) bool
}

var errPipeStuck = errors.New("app: the writer's pipe makes no progress")

// openPipe makes the writer's pipe of size bytes (pipeFor) for a
// cleartext socket nc, its two descriptors counted in b. It returns nil,
// having given back what it took, when the budget refuses them or the
// pipe cannot be had or stays too small: the writer then copies.
func openPipe(nc interface {
	SyscallConn() (syscall.RawConn, error)
}, b *fds.Budget, size int) *h2pipe {
	sock, err := nc.SyscallConn()
	if err != nil || !b.Acquire(2) {
		return nil
	}
	var fd [2]int
	if err := unix.Pipe2(fd[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		b.Release(2)
		return nil
	}
	p := &h2pipe{r: fd[0], w: fd[1], sock: sock}
	for size >= pipeMin {
		if _, err := unix.FcntlInt(uintptr(p.w), unix.F_SETPIPE_SZ, size); err == nil {
			break
		}
		size /= 2 // over fs.pipe-max-size or the user's pipe pages
	}
	if got, err := unix.FcntlInt(uintptr(p.w), unix.F_GETPIPE_SZ, 0); err != nil || got < pipeMin {
		p.close(b)
		return nil
	}
	p.toSock = p.spliceOut
	return p
}

// close closes the pipe and gives its descriptors back to b.
func (p *h2pipe) close(b *fds.Budget) {
	_ = unix.Close(p.r)
	_ = unix.Close(p.w)
	b.Release(2)
}

// spliceBatch sends the items in order through the pipe: bytes are
// written into it, file regions spliced into it, and it is spliced to the
// socket whenever it is full and once at the end. A file shorter than its
// region fails the batch (wire.ErrShortFile), as a short read does on the
// copying path: the frame header promising the region is already queued.
// A file is closed as soon as its regions are in the pipe, which holds
// references to their pages, not to the file.
func (w *writer) spliceBatch(batch []writeItem) error {
	for i := range batch {
		it := &batch[i]
		var err error
		switch {
		case it.closeFile:
			closeHeld(it.f, w.files)
			*it = writeItem{} // closed: closeFiles must not see it again
		case it.f != nil:
			err = w.pipeFile(it.f, it.off, it.n)
		default:
			err = w.pipeBytes(it.b)
		}
		if err != nil {
			return err
		}
	}
	return w.drain(false)
}

// pipeBytes writes b into the pipe, draining it to the socket when full.
func (w *writer) pipeBytes(b []byte) error {
	p := w.pipe
	for len(b) > 0 {
		n, err := unix.Write(p.w, b)
		switch {
		case err == unix.EAGAIN:
			if err := w.full(); err != nil {
				return err
			}
			continue
		case err == unix.EINTR:
			continue
		case err != nil:
			return err
		}
		p.held += n
		b = b[n:]
	}
	return nil
}

// pipeFile splices n bytes of f from off into the pipe, draining it to
// the socket when full.
func (w *writer) pipeFile(f *os.File, off, n int64) error {
	p := w.pipe
	fd := int(f.Fd()) // a regular file: Fd changes no mode; only this goroutine closes it
	p.off = off
	for n > 0 {
		k, err := unix.Splice(fd, &p.off, p.w, nil, int(n), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		switch {
		case err == unix.EAGAIN:
			if err := w.full(); err != nil {
				return err
			}
			continue
		case err == unix.EINTR:
			continue
		case err != nil:
			return err
		case k == 0:
			return wire.ErrShortFile // the end of the file came before the region's
		}
		p.held += int(k)
		n -= k
	}
	return nil
}

// full drains the pipe, which took no more, with more to follow.
func (w *writer) full() error {
	if w.pipe.held == 0 {
		return errPipeStuck // an empty pipe that takes nothing
	}
	return w.drain(true)
}

// drain splices everything in the pipe to the socket, each step within
// the write timeout, counting the bytes that left (sent). more says that
// more bytes follow at once (SPLICE_F_MORE).
func (w *writer) drain(more bool) error {
	p := w.pipe
	p.more = more
	for p.held > 0 {
		_ = w.nc.SetWriteDeadline(time.Now().Add(w.timeout))
		if w.dead.Load() {
			return errWriterStopped // abort set the deadline before ours
		}
		p.n, p.err = 0, nil
		err := p.sock.Write(p.toSock)
		if p.n > 0 {
			p.held -= p.n
			w.sent(p.n)
		}
		if err == nil {
			err = p.err
		}
		if err != nil {
			return err
		}
		if p.n == 0 {
			return errPipeStuck
		}
	}
	return nil
}

// spliceOut is the socket splice drain runs in the poller: it reports
// false (wait until writable) when the socket takes nothing now.
func (p *h2pipe) spliceOut(fd uintptr) bool {
	flags := unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK
	if p.more {
		flags |= unix.SPLICE_F_MORE
	}
	for {
		n, err := unix.Splice(p.r, nil, int(fd), nil, p.held, flags)
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		p.n, p.err = int(n), err
		return true
	}
}

var errWriterStopped = errors.New("app: the HTTP/2 writer was stopped")
