// Package cache keeps static files in memory for the event loops: each
// file's body, metadata, validators, rendered header blocks and compressed
// variants, under one byte budget, revalidated by stat and evicted by
// SIEVE. A hit costs a map lookup and a few atomic loads: no lock, no
// system call, no allocation.
//
// # Invariants
//
// An Entry is one version of what a path holds (a file, a directory, or a
// negative result) and is immutable once published. Every slice it hands
// out is shared by all goroutines and never written again, so readers need
// no lock, and bytes a reader holds stay valid after the entry is replaced
// or evicted: the garbage collector keeps them alive. Compressed
// representations are the one addition, published once per version through
// an atomic pointer.
//
// # Lookups: one View per event loop
//
// Each event loop owns a View, a plain Go map from key to slot. The slots
// (and the entries they point to) are shared; the store's own map is
// guarded by a mutex that a view takes only the first time it meets a key
// (and when a slot it knew was removed). A hit therefore reads the loop's
// own map, the slot's current-entry pointer, the clock and the entry's
// revalidation time, and allocates nothing: indexing a map with
// string(keyBytes) does not copy.
//
// We chose per-loop views over an atomically swapped snapshot of one
// shared map because a snapshot must be copied on every insert and
// eviction (O(entries) per change, garbage proportional to churn), and
// over sync.Map because its Load boxes a string key into an interface
// (one allocation per lookup) and takes its mutex on misses. The price of
// views is memory for one map per loop, and views hold removed slots until
// they look them up again or sweep (a view sweeps when it doubles in size),
// never entries: a removed slot's entry pointer is nil.
//
// # Versions, pins and the budget
//
// Revalidation happens at most once per Revalidate per entry: the lookup
// that finds it due claims it with a CAS on the entry's next-check time
// and stats the path (size, nanosecond mtime, and on Linux inode, device
// and ctime, so a rename over the file is seen even when size and mtime
// match). Other loops serve the current version meanwhile. Unchanged: the
// entry lives on. Changed: the entry is marked stale, every view misses,
// and the next Load installs a new version in the same slot; readers of
// the old version keep its bytes. Deleted: the slot switches to a negative
// entry at once. Negative entries (not found, permission denied) are kept
// for NegativeTTL.
//
// The budget counts every entry's body, coded bodies, header fields,
// rendered heads, key, path and a fixed overhead, plus old versions still
// pinned. Bodies from BlobMin bytes up (identity and coded) are held
// twice, on Linux: in memory, and in a sealed memfd (Rep.Blob) that the
// server sends with sendfile(2); both copies are counted, and each memfd
// is one descriptor of the descriptor budget, closed when the garbage
// collector finds its Blob unreachable. Holding bytes needs no pin (the garbage collector does that), so
// hits stay free of shared writes; a holder that keeps an entry beyond the
// current call (a body sent off the loop) pins it with Entry.Pin, and a
// version retired while pinned stays counted until the last Release, as
// fasthttp's fs.go counts readers of a cached file. Pins are an atomic
// count and a retired bit in one word, so retirement and the last release
// agree, without a lock, on which of them gives the bytes back.
//
// When an insertion goes over the budget, the cache evicts with SIEVE
// (Zhang et al., NSDI '24): slots sit in insertion order; a hit sets the
// slot's visited bit, and only if it is clear (a load, then rarely a
// store, so hot slots cause no cache-line traffic); eviction moves a hand
// from the oldest slot toward the newest, clearing visited bits and
// evicting the first unvisited slot. Unlike LRU, a hit never moves a slot
// (which would need the lock); unlike CLOCK, new slots are not placed at
// the hand, so one-hit wonders leave quickly and popular files stay. An
// entry larger than the whole budget is not cached: Load returns it
// detached, for that request only. KindLarge entries (files over
// MaxFileBytes) keep metadata and rendered heads only; the caller streams
// their bodies.
//
// # Loading and compression
//
// Load opens the path (through the route's Profile.Open, which applies its
// root and symbolic-link policy) and fstats it on the caller's goroutine,
// and reads files up to Request.SyncMax there; a larger file (up to
// MaxFileBytes) goes to a bounded pool of workers and Load returns
// ErrPending; the worker installs the entry and calls Request.Done, which
// the server uses to Wake the connection. A second load of a key in flight
// joins the first instead of reading again. A full queue returns ErrBusy
// rather than blocking.
//
// Right after a file version is installed, and before its load is
// reported, the loading goroutine looks for precompressed sidecars
// (path.br, path.zst, path.gz) no older than the file and reads those up
// to the load's SyncMax (a worker reads larger ones), so that the first
// response can already be precompressed; this happens once per version
// (a sidecar replaced on its own is seen when the file changes or its
// slot is reloaded). Then, for compressible media types (see
// Compressible) without a sidecar, a worker compresses the body once per
// version with brotli, zstd and gzip as the route's Profile asks. A coded
// body is kept only if it is at most 90% of the identity size. Until the
// compressed variants are published, Select returns identity (or a
// sidecar).
//
// # Serving a hit
//
// Entry.Select negotiates Accept-Encoding (q-values, identity, "*") in the
// route's preference order and returns a Rep: its body, ETag, header fields
// (for HTTP/2 or for 304 and 206 responses) and its rendered HTTP/1.1
// header block (for the one-write fast path; the Profile's Render may put
// a status line and a Date placeholder in it, which the server patches in
// its own copy), and the same response's HTTP/2 header block pre-encoded
// by the Profile's RenderHPACK (without Date, which the HTTP/2 engine
// appends). A coded representation's ETag is identity's with the coding
// appended inside the quotes (AppendVariantETag), so a revalidation can
// name any representation of a version, made yet or not, and VariantOf
// reads it back. The static handler's sequence is:
//
//	e, ok := view.Lookup(key)
//	if !ok {
//		e, err = view.Load(&cache.Request{Key: key, Path: path, ContentType: ct,
//			Profile: prof, SyncMax: syncMax, Done: conn.cacheDone})
//		// err == cache.ErrPending: the response is pending; Done stores e
//		// and Wakes the connection, which then serves e.
//		// err == cache.ErrBusy: serve from the file without the cache.
//	}
//	switch e.Kind {
//	case cache.KindFile:     // rep := e.Select(acceptEncoding): write rep.Head (Date patched) and rep.Body
//	case cache.KindLarge:    // rep := e.Select(...); rep.Body == nil: open the file, check e.SameFile, stream it
//	case cache.KindDir:      // index files, redirect, or listing
//	case cache.KindNotFound: // 404
//	case cache.KindDenied:   // 403
//	}
//
// The design follows nginx's ngx_open_file_cache.c (stat revalidation
// after a validity period, negative results cached) and fasthttp's fs.go
// (reader-counted cached files), with per-loop views in place of either's
// shared lock.
package cache
