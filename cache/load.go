package cache

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"gale/codec"
)

// entryOverhead approximates what an entry costs besides its slices' bytes
// (the Entry, its slot, the map entries in the store and in views).
const entryOverhead = 512

// Done receives the result of a load that returned ErrPending. It runs on
// a worker goroutine (or on the goroutine whose load the caller joined): it
// must be quick and must only do what is safe from any goroutine, such as
// storing the result where its connection will find it and calling
// gnet's Conn.Wake. e is nil when err is not nil; otherwise e may be of
// any Kind, and may be detached (not kept in the cache): use it for the
// request that waited rather than looking the key up again.
type Done func(e *Entry, err error)

// Request asks Load for one path.
type Request struct {
	Key         []byte   // the lookup key (copied); usually the file's path
	Path        []byte   // the file's path (copied); nil = Key
	ContentType string   // media type to render in Content-Type ("" = none); kept as is
	Profile     *Profile // encodings and rendering; nil = identity only, Fields rendered as lines

	// SyncMax is the largest file read on the calling goroutine; larger
	// files (up to MaxFileBytes) are read by a worker and the load
	// returns ErrPending. Opening and fstat happen on the caller either
	// way, unless SyncMax < 0: then the caller does no system call at all.
	SyncMax int64

	// Done is called, from another goroutine, with the result when Load
	// returns ErrPending. With a nil Done the caller learns nothing: it
	// must retry later.
	Done Done
}

// loadJob is one load: the caller's request, copied, and what the caller
// already opened.
type loadJob struct {
	key, path string
	ct        string
	prof      *Profile
	f         *os.File    // opened by the caller; nil: the worker opens
	fi        fs.FileInfo // f's fstat
	held      bool        // f is counted in the cache's descriptor budget
}

// queueFile lets a queued job keep the file its caller opened, when the
// descriptor budget has room for it while the job waits; otherwise the
// file is closed and the worker opens it again.
func (c *Cache) queueFile(j *loadJob, f *os.File, fi fs.FileInfo) {
	if !c.budget.Acquire(1) {
		_ = f.Close()
		return
	}
	j.f, j.fi, j.held = f, fi, true
}

// dropFile closes the file of a job that will not run.
func (c *Cache) dropFile(j *loadJob) {
	if j.f != nil {
		_ = j.f.Close()
		j.f = nil
	}
	c.fileDone(j)
}

// fileDone gives back the descriptor of a job's file once it is closed.
func (c *Cache) fileDone(j *loadJob) {
	if j.held {
		j.held = false
		c.budget.Release(1)
	}
}

// Load reads what r's path holds now and makes it key's current entry,
// replacing an older version. It never blocks on another load: when a
// load of the same key is in flight (on any goroutine), it joins it and
// returns ErrPending. It returns:
//
//   - an entry of any Kind (KindFile with its body, KindLarge, KindDir, or
//     a negative KindNotFound/KindDenied, kept for NegativeTTL), and nil;
//   - nil and ErrPending: the file is read by a worker, or another load of
//     the key is in flight; r.Done will be called with the result;
//   - nil and ErrBusy: the worker queue is full; serve without the cache;
//   - nil and another error (an I/O error, not cached).
//
// If key already has an entry whose revalidation is not due, Load returns
// it without any system call. The file is opened with the profile's Open
// (which applies the route's root and link policy) or, without one, as
// is; deciding which paths may be asked for (dot-dot, hidden files) is
// the caller's. Load is safe for concurrent use; use View.Load from an
// event loop so the view learns the slot.
func (c *Cache) Load(r *Request) (*Entry, error) {
	e, _, err := c.load(r)
	return e, err
}

func (c *Cache) load(r *Request) (*Entry, *node, error) {
	key := string(r.Key)
	path := key
	if r.Path != nil {
		path = string(r.Path)
	}
	now := c.now()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, nil, ErrClosed
	}
	if n := c.nodes[key]; n != nil {
		if e := n.cur.Load(); e != nil && now < e.checkAt.Load() {
			c.mu.Unlock()
			return e, n, nil
		}
	}
	if fl := c.flights[key]; fl != nil {
		if r.Done != nil {
			fl.waiters = append(fl.waiters, r.Done)
		}
		c.mu.Unlock()
		return nil, nil, ErrPending
	}
	c.flights[key] = &flight{}
	c.mu.Unlock()

	j := &loadJob{key: key, path: path, ct: r.ContentType, prof: r.Profile}
	if r.SyncMax < 0 {
		return nil, nil, c.submit(j, r.Done)
	}
	f, fi, err := openFile(r.Profile, path)
	if err == nil && fi.Mode().IsRegular() && !c.large(fi.Size()) &&
		(fi.Size() > r.SyncMax || VersionOf(fi).Racy(time.Now().UnixNano())) {
		c.queueFile(j, f, fi)
		return nil, nil, c.submit(j, r.Done)
	}
	e, keep, err := c.build(j, f, fi, err, false)
	if err == errSettleOnWorker {
		return nil, nil, c.submit(j, r.Done) // the worker opens it again
	}
	n := c.keep(key, e, keep, r.SyncMax)
	c.finish(key, e, err, -1)
	return e, n, err
}

// keep installs a freshly built entry (or, when it must not be kept,
// detaches it and drops the key's older version), reads its sidecars up
// to maxRead bytes, and queues the rest of its variants.
func (c *Cache) keep(key string, e *Entry, keep bool, maxRead int64) *node {
	if e == nil {
		return nil
	}
	if !keep {
		c.mu.Lock()
		if n := c.nodes[key]; n != nil {
			c.removeNolock(n)
		}
		c.mu.Unlock()
		c.detach(e)
		return nil
	}
	n := c.install(key, e)
	if n != nil && e.varWork.CompareAndSwap(varIdle, varProbing) {
		if c.probeSidecars(e, maxRead) {
			e.varWork.Store(varIdle)
			c.requestVariants(e)
		} else {
			e.varWork.Store(varDone)
		}
	}
	return n
}

// submit queues a load for a worker, registering done to hear about it.
// It returns ErrPending, or ErrBusy/ErrClosed (then done is not called).
func (c *Cache) submit(j *loadJob, done Done) error {
	c.mu.Lock()
	fl := c.flights[j.key]
	mine := -1
	if done != nil {
		mine = len(fl.waiters)
		fl.waiters = append(fl.waiters, done)
	}
	err := ErrPending
	if c.closed {
		err = ErrClosed
	} else {
		c.pending.Add(1)
		select {
		case c.loadq <- j:
		default:
			c.pending.Add(-1)
			err = ErrBusy
		}
	}
	c.mu.Unlock()
	if err != ErrPending {
		c.dropFile(j)
		c.finish(j.key, nil, err, mine)
	}
	return err
}

// finish ends key's flight and tells its waiters (but the one at index
// skip) the result.
func (c *Cache) finish(key string, e *Entry, err error, skip int) {
	c.mu.Lock()
	fl := c.flights[key]
	delete(c.flights, key)
	c.mu.Unlock()
	if fl == nil {
		return
	}
	for i, w := range fl.waiters {
		if i != skip {
			w(e, err)
		}
	}
}

// runLoad is a load job on a worker.
func (c *Cache) runLoad(j *loadJob) {
	if c.loadHook != nil {
		c.loadHook()
	}
	f, fi := j.f, j.fi
	var err error
	if f == nil {
		f, fi, err = openFile(j.prof, j.path)
	}
	e, keep, err := c.build(j, f, fi, err, true) // closes f
	c.fileDone(j)
	c.keep(j.key, e, keep, c.maxFile)
	c.finish(j.key, e, err, -1)
}

// openFile opens path for reading through prof's opener, or directly
// without blocking on special files (a FIFO would block open without
// O_NONBLOCK; regular files ignore it), and fstats it.
func openFile(prof *Profile, path string) (*os.File, fs.FileInfo, error) {
	var f *os.File
	var err error
	if prof != nil && prof.Open != nil {
		f, err = prof.Open(path)
		if f == nil && err == nil {
			err = fs.ErrNotExist
		}
	} else {
		f, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	}
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// large reports whether a file of size bytes stays on disk.
func (c *Cache) large(size int64) bool {
	return size > c.maxFile || size > c.maxBytes-entryOverhead-4096
}

// build turns the result of opening j's path into an entry, reading the
// body of a small regular file. It closes f. keep is false when the entry
// must not be cached (negative results with NegativeTTL < 0, a file that
// kept changing while read). A file that changed while read is read
// again on a worker (mayWait), after its racy window (Version.Racy);
// on the caller's goroutine, build returns errSettleOnWorker instead.
func (c *Cache) build(j *loadJob, f *os.File, fi fs.FileInfo, openErr error, mayWait bool) (e *Entry, keep bool, err error) {
	now := c.now()
	if openErr != nil {
		kind := negativeKind(openErr)
		if kind == 0 {
			return nil, false, fmt.Errorf("cache: opening %s: %w", j.path, openErr)
		}
		c.loads.Add(1)
		return c.newNegative(j.key, j.path, kind, now), c.negTTL > 0, nil
	}
	defer f.Close()
	c.loads.Add(1)
	switch {
	case fi.IsDir():
		return c.newStat(j, KindDir, fi, nil, now), true, nil
	case !fi.Mode().IsRegular():
		return c.newNegative(j.key, j.path, KindNotFound, now), c.negTTL > 0, nil
	}
	// Read, then fstat again: a file that changed while being read (a
	// write changes the change time before any byte) is read again, up to
	// loadAttempts times; one that never settles is not served, since its
	// bytes would be no version that an ETag could name.
	for attempt := 1; ; attempt++ {
		if c.large(fi.Size()) {
			return c.newStat(j, KindLarge, fi, nil, now), true, nil
		}
		if fi, err = settle(f, fi, mayWait); err != nil {
			return nil, false, err
		}
		size := fi.Size()
		if c.large(size) {
			return c.newStat(j, KindLarge, fi, nil, now), true, nil
		}
		body := make([]byte, size)
		n, rerr := f.ReadAt(body, 0)
		if rerr != nil && rerr != io.EOF {
			return nil, false, fmt.Errorf("cache: reading %s: %w", j.path, rerr)
		}
		fi2, serr := f.Stat()
		if serr != nil {
			return nil, false, fmt.Errorf("cache: reading %s: %w", j.path, serr)
		}
		if int64(n) == size && fileIDOf(fi2) == fileIDOf(fi) {
			return c.newStat(j, KindFile, fi, body, now), true, nil
		}
		if attempt == loadAttempts {
			return nil, false, fmt.Errorf("%w: %s", ErrUnsettled, j.path)
		}
		if !mayWait {
			return nil, false, errSettleOnWorker
		}
		fi = fi2
	}
}

// errSettleOnWorker says a load on the caller's goroutine met a file that
// changes: a worker reads it, since waiting for it to settle takes time.
var errSettleOnWorker = errors.New("cache: the file is being written; read it on a worker")

// settle returns fi once the file's version is outside its racy window
// (Version.Racy), so that a write during the read is seen by the fstat
// after it: it waits on a worker (mayWait) and fstats again.
func settle(f *os.File, fi fs.FileInfo, mayWait bool) (fs.FileInfo, error) {
	for range loadAttempts {
		d := racyWait(fi.ModTime().UnixNano(), time.Now().UnixNano())
		if d == 0 {
			return fi, nil
		}
		if !mayWait {
			return nil, errSettleOnWorker
		}
		time.Sleep(d)
		var err error
		if fi, err = f.Stat(); err != nil {
			return nil, err
		}
	}
	return nil, ErrUnsettled
}

// loadAttempts is how many times a load reads a file that changes while
// it is read before it gives up with ErrUnsettled.
const loadAttempts = 3

// newStat builds a file or directory entry from fi (and, for KindFile,
// its body).
func (c *Cache) newStat(j *loadJob, kind Kind, fi fs.FileInfo, body []byte, now int64) *Entry {
	id := fileIDOf(fi)
	e := &Entry{
		Kind:         kind,
		Path:         j.path,
		ModTime:      id.mtime,
		LastModified: codec.AppendHTTPDate(make([]byte, 0, 29), fi.ModTime()),
		id:           id,
	}
	charge := int64(entryOverhead + 2*len(j.key) + len(j.path) + len(e.LastModified))
	if kind != KindDir {
		e.ContentType = j.ct
		e.Size = fi.Size()
		if kind == KindFile {
			e.Size = int64(len(body))
		}
		e.prof = j.prof
		e.ETag = makeETag(id.mtime, e.Size)
		e.Body = body
		e.ident = Rep{Encoding: Identity, Size: e.Size, Body: body, ETag: e.ETag}
		charge += int64(len(e.ETag)) + buildRep(e, &e.ident) + c.addBlob(&e.ident)
		if e.prof != nil && len(e.prof.Encodings) > 0 {
			e.varWork.Store(varIdle)
		}
	}
	e.charge.Store(charge)
	e.checkAt.Store(now + c.revalEvery)
	return e
}

// newNegative builds a negative entry.
func (c *Cache) newNegative(key, path string, kind Kind, now int64) *Entry {
	e := &Entry{Kind: kind, Path: path}
	e.charge.Store(int64(entryOverhead + 2*len(key) + len(path)))
	e.checkAt.Store(now + c.negTTL)
	return e
}
