package cache

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"time"
)

// ErrChanged says a file changed while its bytes were being read: the
// bytes read may mix two versions and must not be sent as the version the
// response named. A response cut short by it is closed before its end, so
// the client sees it incomplete.
var ErrChanged = errors.New("cache: the file changed while it was read")

// ErrUnsettled says a file kept changing through every read of a load: no
// version of it could be read whole. It is not cached; the request can be
// answered 503 and retried.
var ErrUnsettled = errors.New("cache: the file kept changing while it was read")

// Version identifies one version of a file, as revalidation does (size,
// nanosecond mtime and, on Linux, device, inode and change time). A
// response streamed from an open file carries the Version its validators
// were made from, and every read checks that the file still is it.
type Version struct{ id fileID }

// VersionOf returns the version fi (an fstat of an open file) describes.
func VersionOf(fi fs.FileInfo) Version { return Version{fileIDOf(fi)} }

// Version returns the file version e describes (files); the zero Version
// otherwise.
func (e *Entry) Version() Version { return Version{e.id} }

// Known reports whether v names a version (the zero Version names none).
func (v Version) Known() bool { return v.id != fileID{} }

// ReadAt reads len(p) bytes of f from off, like f.ReadAt, then checks with
// fstat that f still is version v: when it is not, the bytes may mix
// versions and it returns ErrChanged. A write changes the change time
// before it changes any byte, so bytes read before an fstat that still
// shows v are bytes of v. A file shorter than off+len(p) (truncated in
// place) reports io.ErrUnexpectedEOF or ErrChanged. It does not allocate.
func (v Version) ReadAt(f *os.File, p []byte, off int64) (int, error) {
	n, err := f.ReadAt(p, off)
	if err == io.EOF && n < len(p) {
		err = io.ErrUnexpectedEOF
	}
	if cerr := v.Check(f); cerr != nil {
		return n, cerr
	}
	return n, err
}

// Check reports ErrChanged when f no longer is version v (or cannot be
// stat'ed): another size, mtime, inode or device. The change time is not
// compared: renaming a new version over the path, or deleting it, changes
// the open old inode's change time (its link count) but not its bytes.
// It does not allocate on Linux.
func (v Version) Check(f *os.File) error {
	id, err := statID(f)
	if err != nil || !sameBytes(id, v.id) {
		return ErrChanged
	}
	return nil
}

// sameBytes reports whether two fstats of one open file show the same
// bytes: everything but the change time agrees.
func sameBytes(a, b fileID) bool {
	a.ctime, b.ctime = 0, 0
	return a == b
}

// Racy reports whether v was modified so recently, as of now (ns since
// the Unix epoch), that a write now might leave its mtime as it is: a
// kernel stamps a write with its coarse clock, which advances once per
// tick, and a write within the tick of the last one keeps the mtime. A
// read of a racy version cannot be checked (git's index has the same
// rule); wait until the window passed, then fstat again.
func (v Version) Racy(now int64) bool { return racyWait(v.id.mtime, now) > 0 }

// SettleWait is how long from now until v is no longer racy; 0 when it
// is not.
func (v Version) SettleWait(now int64) time.Duration { return racyWait(v.id.mtime, now) }

// racyWindow bounds the timestamp granularity assumed for files whose
// mtime has nanoseconds: a few kernel ticks (4 ms at HZ=250, 10 ms at
// HZ=100). An mtime of whole seconds is taken as second granularity.
const racyWindow = 25 * time.Millisecond

// racyWait is how long from now until an mtime is outside the racy
// window; 0 when it is already (an mtime far in the future is not racy:
// a write now would change it).
func racyWait(mtime, now int64) time.Duration {
	window := int64(racyWindow)
	if mtime%int64(time.Second) == 0 {
		window = int64(2 * time.Second)
	}
	if d := mtime + window - now; d > 0 && now-mtime > -window {
		return time.Duration(d)
	}
	return 0
}
