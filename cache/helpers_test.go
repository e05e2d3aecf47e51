package cache

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"gale/internal/poll"
)

// fakeClock is a monotonic clock tests advance by hand.
type fakeClock struct{ ns atomic.Int64 }

func (f *fakeClock) Now() int64              { return f.ns.Load() }
func (f *fakeClock) Advance(d time.Duration) { f.ns.Add(int64(d)) }

// newTestCache returns a cache on a fake clock (starting at 1s), closed at
// the end of the test.
func newTestCache(t testing.TB, o Options) (*Cache, *fakeClock) {
	t.Helper()
	clk := &fakeClock{}
	clk.ns.Store(int64(time.Second))
	if o.Now == nil {
		o.Now = clk.Now
	}
	if o.Workers == 0 {
		o.Workers = 2
	}
	c := New(o)
	t.Cleanup(c.Close)
	return c, clk
}

// writeFile writes data to dir/name with the given mtime (zero: now) and
// returns the path.
func writeFile(t testing.TB, dir, name string, data []byte, mtime time.Time) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// load loads path (SyncMax above any test file): on the calling
// goroutine, or, for a file written within its racy window
// (Version.Racy), by a worker, whose result it waits for.
func load(t testing.TB, v *View, path, ct string, prof *Profile) *Entry {
	t.Helper()
	type result struct {
		e   *Entry
		err error
	}
	done := make(chan result, 1)
	e, err := v.Load(&Request{Key: []byte(path), ContentType: ct, Profile: prof, SyncMax: 1 << 30,
		Done: func(e *Entry, err error) { done <- result{e, err} }})
	if err == ErrPending {
		select {
		case r := <-done:
			e, err = r.e, r.err
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s): no result within 10 s", path)
		}
	}
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return e
}

// waitIdle waits (bounded) until no job is queued or running. The
// workers announce nothing when they go idle, so it polls their jobs
// counter (poll.Must).
func waitIdle(t testing.TB, c *Cache) {
	t.Helper()
	poll.Must(t, 10*time.Second, "the cache's workers to be idle", func() bool { return c.Stats().Pending == 0 })
}

// textBody returns n bytes of compressible text.
func textBody(n int) []byte {
	const line = "body { margin: 0; padding: 0; color: #333; font-family: sans-serif; }\n"
	b := make([]byte, 0, n+len(line))
	for len(b) < n {
		b = append(b, line...)
	}
	return b[:n]
}

var allEncodings = &Profile{Encodings: []Encoding{Zstd, Brotli, Gzip}, MinCompress: 1024}

// decode undoes enc.
func decode(t testing.TB, enc Encoding, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch enc {
	case Gzip:
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case Zstd:
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		r = zr
	case Brotli:
		r = brotli.NewReader(bytes.NewReader(b))
	default:
		return b
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decoding %v: %v", enc, err)
	}
	return out
}
