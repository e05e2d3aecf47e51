package cache

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gale/codec"
	"gale/config"
)

var mtime0 = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

func TestLookupMissThenHit(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	v := c.NewView()
	dir := t.TempDir()
	p := writeFile(t, dir, "a.txt", []byte("hello"), mtime0)

	if e, ok := v.Lookup([]byte(p)); ok || e != nil {
		t.Fatalf("Lookup before Load = %v, %v; want miss", e, ok)
	}
	e := load(t, v, p, "text/plain; charset=utf-8", nil)
	if e.Kind != KindFile || string(e.Body) != "hello" || e.Size != 5 {
		t.Fatalf("entry = %v %q %d", e.Kind, e.Body, e.Size)
	}
	if e.ModTime != mtime0.UnixNano() {
		t.Errorf("ModTime = %d, want %d", e.ModTime, mtime0.UnixNano())
	}
	if got := string(e.LastModified); got != "Sun, 01 Mar 2026 12:00:00 GMT" {
		t.Errorf("LastModified = %q", got)
	}
	wantTag := fmt.Sprintf(`"%x-5"`, mtime0.UnixNano())
	if string(e.ETag) != wantTag {
		t.Errorf("ETag = %s, want %s", e.ETag, wantTag)
	}
	for i := range 3 {
		got, ok := v.Lookup([]byte(p))
		if !ok || got != e {
			t.Fatalf("Lookup %d = %p, %v; want the loaded entry %p", i, got, ok, e)
		}
	}
	// A second view finds it through the store.
	v2 := c.NewView()
	if got, ok := v2.Lookup([]byte(p)); !ok || got != e {
		t.Fatalf("second view: %p, %v", got, ok)
	}
	if h, m := v.Stats(); h != 3 || m != 1 {
		t.Errorf("view stats = %d hits, %d misses; want 3, 1", h, m)
	}
	if s := c.Stats(); s.Entries != 1 || s.Loads != 1 || s.Bytes <= 5 {
		t.Errorf("stats = %+v", s)
	}
	// Load of a fresh entry does no I/O and returns it.
	if got := load(t, v, p, "text/plain", nil); got != e {
		t.Errorf("Load of a fresh key returned a new entry")
	}
}

func TestRepFieldsAndHead(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	v := c.NewView()
	p := writeFile(t, t.TempDir(), "a.txt", []byte("hello"), mtime0)
	tag := fmt.Sprintf(`"%x-5"`, mtime0.UnixNano())

	e := load(t, v, p, "text/plain", nil)
	r := e.Select([]byte("gzip"))
	if r != e.Identity() || r.Encoding != Identity || string(r.Body) != "hello" {
		t.Fatalf("Select = %+v", r)
	}
	want := "Content-Type: text/plain\r\nContent-Length: 5\r\nLast-Modified: Sun, 01 Mar 2026 12:00:00 GMT\r\n" +
		"ETag: " + tag + "\r\nAccept-Ranges: bytes\r\n"
	if string(r.Head) != want {
		t.Errorf("Head =\n%q\nwant\n%q", r.Head, want)
	}
	if got := string(codec.AppendFieldLines(nil, r.Fields)); got != want {
		t.Errorf("Fields render to %q", got)
	}
	if r.HPACK != nil {
		t.Errorf("HPACK = %x without a RenderHPACK", r.HPACK)
	}

	// A profile's Render builds the whole block; Vary appears once the
	// profile serves codings.
	prof := &Profile{Encodings: []Encoding{Gzip}, MinCompress: 1 << 20, Render: func(dst []byte, e *Entry, r *Rep) []byte {
		dst = append(dst, "HTTP/1.1 200 OK\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\n"...)
		dst = codec.AppendFieldLines(dst, r.Fields)
		return append(dst, "Cache-Control: max-age=60\r\n"...)
	}, RenderHPACK: func(dst []byte, e *Entry, r *Rep) []byte {
		dst = append(dst, 0x88) // :status 200
		for _, f := range r.Fields {
			dst = append(dst, f.Name[0]) // enough to see which fields it was given
		}
		return dst
	}}
	p2 := writeFile(t, t.TempDir(), "b.txt", []byte("hello"), mtime0)
	e2 := load(t, v, p2, "", prof)
	want2 := "HTTP/1.1 200 OK\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\nContent-Length: 5\r\n" +
		"Last-Modified: Sun, 01 Mar 2026 12:00:00 GMT\r\nETag: " + tag + "\r\nAccept-Ranges: bytes\r\n" +
		"Vary: Accept-Encoding\r\nCache-Control: max-age=60\r\n"
	if got := string(e2.Identity().Head); got != want2 {
		t.Errorf("rendered Head =\n%q\nwant\n%q", got, want2)
	}
	// RenderHPACK runs with Render, on the same Fields, into its own copy.
	if got := e2.Identity().HPACK; string(got) != "\x88CLEAV" || cap(got) != len(got) {
		t.Errorf("HPACK = %q (cap %d); want \"\\x88CLEAV\" of its own", got, cap(got))
	}
	if !e2.Negotiable() || e.Negotiable() {
		t.Errorf("Negotiable = %v, %v", e2.Negotiable(), e.Negotiable())
	}
}

func TestRevalidateUnchanged(t *testing.T) {
	c, clk := newTestCache(t, Options{Revalidate: time.Second})
	v := c.NewView()
	p := writeFile(t, t.TempDir(), "a.txt", []byte("hello"), mtime0)
	e := load(t, v, p, "text/plain", nil)

	clk.Advance(999 * time.Millisecond)
	if got, ok := v.Lookup([]byte(p)); !ok || got != e {
		t.Fatal("miss before revalidation is due")
	}
	if n := c.Stats().Revalidations; n != 0 {
		t.Fatalf("revalidated %d times before due", n)
	}
	clk.Advance(time.Millisecond)
	for range 5 {
		if got, ok := v.Lookup([]byte(p)); !ok || got != e {
			t.Fatal("unchanged file missed after revalidation")
		}
	}
	if s := c.Stats(); s.Revalidations != 1 || s.Changes != 0 {
		t.Fatalf("revalidations %d, changes %d; want 1, 0", s.Revalidations, s.Changes)
	}
}

func TestRevalidateMtimeChange(t *testing.T) {
	c, clk := newTestCache(t, Options{Revalidate: time.Second})
	v := c.NewView()
	other := c.NewView()
	p := writeFile(t, t.TempDir(), "a.txt", []byte("one"), mtime0)
	old := load(t, v, p, "text/plain", nil)
	if _, ok := other.Lookup([]byte(p)); !ok {
		t.Fatal("other view missed")
	}

	writeFile(t, filepath.Dir(p), "a.txt", []byte("two"), mtime0.Add(time.Second))
	clk.Advance(500 * time.Millisecond)
	if got, ok := v.Lookup([]byte(p)); !ok || got != old {
		t.Fatal("a change was seen before revalidation was due")
	}
	clk.Advance(500 * time.Millisecond)
	if _, ok := v.Lookup([]byte(p)); ok {
		t.Fatal("changed file still hit after revalidation")
	}
	// Every view misses now, without another stat.
	if _, ok := other.Lookup([]byte(p)); ok {
		t.Fatal("other view still hit a stale entry")
	}
	if s := c.Stats(); s.Revalidations != 1 || s.Changes != 1 {
		t.Fatalf("revalidations %d, changes %d", s.Revalidations, s.Changes)
	}
	e := load(t, v, p, "text/plain", nil)
	if e == old || string(e.Body) != "two" {
		t.Fatalf("reload = %q", e.Body)
	}
	if string(old.Body) != "one" || string(old.Identity().Body) != "one" {
		t.Fatal("old version's bytes changed")
	}
	if got, ok := other.Lookup([]byte(p)); !ok || got != e {
		t.Fatal("other view does not see the new version")
	}
	if bytes.Equal(old.ETag, e.ETag) {
		t.Error("new version has the old ETag")
	}
	if s := c.Stats(); s.Entries != 1 || s.Bytes != e.charge.Load() {
		t.Errorf("after replacement: %d entries, %d bytes; want 1, %d", s.Entries, s.Bytes, e.charge.Load())
	}
}

func TestRenameReplaceKeepsPinnedOldVersion(t *testing.T) {
	c, clk := newTestCache(t, Options{Revalidate: time.Second})
	v := c.NewView()
	dir := t.TempDir()
	p := writeFile(t, dir, "a.txt", []byte("aaaa"), mtime0)
	old := load(t, v, p, "text/plain", nil)
	old.Pin()
	oldCharge := old.charge.Load()

	// Same size and mtime, new inode: only the inode (and ctime) differ.
	tmp := writeFile(t, dir, ".a.txt.tmp", []byte("bbbb"), mtime0)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if _, ok := v.Lookup([]byte(p)); ok {
		t.Fatal("rename over the file was not seen")
	}
	e := load(t, v, p, "text/plain", nil)
	if string(e.Body) != "bbbb" || string(old.Body) != "aaaa" {
		t.Fatalf("new %q old %q", e.Body, old.Body)
	}
	s := c.Stats()
	if s.PinnedRetired != oldCharge || s.Bytes != oldCharge+e.charge.Load() {
		t.Fatalf("pinned old version: stats %+v, old charge %d", s, oldCharge)
	}
	old.Release()
	s = c.Stats()
	if s.PinnedRetired != 0 || s.Bytes != e.charge.Load() {
		t.Fatalf("after Release: %+v", s)
	}
	if string(old.Body) != "aaaa" {
		t.Fatal("released bytes changed")
	}
	// Pin and Release of a current entry leave the budget alone.
	e.Pin()
	e.Release()
	if got := c.Stats().Bytes; got != e.charge.Load() {
		t.Fatalf("Bytes %d after pin/release of a live entry", got)
	}
}

func TestDeletedFile(t *testing.T) {
	c, clk := newTestCache(t, Options{Revalidate: time.Second, NegativeTTL: 5 * time.Second})
	v := c.NewView()
	p := writeFile(t, t.TempDir(), "a.txt", []byte("x"), mtime0)
	old := load(t, v, p, "text/plain", nil)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	e, ok := v.Lookup([]byte(p))
	if !ok || e.Kind != KindNotFound {
		t.Fatalf("deleted file: %v, %v", e, ok)
	}
	if e2, ok := v.Lookup([]byte(p)); !ok || e2 != e {
		t.Fatal("negative entry not kept")
	}
	if string(old.Body) != "x" {
		t.Fatal("old bytes changed")
	}
	if s := c.Stats(); s.Bytes != e.charge.Load() || s.Entries != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestNegativeExpiry(t *testing.T) {
	c, clk := newTestCache(t, Options{NegativeTTL: 2 * time.Second})
	v := c.NewView()
	dir := t.TempDir()
	p := filepath.Join(dir, "later.txt")
	e := load(t, v, p, "text/plain", nil)
	if e.Kind != KindNotFound {
		t.Fatalf("Kind = %v", e.Kind)
	}
	writeFile(t, dir, "later.txt", []byte("now"), time.Time{})
	clk.Advance(1999 * time.Millisecond)
	if got, ok := v.Lookup([]byte(p)); !ok || got.Kind != KindNotFound {
		t.Fatal("negative entry expired early")
	}
	clk.Advance(time.Millisecond)
	if _, ok := v.Lookup([]byte(p)); ok {
		t.Fatal("negative entry outlived its TTL")
	}
	if got := load(t, v, p, "text/plain", nil); got.Kind != KindFile || string(got.Body) != "now" {
		t.Fatalf("after expiry: %v %q", got.Kind, got.Body)
	}
	// A path below a regular file is not found either (ENOTDIR).
	if got := load(t, v, p+"/x", "", nil); got.Kind != KindNotFound {
		t.Fatalf("ENOTDIR: %v", got.Kind)
	}
	// NegativeTTL < 0: negative results are returned, not kept.
	c2, _ := newTestCache(t, Options{NegativeTTL: -1})
	v2 := c2.NewView()
	if got := load(t, v2, filepath.Join(dir, "nope"), "", nil); got.Kind != KindNotFound {
		t.Fatalf("Kind = %v", got.Kind)
	}
	if _, ok := v2.Lookup([]byte(filepath.Join(dir, "nope"))); ok {
		t.Fatal("negative result kept with NegativeTTL < 0")
	}
	// ... and a deleted file's slot goes away.
	c3, clk3 := newTestCache(t, Options{NegativeTTL: -1, Revalidate: time.Second})
	v3 := c3.NewView()
	gone := writeFile(t, dir, "gone", []byte("x"), mtime0)
	load(t, v3, gone, "", nil)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	clk3.Advance(time.Second)
	if e, ok := v3.Lookup([]byte(gone)); !ok || e.Kind != KindNotFound {
		t.Fatalf("deleted: %v %v", e, ok)
	}
	if _, ok := v3.Lookup([]byte(gone)); ok {
		t.Fatal("deleted file still hit")
	}
	if e := load(t, v3, gone, "", nil); e.Kind != KindNotFound {
		t.Fatalf("reload: %v", e.Kind)
	}
	if s := c3.Stats(); s.Entries != 0 || s.Bytes != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestKinds(t *testing.T) {
	c, _ := newTestCache(t, Options{MaxFileBytes: 1024})
	v := c.NewView()
	dir := t.TempDir()

	if e := load(t, v, dir, "", nil); e.Kind != KindDir || e.Identity() != nil || e.Select(nil) != nil {
		t.Fatalf("dir: %v", e.Kind)
	}
	big := writeFile(t, dir, "big.bin", bytes.Repeat([]byte{'x'}, 4096), mtime0)
	e := load(t, v, big, "application/octet-stream", nil)
	if e.Kind != KindLarge || e.Body != nil || e.Size != 4096 {
		t.Fatalf("large: %v body %d size %d", e.Kind, len(e.Body), e.Size)
	}
	r := e.Select([]byte("gzip"))
	if r.Body != nil || !bytes.Contains(r.Head, []byte("Content-Length: 4096\r\n")) {
		t.Fatalf("large rep: %+v", r)
	}
	fi, err := os.Stat(big)
	if err != nil {
		t.Fatal(err)
	}
	if !e.SameFile(fi) {
		t.Error("SameFile false for the same file")
	}
	empty := writeFile(t, dir, "empty", nil, mtime0)
	if e := load(t, v, empty, "", nil); e.Kind != KindFile || e.Body == nil || len(e.Body) != 0 {
		t.Fatalf("empty: %v %v", e.Kind, e.Body)
	}
	if e, ok := v.Lookup([]byte(empty)); !ok || e.Kind != KindFile {
		t.Fatal("empty file not cached")
	}
}

func TestFIFODoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	c, _ := newTestCache(t, Options{})
	v := c.NewView()
	done := make(chan *Entry, 1)
	go func() { done <- load(t, v, p, "", nil) }()
	select {
	case e := <-done:
		if e.Kind != KindNotFound {
			t.Fatalf("fifo: %v", e.Kind)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Load blocked on a FIFO")
	}
}

func TestDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	c, _ := newTestCache(t, Options{})
	v := c.NewView()
	p := writeFile(t, t.TempDir(), "secret", []byte("x"), mtime0)
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	if e := load(t, v, p, "", nil); e.Kind != KindDenied {
		t.Fatalf("Kind = %v", e.Kind)
	}
}

func TestBudgetEvicts(t *testing.T) {
	const budget = 64 << 10
	c, _ := newTestCache(t, Options{MaxBytes: budget})
	v := c.NewView()
	dir := t.TempDir()
	var paths []string
	for i := range 100 {
		paths = append(paths, writeFile(t, dir, fmt.Sprintf("f%03d", i), bytes.Repeat([]byte{byte(i)}, 2048), mtime0))
	}
	hot := paths[0]
	load(t, v, hot, "", nil)
	for i, p := range paths[1:] {
		// The hot file is requested between loads: SIEVE keeps it.
		if _, ok := v.Lookup([]byte(hot)); !ok {
			t.Fatalf("hot file evicted after %d loads", i)
		}
		if _, ok := v.Lookup([]byte(p)); !ok {
			load(t, v, p, "", nil)
		}
		if s := c.Stats(); s.Bytes > budget {
			t.Fatalf("over budget after %d loads: %d > %d", i, s.Bytes, budget)
		}
	}
	s := c.Stats()
	if s.Evictions == 0 || s.Entries >= 100 || s.Entries < 10 {
		t.Fatalf("stats %+v", s)
	}
	// Evicted entries miss; the accounting matches what is live.
	var live int64
	hits := 0
	for _, p := range paths {
		if e, ok := v.Lookup([]byte(p)); ok {
			live += e.charge.Load()
			hits++
		}
	}
	if hits != s.Entries || live != s.Bytes {
		t.Fatalf("%d hits holding %d bytes; stats say %d entries, %d bytes", hits, live, s.Entries, s.Bytes)
	}
}

func TestPinnedRetiredHoldBudget(t *testing.T) {
	// Bodies under BlobMin: the charges are the same with or without
	// sendfile copies.
	const budget = 20 << 10
	c, clk := newTestCache(t, Options{MaxBytes: budget, Revalidate: time.Second})
	v := c.NewView()
	dir := t.TempDir()
	p := writeFile(t, dir, "big", bytes.Repeat([]byte{'a'}, 12<<10), mtime0)
	old := load(t, v, p, "", nil)
	old.Pin()
	q := writeFile(t, dir, "small", []byte("small"), mtime0)
	load(t, v, q, "", nil)

	writeFile(t, dir, "big", bytes.Repeat([]byte{'b'}, 12<<10), mtime0.Add(time.Second))
	clk.Advance(time.Second)
	if _, ok := v.Lookup([]byte(p)); ok {
		t.Fatal("change not seen")
	}
	// The new version cannot fit next to the pinned old one: it is served
	// once, uncached, and everything else was evicted trying.
	e := load(t, v, p, "", nil)
	if e.Kind != KindFile || e.Body[0] != 'b' {
		t.Fatalf("reload: %v", e.Kind)
	}
	s := c.Stats()
	if s.Uncached != 1 || s.Bytes > budget || s.PinnedRetired != old.charge.Load() {
		t.Fatalf("stats %+v", s)
	}
	if _, ok := v.Lookup([]byte(p)); ok {
		t.Fatal("uncacheable version was kept")
	}
	old.Release()
	if s := c.Stats(); s.Bytes != 0 || s.PinnedRetired != 0 {
		t.Fatalf("after release: %+v", s)
	}
	// Now it fits.
	if e := load(t, v, p, "", nil); e.Body[0] != 'b' {
		t.Fatal("reload after release")
	}
	if _, ok := v.Lookup([]byte(p)); !ok {
		t.Fatal("not cached once the budget allows")
	}
}

func TestLargerThanBudgetStaysOnDisk(t *testing.T) {
	c, _ := newTestCache(t, Options{MaxBytes: 16 << 10, MaxFileBytes: 1 << 20})
	v := c.NewView()
	p := writeFile(t, t.TempDir(), "f", bytes.Repeat([]byte{'a'}, 64<<10), mtime0)
	e := load(t, v, p, "", nil)
	if e.Kind != KindLarge || e.Body != nil {
		t.Fatalf("Kind %v, body %d", e.Kind, len(e.Body))
	}
	if s := c.Stats(); s.Bytes > 16<<10 {
		t.Fatalf("stats %+v", s)
	}
	// A cache with no budget caches nothing but still answers.
	c0, _ := newTestCache(t, Options{MaxBytes: -1})
	v0 := c0.NewView()
	if e := load(t, v0, p, "", nil); e.Kind != KindLarge {
		t.Fatalf("no-budget cache: %v", e.Kind)
	}
	if _, ok := v0.Lookup([]byte(p)); ok {
		t.Fatal("no-budget cache kept an entry")
	}
}

func TestAsyncLoadAndJoin(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	c, _ := newTestCache(t, Options{loadHook: func() { started <- struct{}{}; <-release }})
	v := c.NewView()
	p := writeFile(t, t.TempDir(), "a.js", textBody(8000), mtime0)

	type result struct {
		e   *Entry
		err error
	}
	results := make(chan result, 3)
	done := func(e *Entry, err error) { results <- result{e, err} }
	req := &Request{Key: []byte(p), ContentType: "text/javascript", SyncMax: 100, Done: done}
	if e, err := v.Load(req); err != ErrPending || e != nil {
		t.Fatalf("Load = %v, %v; want ErrPending", e, err)
	}
	<-started
	// Joining loads, sync or not, wait for the one in flight.
	if _, err := v.Load(&Request{Key: []byte(p), SyncMax: 1 << 30, Done: done}); err != ErrPending {
		t.Fatalf("joining Load = %v", err)
	}
	if _, err := c.NewView().Load(&Request{Key: []byte(p), SyncMax: -1, Done: done}); err != ErrPending {
		t.Fatalf("joining Load = %v", err)
	}
	close(release)
	var first *Entry
	for range 3 {
		select {
		case r := <-results:
			if r.err != nil || r.e == nil || r.e.Kind != KindFile || len(r.e.Body) != 8000 {
				t.Fatalf("Done(%v, %v)", r.e, r.err)
			}
			if first != nil && r.e != first {
				t.Fatal("waiters got different entries")
			}
			first = r.e
		case <-time.After(10 * time.Second):
			t.Fatal("Done not called")
		}
	}
	if got, ok := v.Lookup([]byte(p)); !ok || got != first {
		t.Fatal("async load not installed")
	}
	if n := c.Stats().Loads; n != 1 {
		t.Fatalf("file read %d times", n)
	}
	// SyncMax < 0 does everything on a worker.
	q := writeFile(t, filepath.Dir(p), "b.txt", []byte("b"), mtime0)
	if _, err := v.Load(&Request{Key: []byte(q), SyncMax: -1, Done: done}); err != ErrPending {
		t.Fatalf("SyncMax -1: %v", err)
	}
	<-started
	if r := <-results; r.err != nil || string(r.e.Body) != "b" {
		t.Fatalf("SyncMax -1 result %v %v", r.e, r.err)
	}
}

func TestBusyAndClosed(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	c := New(Options{Workers: 1, QueueLen: 1, loadHook: func() { started <- struct{}{}; <-release }})
	v := c.NewView()
	dir := t.TempDir()
	var calls [3]int
	for i := range 3 {
		p := writeFile(t, dir, fmt.Sprint(i), []byte("x"), mtime0)
		_, err := v.Load(&Request{Key: []byte(p), SyncMax: -1, Done: func(*Entry, error) { calls[i]++ }})
		want := ErrPending
		if i == 2 {
			want = ErrBusy
		}
		if err != want {
			t.Fatalf("Load %d = %v, want %v", i, err, want)
		}
		if i == 0 {
			<-started // the worker holds job 0; job 1 fills the queue
		}
	}
	// The busy key is not left in flight: it can load again later.
	if _, err := v.Load(&Request{Key: []byte(filepath.Join(dir, "2")), SyncMax: 1 << 20}); err != nil {
		t.Fatalf("Load after ErrBusy: %v", err)
	}
	close(release)
	c.Close()
	if calls != [3]int{1, 1, 0} {
		t.Fatalf("Done calls = %v", calls)
	}
	if _, err := v.Load(&Request{Key: []byte("/nonexistent"), SyncMax: 1}); err != ErrClosed {
		t.Fatalf("Load after Close = %v", err)
	}
}

func TestCompressOncePerVersion(t *testing.T) {
	c, clk := newTestCache(t, Options{Revalidate: time.Second})
	v := c.NewView()
	body := textBody(20000)
	p := writeFile(t, t.TempDir(), "site.css", body, mtime0)
	e := load(t, v, p, "text/css", allEncodings)
	if r := e.Select([]byte("br")); r.Encoding != Identity {
		// Possible only if a worker already finished; then it must be br.
		if r.Encoding != Brotli {
			t.Fatalf("Select before variants = %v", r.Encoding)
		}
	}
	waitIdle(t, c)
	if got := e.Encodings(); got != EncodingSet(0).With(Gzip).With(Zstd).With(Brotli) {
		t.Fatalf("Encodings = %b", got)
	}
	for range 100 {
		if _, ok := v.Lookup([]byte(p)); !ok {
			t.Fatal("miss")
		}
		e.Select([]byte("gzip, br, zstd"))
	}
	waitIdle(t, c)
	s := c.Stats()
	if s.Compressions != [numEncodings]uint64{0, 1, 1, 1} {
		t.Fatalf("compressions %v, want one per coding", s.Compressions)
	}
	if s.Bytes != e.charge.Load() {
		t.Fatalf("variants not charged: %d vs %d", s.Bytes, e.charge.Load())
	}
	for _, enc := range []Encoding{Gzip, Zstd, Brotli} {
		r := e.Rep(enc)
		if r == nil || r.Encoding != enc || r.Size != int64(len(r.Body)) || r.Size*10 > e.Size*9 {
			t.Fatalf("%v rep: %+v", enc, r)
		}
		if got := decode(t, enc, r.Body); !bytes.Equal(got, body) {
			t.Fatalf("%v body does not decode to the file", enc)
		}
		head := string(r.Head)
		for _, want := range []string{"Content-Encoding: " + enc.String() + "\r\n", "Vary: Accept-Encoding\r\n",
			fmt.Sprintf("Content-Length: %d\r\n", r.Size), "ETag: " + strings.TrimSuffix(string(e.ETag), `"`) + "-" + enc.String() + `"`} {
			if !strings.Contains(head, want) {
				t.Errorf("%v head lacks %q:\n%s", enc, want, head)
			}
		}
	}
	// Negotiation over the published set, in the profile's order.
	if r := e.Select([]byte("gzip, br, zstd")); r.Encoding != Zstd {
		t.Errorf("Select all = %v, want zstd (profile order)", r.Encoding)
	}
	if r := e.Select([]byte("gzip;q=0.5, br;q=0.8")); r.Encoding != Brotli {
		t.Errorf("Select q = %v, want br", r.Encoding)
	}
	var a AcceptEncoding
	a.Add([]byte("gzip"))
	a.Add([]byte("identity;q=0.1"))
	if r := e.SelectAccepted(&a); r.Encoding != Gzip {
		t.Errorf("SelectAccepted = %v", r.Encoding)
	}

	// A new version is compressed again, once.
	writeFile(t, filepath.Dir(p), "site.css", textBody(21000), mtime0.Add(time.Second))
	clk.Advance(time.Second)
	if _, ok := v.Lookup([]byte(p)); ok {
		t.Fatal("change not seen")
	}
	e2 := load(t, v, p, "text/css", allEncodings)
	waitIdle(t, c)
	if got := c.Stats().Compressions; got != [numEncodings]uint64{0, 2, 2, 2} {
		t.Fatalf("compressions after a change: %v", got)
	}
	if d := decode(t, Gzip, e2.Rep(Gzip).Body); len(d) != 21000 {
		t.Fatal("new version's gzip body is not the new file")
	}
	if d := decode(t, Gzip, e.Rep(Gzip).Body); !bytes.Equal(d, body) {
		t.Fatal("old version's gzip body changed")
	}
}

func TestVariantsRules(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	v := c.NewView()
	dir := t.TempDir()

	// Incompressible bytes: compressed once, not kept.
	noise := make([]byte, 8192)
	x := uint32(1)
	for i := range noise {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		noise[i] = byte(x)
	}
	e := load(t, v, writeFile(t, dir, "noise.txt", noise, mtime0), "text/plain", &Profile{Encodings: []Encoding{Gzip}})
	// Below MinCompress, and a non-compressible type: never compressed.
	small := load(t, v, writeFile(t, dir, "small.txt", textBody(500), mtime0), "text/plain", allEncodings)
	png := load(t, v, writeFile(t, dir, "img.png", textBody(5000), mtime0), "image/png", allEncodings)
	waitIdle(t, c)
	if e.Encodings() != 0 || small.Encodings() != 0 || png.Encodings() != 0 {
		t.Fatalf("encodings %b %b %b", e.Encodings(), small.Encodings(), png.Encodings())
	}
	if got := c.Stats().Compressions; got != [numEncodings]uint64{0, 1, 0, 0} {
		t.Fatalf("compressions %v", got)
	}
	if r := e.Select([]byte("gzip")); r.Encoding != Identity {
		t.Fatal("kept a variant that is not smaller")
	}
	// No profile: nothing queued at all.
	plain := load(t, v, writeFile(t, dir, "plain.css", textBody(5000), mtime0), "text/css", nil)
	waitIdle(t, c)
	if plain.Encodings() != 0 || plain.varWork.Load() != varNone {
		t.Fatal("variants without a profile")
	}
}

func TestSidecars(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	v := c.NewView()
	dir := t.TempDir()
	body := textBody(10000)
	p := writeFile(t, dir, "app.js", body, mtime0)
	brSide := []byte("pretend brotli bytes")
	writeFile(t, dir, "app.js.br", brSide, mtime0)                               // same mtime: used
	writeFile(t, dir, "app.js.gz", []byte("stale gzip"), mtime0.Add(-time.Hour)) // older: ignored, compressed instead
	writeFile(t, dir, "app.js.zst", body, mtime0.Add(time.Hour))                 // not smaller: found, not kept, not compressed

	e := load(t, v, p, "text/javascript", allEncodings)
	waitIdle(t, c)
	if got := e.Encodings(); got != EncodingSet(0).With(Brotli).With(Gzip) {
		t.Fatalf("Encodings = %b", got)
	}
	if r := e.Rep(Brotli); !bytes.Equal(r.Body, brSide) {
		t.Fatalf("br body = %q, want the sidecar", r.Body)
	}
	if d := decode(t, Gzip, e.Rep(Gzip).Body); !bytes.Equal(d, body) {
		t.Fatal("gzip was not compressed from the file")
	}
	s := c.Stats()
	if s.Sidecars != 1 || s.Compressions != [numEncodings]uint64{0, 1, 0, 0} {
		t.Fatalf("sidecars %d compressions %v", s.Sidecars, s.Compressions)
	}
	if r := e.Select([]byte("br, gzip, zstd")); r.Encoding != Brotli {
		t.Fatalf("Select = %v", r.Encoding)
	}

	// Sidecars serve types that are never compressed on the fly, and files
	// too large to hold in memory.
	font := writeFile(t, dir, "f.woff2", textBody(3000), mtime0)
	writeFile(t, dir, "f.woff2.gz", []byte("gz"), mtime0)
	c2, _ := newTestCache(t, Options{MaxFileBytes: 2048})
	v2 := c2.NewView()
	for _, cv := range []struct {
		c *Cache
		v *View
	}{{c, v}, {c2, v2}} {
		e := load(t, cv.v, font, "font/woff2", allEncodings)
		waitIdle(t, cv.c)
		if r := e.Select([]byte("gzip")); r.Encoding != Gzip || string(r.Body) != "gz" {
			t.Fatalf("%v entry: Select = %+v", e.Kind, r)
		}
	}
	if e, _ := v2.Lookup([]byte(font)); e.Kind != KindLarge || e.Identity().Body != nil {
		t.Fatal("large entry holds its body")
	}
}

func TestPurgeIf(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	v := c.NewView()
	dir := t.TempDir()
	a := load(t, v, writeFile(t, dir, "a", []byte("a"), mtime0), "", nil)
	b := load(t, v, writeFile(t, dir, "b", []byte("b"), mtime0), "", nil)
	if n := c.PurgeIf(func(k string) bool { return k == a.Path }); n != 1 {
		t.Fatalf("purged %d, want 1", n)
	}
	if _, ok := v.Lookup([]byte(a.Path)); ok {
		t.Fatal("hit on the purged key")
	}
	if _, ok := v.Lookup([]byte(b.Path)); !ok {
		t.Fatal("miss on the key that was kept")
	}
	if s := c.Stats(); s.Entries != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestPurge(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	v := c.NewView()
	dir := t.TempDir()
	a := load(t, v, writeFile(t, dir, "a", []byte("a"), mtime0), "", nil)
	a.Pin()
	load(t, v, writeFile(t, dir, "b", []byte("b"), mtime0), "", nil)
	c.Purge()
	if _, ok := v.Lookup([]byte(a.Path)); ok {
		t.Fatal("hit after Purge")
	}
	if s := c.Stats(); s.Entries != 0 || s.Bytes != a.charge.Load() || s.PinnedRetired != s.Bytes {
		t.Fatalf("stats %+v", s)
	}
	a.Release()
	if s := c.Stats(); s.Bytes != 0 {
		t.Fatalf("stats %+v", s)
	}
	if e := load(t, v, a.Path, "", nil); string(e.Body) != "a" {
		t.Fatal("reload after Purge")
	}
}

func TestProfileOpen(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	opens := 0
	prof := &Profile{Encodings: []Encoding{Brotli, Gzip}, Open: func(p string) (*os.File, error) {
		opens++
		rel, ok := strings.CutPrefix(p, dir+"/")
		if !ok {
			return nil, fmt.Errorf("%w: outside the root", fs.ErrNotExist)
		}
		f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
			err = fmt.Errorf("%w: %v", fs.ErrNotExist, err)
		}
		return f, err
	}}
	secret := writeFile(t, outside, "secret", []byte("secret"), mtime0)
	writeFile(t, outside, "secret.br", []byte("s"), mtime0)
	if err := os.Symlink(secret, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.br"), filepath.Join(dir, "page.txt.br")); err != nil {
		t.Fatal(err)
	}
	page := writeFile(t, dir, "page.txt", textBody(4000), mtime0)
	writeFile(t, dir, "page.txt.gz", []byte("gz"), mtime0)

	c, _ := newTestCache(t, Options{})
	v := c.NewView()
	if e := load(t, v, filepath.Join(dir, "link"), "", prof); e.Kind != KindNotFound {
		t.Fatalf("link out of the root: %v", e.Kind)
	}
	if e := load(t, v, secret, "", prof); e.Kind != KindNotFound {
		t.Fatalf("path outside the root: %v", e.Kind)
	}
	e := load(t, v, page, "text/plain", prof)
	waitIdle(t, c)
	if e.Kind != KindFile || opens < 5 {
		t.Fatalf("page: %v after %d opens", e.Kind, opens)
	}
	// The .gz sidecar is read through the root; the .br link that leaves
	// it is not, so brotli is compressed from the file instead.
	if r := e.Rep(Gzip); r == nil || string(r.Body) != "gz" {
		t.Fatalf("gzip rep %+v", r)
	}
	if r := e.Rep(Brotli); r == nil || !bytes.Equal(decode(t, Brotli, r.Body), textBody(4000)) {
		t.Fatal("brotli rep not compressed from the file")
	}
}

func TestFromConfig(t *testing.T) {
	o := FromConfig(config.Cache{MaxBytes: 1, MaxFileBytes: 2, Revalidate: 3, NegativeTTL: 4})
	if o.MaxBytes != 1 || o.MaxFileBytes != 2 || o.Revalidate != 3 || o.NegativeTTL != 4 {
		t.Fatalf("%+v", o)
	}
}

func TestViewSweepsRemovedSlots(t *testing.T) {
	c, _ := newTestCache(t, Options{MaxBytes: 64 << 10, NegativeTTL: time.Hour})
	v := c.NewView()
	dir := t.TempDir()
	for i := range 3000 {
		load(t, v, filepath.Join(dir, fmt.Sprint("missing", i)), "", nil)
	}
	live := c.Stats().Entries
	if live >= 3000 || len(v.m) > 2*max(viewSweepMin, 2*live) {
		t.Fatalf("view holds %d slots for %d live", len(v.m), live)
	}
}

var gzipOnly = &Profile{Encodings: []Encoding{Gzip}, MinCompress: 1024}

func TestConcurrentViews(t *testing.T) {
	const (
		goroutines = 4
		files      = 24
		rounds     = 300
	)
	c, clk := newTestCache(t, Options{MaxBytes: 96 << 10, Revalidate: time.Millisecond, NegativeTTL: time.Millisecond})
	dir := t.TempDir()
	paths := make([]string, files)
	for i := range paths {
		paths[i] = writeFile(t, dir, fmt.Sprintf("f%02d.css", i), textBody(2000+i*300), time.Time{})
	}
	errs := make(chan error, goroutines*rounds)
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	read := make(chan struct{}, goroutines)
	go func() { // rewrites, deletes and recreates files while views read
		defer close(writerDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := paths[i%files]
			if i%7 == 0 {
				_ = os.Remove(p)
			} else {
				_ = os.WriteFile(p, textBody(2000+i%5000), 0o644)
			}
			clk.Advance(time.Millisecond)
			select { // one change per round a reader finished: paced by the readers, not the clock
			case <-stop:
				return
			case <-read:
			}
		}
	}()
	done := make(chan struct{}, goroutines)
	for g := range goroutines {
		go func() {
			defer func() { done <- struct{}{} }()
			v := c.NewView()
			woken := make(chan *Entry, 64)
			for r := range rounds {
				select {
				case read <- struct{}{}:
				default:
				}
				p := paths[(r*7+g)%files]
				e, ok := v.Lookup([]byte(p))
				if !ok {
					var err error
					e, err = v.Load(&Request{Key: []byte(p), ContentType: "text/css", Profile: gzipOnly,
						SyncMax: int64(1000 * (g % 3)), Done: func(e *Entry, err error) {
							woken <- e // nil on an error: a file that never settled, say
						}})
					if err == ErrBusy {
						continue
					}
					if err == ErrPending {
						select {
						case e = <-woken:
						case <-time.After(10 * time.Second):
							errs <- errors.New("Done never called")
							return
						}
						if e == nil {
							continue
						}
					} else if err != nil {
						errs <- err
						return
					}
				}
				switch e.Kind {
				case KindFile:
					e.Pin()
					rep := e.Select([]byte("gzip, br"))
					if rep.Size != int64(len(rep.Body)) || !bytes.Contains(rep.Head, []byte("Content-Length: ")) {
						errs <- fmt.Errorf("bad rep for %s", p)
					}
					e.Release()
				case KindNotFound:
				default:
					errs <- fmt.Errorf("%s: kind %v", p, e.Kind)
					return
				}
			}
		}()
	}
	for range goroutines {
		<-done
	}
	close(stop)
	<-writerDone
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	waitIdle(t, c)
	s := c.Stats()
	t.Logf("stats: %+v", s)
	if s.Bytes > s.MaxBytes || s.PinnedRetired != 0 {
		t.Fatalf("after the run: %+v", s)
	}
	if s.Loads == 0 || s.Revalidations == 0 || s.Changes == 0 || s.Evictions == 0 {
		t.Fatalf("the run did not exercise loads, revalidation and eviction: %+v", s)
	}
	// Everything live is accounted for exactly.
	var live int64
	c.mu.Lock()
	for _, n := range c.nodes {
		live += n.cur.Load().charge.Load()
	}
	c.mu.Unlock()
	if live != s.Bytes {
		t.Fatalf("live slots hold %d bytes, budget says %d", live, s.Bytes)
	}
}
