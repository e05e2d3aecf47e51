package cache

import (
	"runtime"

	"golang.org/x/sys/unix"

	"gale/fds"
)

// Blob is a copy of a representation's body in a sealed memfd
// (memfd_create(2) with F_SEAL_WRITE, F_SEAL_SHRINK, F_SEAL_GROW and
// F_SEAL_SEAL): its pages can never change, so sendfile(2) from it hands
// the kernel pages that stay the bytes the representation's ETag names
// for as long as the socket holds them. That is what the file itself
// cannot promise: a write in place changes the page-cache pages a socket
// still references. A new file version gets a new Blob.
//
// A Blob is immutable and safe for concurrent use. Its descriptor is
// closed (and given back to the descriptor budget) by a cleanup once the
// Blob is unreachable, never explicitly: a goroutine that sends from it
// holds the *Blob, which keeps the descriptor open and its number from
// being reused while the call runs.
type Blob struct {
	fd   int   // the sealed memfd
	size int64 // its length
}

// blobSeals are the seals that make a Blob's bytes final.
const blobSeals = unix.F_SEAL_WRITE | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

// newBlob copies body into a sealed memfd, counted as one descriptor in
// budget. It returns nil when the budget has no room or a system call
// fails: the body is then sent from memory.
func newBlob(body []byte, budget *fds.Budget) *Blob {
	if !budget.Acquire(1) {
		return nil
	}
	fd, err := unix.MemfdCreate("gale-body", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		budget.Release(1)
		return nil
	}
	if !fillSealed(fd, body) {
		_ = unix.Close(fd)
		budget.Release(1)
		return nil
	}
	b := &Blob{fd: fd, size: int64(len(body))}
	runtime.AddCleanup(b, closeBlob, blobFD{fd, budget})
	return b
}

// fillSealed writes body to the memfd fd and seals it.
func fillSealed(fd int, body []byte) bool {
	for p := body; len(p) > 0; {
		n, err := unix.Write(fd, p)
		if err != nil && err != unix.EINTR {
			return false
		}
		p = p[max(n, 0):]
	}
	_, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, blobSeals)
	return err == nil
}

// blobFD is what a Blob's cleanup closes and gives back.
type blobFD struct {
	fd     int
	budget *fds.Budget
}

func closeBlob(b blobFD) {
	_ = unix.Close(b.fd)
	b.budget.Release(1)
}

// Size is the Blob's length in bytes.
func (b *Blob) Size() int64 { return b.size }

// SendTo sends up to n bytes of the Blob from *off to the socket sock with
// sendfile(2), advancing *off by what was sent. sock is non-blocking or
// not, as the caller made it: unix.EAGAIN says the socket's buffer is
// full. It does not allocate.
func (b *Blob) SendTo(sock int, off *int64, n int) (int, error) {
	m, err := unix.Sendfile(sock, b.fd, off, n)
	runtime.KeepAlive(b) // the descriptor stays open until sendfile returned
	return m, err
}
