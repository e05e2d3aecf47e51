package cache

import (
	"bytes"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Compression settings: files are compressed once per version and served
// many times, so they favour size, but not at any memory cost. Measured
// per worker on the first 1 MiB of a JavaScript search index: brotli
// quality 7 with a 1 MiB window gives output within 1% of quality 9 with
// a third of its memory (15 MiB against 41-48 MiB); zstd's "better" level
// with a 1 MiB window is within 7% of "best" with 7 MiB instead of
// 36-52 MiB. Files up to the default MaxFileBytes (1 MiB) lose nothing to
// the smaller windows.
const (
	gzipLevel   = gzip.BestCompression
	brotliLevel = 7
	brotliLGWin = 20 // 1 MiB window
	zstdLevel   = zstd.SpeedBetterCompression
	zstdWindow  = 1 << 20
)

// keepRatio: a coded representation is kept only when it is at most
// keepRatio/10 of the identity size; otherwise the saving does not pay for
// the memory and the negotiation.
const keepRatio = 9

// worker holds one worker goroutine's reusable compressors.
type worker struct {
	buf bytes.Buffer
	gz  *gzip.Writer
	br  *brotli.Writer
	zs  *zstd.Encoder
	zb  []byte // zstd output scratch
}

// work runs jobs until Close: loads first (a connection waits for them),
// then compression.
func (c *Cache) work() {
	defer c.wg.Done()
	w := &worker{}
	for {
		select {
		case j := <-c.loadq:
			c.runLoad(j)
			c.pending.Add(-1)
			continue
		default:
		}
		select {
		case <-c.quit:
			return
		case j := <-c.loadq:
			c.runLoad(j)
			c.pending.Add(-1)
		case e := <-c.varq:
			c.runVariants(w, e)
			if len(c.varq) == 0 {
				w.release() // idle: give the compressors' tables back
			}
			c.pending.Add(-1)
		}
	}
}

// requestVariants queues e for a worker to produce its coded
// representations, once. When the queue is full it leaves e idle and a
// later hit tries again.
func (c *Cache) requestVariants(e *Entry) {
	if !e.varWork.CompareAndSwap(varIdle, varQueued) {
		return
	}
	c.pending.Add(1)
	select {
	case c.varq <- e:
	default:
		c.pending.Add(-1)
		e.varWork.Store(varIdle)
	}
}

// probeSidecars looks for e's precompressed sidecars on the calling
// goroutine, right after the entry was installed and before its load is
// reported, so that even the first response can be precompressed (as
// nginx's gzip_static serves the .gz at once). Sidecars larger than
// maxRead bytes are left to a worker. It publishes the ones it read,
// records in e which codings are settled, and reports whether a worker
// still has something to do: sidecars left, or bodies to compress.
func (c *Cache) probeSidecars(e *Entry, maxRead int64) (more bool) {
	var b variantBatch
	var tried EncodingSet
	for _, enc := range e.prof.Encodings {
		if enc == Identity || enc >= numEncodings || tried.Has(enc) {
			continue
		}
		tried = tried.With(enc)
		r, found, deferred := c.sidecar(e, enc, maxRead)
		if deferred {
			more = true
			continue
		}
		e.sideSettled = e.sideSettled.With(enc)
		if found {
			e.sideFound = e.sideFound.With(enc)
		}
		b.add(c, e, enc, r)
	}
	b.publish(c, e)
	return more || (e.compressible() && tried&^e.sideFound != 0)
}

// variantBatch gathers the coded representations of e that one pass over
// its encodings produced, to publish them together.
type variantBatch struct {
	vs    variants
	extra int64 // the bytes they add to the budget
}

// add takes r, e's representation in enc (nil: none), into b.
func (b *variantBatch) add(c *Cache, e *Entry, enc Encoding, r *Rep) {
	if r == nil {
		return
	}
	b.vs.reps[enc] = r
	b.vs.avail = b.vs.avail.With(enc)
	b.extra += buildRep(e, r) + c.addBlob(r)
}

// publish attaches what b gathered, if anything, to e (Cache.publish).
func (b *variantBatch) publish(c *Cache, e *Entry) {
	if b.vs.avail != 0 {
		c.publish(e, &b.vs, b.extra)
	}
}

// compressible reports whether e's body may be compressed on the fly.
func (e *Entry) compressible() bool {
	return e.Kind == KindFile && e.Size > 0 && e.Size >= e.prof.MinCompress && Compressible(e.ContentType)
}

// runVariants produces e's coded representations that probeSidecars left:
// for each encoding of the profile not settled yet, a precompressed
// sidecar (path + ".br", ".zst", ".gz") when it is a regular file, no
// older than e, at most MaxFileBytes, and small enough; then, for a
// compressible body of at least MinCompress bytes held in memory and
// each encoding without a sidecar, the body compressed here. They are
// published together with the sidecars found earlier, once, if e is
// still current.
func (c *Cache) runVariants(w *worker, e *Entry) {
	defer e.varWork.Store(varDone)
	if e.node == nil || e.node.cur.Load() != e {
		return // superseded or evicted while queued
	}
	compress := e.compressible()
	have := e.Encodings()
	var b variantBatch
	var tried EncodingSet
	for _, enc := range e.prof.Encodings {
		if enc == Identity || enc >= numEncodings || tried.Has(enc) || have.Has(enc) {
			continue
		}
		tried = tried.With(enc)
		var r *Rep
		found := e.sideFound.Has(enc)
		if !e.sideSettled.Has(enc) {
			r, found, _ = c.sidecar(e, enc, c.maxFile)
		}
		if r == nil && !found && compress {
			r = c.compress(w, e, enc)
		}
		b.add(c, e, enc, r)
	}
	b.publish(c, e)
}

// smallEnough reports whether a coded body of n bytes is worth keeping
// next to an identity body of size bytes.
func smallEnough(n, size int64) bool { return n*10 <= size*keepRatio }

// sidecar reads e's precompressed file for enc. found reports that a
// usable sidecar exists even when it is not kept (too large a ratio), so
// the body is not compressed again for nothing. deferred reports a
// sidecar worth keeping but larger than maxRead: not read now.
func (c *Cache) sidecar(e *Entry, enc Encoding, maxRead int64) (r *Rep, found, deferred bool) {
	f, fi, err := openFile(e.prof, e.Path+enc.Suffix())
	if err != nil {
		return nil, false, false
	}
	defer f.Close()
	if !fi.Mode().IsRegular() || fi.ModTime().UnixNano() < e.ModTime {
		return nil, false, false // absent in effect, or stale: compress instead
	}
	size := fi.Size()
	if size > c.maxFile || !smallEnough(size, e.Size) {
		return nil, true, false
	}
	if size > maxRead {
		return nil, true, true
	}
	body := make([]byte, size)
	if n, err := f.ReadAt(body, 0); int64(n) != size && err != nil {
		return nil, false, false
	}
	c.sidecars.Add(1)
	return &Rep{Encoding: enc, Size: size, Body: body, ETag: codedETag(e.ETag, enc)}, true, false
}

// compress codes e's body in enc; nil when the result is not small enough.
func (c *Cache) compress(w *worker, e *Entry, enc Encoding) *Rep {
	c.compressions[enc].Add(1)
	out := w.compress(enc, e.Body)
	if out == nil || !smallEnough(int64(len(out)), e.Size) {
		return nil
	}
	return &Rep{Encoding: enc, Size: int64(len(out)), Body: out, ETag: codedETag(e.ETag, enc)}
}

// release drops the compressors and buffers (about 18 MiB after a 1 MiB
// body in all three codings), to be made again by the next job.
func (w *worker) release() {
	if w.zs != nil {
		_ = w.zs.Close()
	}
	*w = worker{}
}

// compress returns src coded in enc, in a new slice of exactly its length.
func (w *worker) compress(enc Encoding, src []byte) []byte {
	switch enc {
	case Gzip:
		if w.gz == nil {
			w.gz, _ = gzip.NewWriterLevel(nil, gzipLevel)
		}
		return w.stream(w.gz, src)
	case Brotli:
		if w.br == nil {
			w.br = brotli.NewWriterOptions(nil, brotli.WriterOptions{Quality: brotliLevel, LGWin: brotliLGWin})
		}
		return w.stream(w.br, src)
	case Zstd:
		if w.zs == nil {
			zs, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstdLevel),
				zstd.WithWindowSize(zstdWindow), zstd.WithEncoderConcurrency(1))
			if err != nil {
				return nil
			}
			w.zs = zs
		}
		w.zb = w.zs.EncodeAll(src, w.zb[:0])
		return bytes.Clone(w.zb)
	}
	return nil
}

// streamCoder is a compressor that codes what is written to it into the
// writer it was last reset to.
type streamCoder interface {
	io.WriteCloser
	Reset(io.Writer)
}

// stream returns src coded by zw (through w.buf), in a new slice of
// exactly its length; nil when coding fails.
func (w *worker) stream(zw streamCoder, src []byte) []byte {
	w.buf.Reset()
	zw.Reset(&w.buf)
	if _, err := zw.Write(src); err != nil {
		return nil
	}
	if err := zw.Close(); err != nil {
		return nil
	}
	return bytes.Clone(w.buf.Bytes())
}

// publish attaches vs (with the representations published earlier) to e
// if e is still current, charging extra bytes (vs's own) to the budget;
// when the budget cannot hold them, they are dropped again.
func (c *Cache) publish(e *Entry, vs *variants, extra int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := e.node
	if n == nil || n.cur.Load() != e {
		return
	}
	old := e.vars.Load()
	if old != nil {
		for enc := Encoding(1); enc < numEncodings; enc++ {
			if old.avail.Has(enc) && !vs.avail.Has(enc) {
				vs.reps[enc] = old.reps[enc]
				vs.avail = vs.avail.With(enc)
			}
		}
	}
	e.charge.Add(extra)
	c.used.Add(extra)
	e.vars.Store(vs)
	if !c.evictNolock(n) {
		e.vars.Store(old)
		e.charge.Add(-extra)
		c.used.Add(-extra)
	}
}
