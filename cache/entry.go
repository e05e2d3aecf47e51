package cache

import (
	"io/fs"
	"os"
	"strconv"
	"sync/atomic"

	"gale/codec"
)

// Kind says what a path held when its entry was made.
type Kind uint8

const (
	KindFile     Kind = iota + 1 // a regular file whose body is in memory (Entry.Body, Rep.Body)
	KindLarge                    // a regular file larger than MaxFileBytes (or the budget): metadata and rendered heads only; stream the body from disk
	KindDir                      // a directory: metadata only (ModTime); no representations
	KindNotFound                 // nothing there (ENOENT, ENOTDIR, or neither a regular file nor a directory): a negative entry
	KindDenied                   // permission denied (EACCES, EPERM): a negative entry
)

// String returns the kind's name, for logs and tests.
func (k Kind) String() string {
	switch k {
	case KindFile:
		return "file"
	case KindLarge:
		return "large"
	case KindDir:
		return "dir"
	case KindNotFound:
		return "not-found"
	case KindDenied:
		return "denied"
	}
	return "unknown"
}

// Negative reports whether k records the absence of a servable path.
func (k Kind) Negative() bool { return k == KindNotFound || k == KindDenied }

// Profile is how one static route wants its files represented: which
// encodings it serves (sidecars and on-the-fly compression, and the
// preference order for negotiation), and how a representation's header
// block is rendered. Build one per route at config time and pass the same
// pointer to every Load of that route; it must not change afterwards.
//
// Entries are keyed by the caller's key only: two routes with different
// profiles that can reach the same file must use different keys (for
// example, a route number prefixed to the path).
type Profile struct {
	// Encodings lists the codings to serve besides identity, in preference
	// order. Empty: identity only, and no Vary field.
	Encodings []Encoding

	// MinCompress is the smallest body compressed on the fly; smaller
	// bodies are served as identity unless a sidecar exists.
	MinCompress int64

	// Open, if not nil, opens a path given to Load (and its sidecars, the
	// path plus ".br", ".zst" or ".gz") for reading, applying the route's
	// root and symbolic-link policy. It must not block (open with
	// O_NONBLOCK, so a FIFO cannot stall it), must be safe for concurrent
	// use, and should report refusals as errors matching fs.ErrNotExist or
	// fs.ErrPermission so they are cached as KindNotFound or KindDenied.
	// The cache checks the file type itself after fstat. nil: the path is
	// opened as is, following symbolic links. Revalidation stats the path
	// directly (following links) only to detect a change; bytes are always
	// read through Open.
	Open func(path string) (*os.File, error)

	// Render, if not nil, renders the HTTP/1.1 header block kept in
	// Rep.Head. It appends to dst and returns the result; it may include
	// anything constant for this route and representation (a status line,
	// a Date placeholder at an offset the caller knows, Server, route
	// header rules) as well as r.Fields (r.Body is nil for the identity of
	// a KindLarge entry). It runs once per representation, on the
	// goroutine that loads the file or on a worker: it must be safe for
	// concurrent use, must not block, and must not keep e, r or dst. The
	// result is copied. nil: Rep.Head is r.Fields rendered as
	// "Name: value\r\n" lines.
	Render func(dst []byte, e *Entry, r *Rep) []byte

	// RenderHPACK, if not nil, encodes the HTTP/2 header block kept in
	// Rep.HPACK (RFC 7541, with gale/h2/hpack's stateless encoder, so the
	// block can be sent on any connection): the fields of the response
	// that Render renders, lower-cased, without the connection-specific
	// ones (RFC 9113 section 8.2.2) and without Date, which the HTTP/2
	// engine appends per response. It runs exactly when and where Render
	// runs, under the same rules; the result is copied. nil: Rep.HPACK is
	// nil, and an HTTP/2 engine encodes the response's fields itself.
	RenderHPACK func(dst []byte, e *Entry, r *Rep) []byte
}

// Rep is one representation of a cached file: identity, or a content
// coding. A Rep is immutable once an Entry hands it out: every slice in it
// (Body, ETag, Fields and their bytes, Head) is shared by all goroutines,
// must not be modified, and stays valid for as long as it is referenced
// (the garbage collector keeps it; see Entry.Pin for the byte budget).
type Rep struct {
	Encoding Encoding // Identity or the Content-Encoding of Body
	Size     int64    // length of the representation's body
	Body     []byte   // the body; nil when it is not in memory (identity of a KindLarge entry: read it from the file)
	ETag     []byte   // strong entity tag with its quotes; codings add "-<coding>" inside the quotes

	// Fields are this representation's header fields, in this order:
	// Content-Type (when the caller gave one), Content-Length,
	// Last-Modified, ETag, Accept-Ranges ("bytes"), Content-Encoding
	// (codings only) and Vary ("Accept-Encoding", when the profile
	// serves any coding). Names are in canonical case; an HTTP/2 encoder
	// lower-cases them. A 304 or 206 response picks from these.
	Fields []codec.Header

	// Head is the rendered HTTP/1.1 header block: Profile.Render's output,
	// or Fields as "Name: value\r\n" lines.
	Head []byte

	// HPACK is the pre-encoded HTTP/2 header block of the same response:
	// Profile.RenderHPACK's output, or nil when the profile has none.
	HPACK []byte

	// Blob holds the same bytes as Body in a sealed memfd, for sendfile(2)
	// (bodies from BlobMin bytes up, on Linux); nil when there is none.
	Blob *Blob
}

// variants are the coded representations of an entry, published once by a
// worker; reps[Identity] is unused.
type variants struct {
	reps  [numEncodings]*Rep
	avail EncodingSet
}

// Entry is one version of what a path held: a file (its body, metadata and
// representations), or a directory, or a negative result. An Entry is
// immutable once published: its exported fields never change, so it may be
// read from any goroutine without locks. A changed file becomes a new
// Entry; holders of the old one keep valid bytes (the garbage collector
// keeps them). Coded representations are attached once, later, when a
// worker has produced them; until then Select returns identity.
type Entry struct {
	Kind         Kind   // what the path held
	Path         string // the file's path as given to Load
	ContentType  string // as given to Load ("" when unknown)
	Size         int64  // file size in bytes (files)
	ModTime      int64  // modification time, nanoseconds since the Unix epoch
	ETag         []byte // identity's strong ETag, with quotes (files); shared, read-only
	LastModified []byte // ModTime as an IMF-fixdate (files and directories); shared, read-only
	Body         []byte // identity body (KindFile only; non-nil, possibly empty); shared, read-only

	ident       Rep                      // identity representation (files)
	prof        *Profile                 // how the caller wants it represented; nil = identity only
	id          fileID                   // what revalidation compares
	checkAt     atomic.Int64             // clock value at which the next revalidation (positive) or expiry (negative) is due; staleMark once a change was seen
	vars        atomic.Pointer[variants] // coded representations, once published
	varWork     atomic.Uint32            // varNone, varIdle, varQueued or varDone
	sideSettled EncodingSet              // codings whose sidecar question probeSidecars answered (written before the variants job is queued)
	sideFound   EncodingSet              // of those, codings with a usable sidecar (kept or not): never compressed
	pins        atomic.Int64             // Pin count << 1 | retiredBit
	acct        atomic.Uint32            // acctLive, acctPinned or acctFreed: who owes the budget this entry's charge
	charge      atomic.Int64             // bytes charged to the budget; changes only under Cache.mu while the entry is current
	node        *node                    // the cache slot it was installed in; nil when detached
}

const (
	varNone    = iota // nothing to produce
	varIdle           // wanted but not queued (the queue was full): a hit retries
	varQueued         // a worker will produce them
	varDone           // produced (or found not worth keeping)
	varProbing        // the loading goroutine is reading sidecars (probeSidecars); hits leave it alone
)

const retiredBit = 1

const (
	acctLive   = iota // counted in the budget as part of a live slot
	acctPinned        // retired while pinned: still counted until the last Release
	acctFreed         // no longer counted
)

// Identity returns the identity representation (nil unless the entry is a
// file). The result is shared and immutable.
func (e *Entry) Identity() *Rep {
	if e.Kind != KindFile && e.Kind != KindLarge {
		return nil
	}
	return &e.ident
}

// Encodings returns the coded representations available now (identity not
// included). It grows once, when a worker publishes them.
func (e *Entry) Encodings() EncodingSet {
	if v := e.vars.Load(); v != nil {
		return v.avail
	}
	return 0
}

// Rep returns the representation in enc if it is available now, else nil
// (identity: as Identity).
func (e *Entry) Rep(enc Encoding) *Rep {
	if enc == Identity {
		return e.Identity()
	}
	if v := e.vars.Load(); v != nil && enc < numEncodings {
		return v.reps[enc]
	}
	return nil
}

// Select negotiates the representation to serve for a request whose
// Accept-Encoding field value is acceptEncoding (nil when absent), in the
// profile's preference order among the codings available now. It returns
// nil when the entry is not a file. It does not allocate; the result is
// shared and immutable. For several Accept-Encoding lines, parse them into
// an AcceptEncoding and use SelectAccepted.
func (e *Entry) Select(acceptEncoding []byte) *Rep {
	v := e.vars.Load()
	if v == nil || acceptEncoding == nil || e.prof == nil {
		return e.Identity()
	}
	if enc := Negotiate(acceptEncoding, e.prof.Encodings, v.avail); enc != Identity {
		return v.reps[enc]
	}
	return e.Identity()
}

// SelectAccepted is Select for an already parsed Accept-Encoding.
func (e *Entry) SelectAccepted(a *AcceptEncoding) *Rep {
	v := e.vars.Load()
	if v == nil || e.prof == nil {
		return e.Identity()
	}
	if enc := a.Choose(e.prof.Encodings, v.avail); enc != Identity {
		return v.reps[enc]
	}
	return e.Identity()
}

// Negotiable reports whether responses for this entry vary on
// Accept-Encoding (its profile serves some coding), so that responses
// built without Fields (a 304, say) still carry Vary.
func (e *Entry) Negotiable() bool {
	return e.prof != nil && len(e.prof.Encodings) > 0 && (e.Kind == KindFile || e.Kind == KindLarge)
}

// Pin keeps the entry's bytes counted in the cache's byte budget until the
// matching Release, even after the entry is replaced or evicted. Pin
// before handing the entry's bytes to a goroutine that outlives the
// current call (for example, a body sent off the event loop), and Release
// when it is done. Correctness does not depend on it: an unpinned entry's
// bytes stay valid while referenced; pinning only keeps the budget honest.
// A version retired before Pin is not counted again. Pin and Release are
// safe for concurrent use and do not allocate.
func (e *Entry) Pin() { e.pins.Add(2) }

// Release undoes one Pin. When the last pin of a retired entry is
// released, its bytes leave the budget.
func (e *Entry) Release() {
	s := e.pins.Add(-2)
	if s < 0 {
		panic("bug: cache: Entry.Release without Pin")
	}
	if s == retiredBit && e.node != nil {
		e.node.c.freeRetired(e)
	}
}

// Pinned reports whether the entry has outstanding pins.
func (e *Entry) Pinned() bool { return e.pins.Load()>>1 > 0 }

// SameFile reports whether fi (for example from Stat on a file opened to
// stream a KindLarge body) describes the same file version as e: same
// size and nanosecond mtime, and on Linux the same device, inode and
// change time.
func (e *Entry) SameFile(fi fs.FileInfo) bool {
	return fileIDOf(fi) == e.id
}

// Header field names, shared by every Rep.
var (
	valueEncodings = [numEncodings][]byte{nil, []byte("gzip"), []byte("zstd"), []byte("br")}
)

// Invalidate records that e no longer describes its path (the caller
// opened the file and found it changed, Entry.SameFile false): if e is
// still its key's current version, every view misses on it from now on
// and the next Load reads the path again. Holders of e keep valid bytes.
// Safe for concurrent use; it does not allocate.
func (e *Entry) Invalidate() {
	if !e.Kind.Negative() {
		e.checkAt.Store(staleMark)
	}
}

// AppendETag appends the strong entity tag a file of this size and
// modification time (nanoseconds since the Unix epoch) gets from the
// cache, with its quotes, so that responses served without the cache
// carry the same validator. It does not allocate when dst has room.
func AppendETag(dst []byte, mtime, size int64) []byte {
	dst = append(dst, '"')
	dst = strconv.AppendUint(dst, uint64(mtime), 16)
	dst = append(dst, '-')
	dst = strconv.AppendUint(dst, uint64(size), 16)
	return append(dst, '"')
}

// makeETag renders `"<mtime ns hex>-<size hex>"`, the strong validator of a
// file version (size and nanosecond mtime, as caddy's calculateEtag and
// nginx's ngx_http_set_etag derive it, with finer time).
func makeETag(mtime, size int64) []byte {
	return AppendETag(make([]byte, 0, 34), mtime, size)
}

// codedETag derives a coding's ETag from identity's: `"x-y"` -> `"x-y-br"`.
// Representations differ in bytes, so they must differ in strong ETag.
func codedETag(tag []byte, enc Encoding) []byte {
	return AppendVariantETag(make([]byte, 0, len(tag)+1+len(enc.String())), tag, enc)
}

// AppendVariantETag appends the strong entity tag of the representation in
// enc of the file version whose identity ETag is base (quotes included):
// base itself for Identity, else base with "-<coding>" inside the quotes,
// `"x-y"` -> `"x-y-zstd"`, as Caddy's encode module names its variants.
// Every coded representation the cache makes or reads from a sidecar
// carries this tag, so it is known without the representation at hand
// (after a restart, say). It does not allocate when dst has room.
func AppendVariantETag(dst, base []byte, enc Encoding) []byte {
	if enc == Identity || enc >= numEncodings || len(base) < 2 {
		return append(dst, base...)
	}
	dst = append(dst, base[:len(base)-1]...)
	dst = append(dst, '-')
	dst = append(dst, encodingNames[enc]...)
	return append(dst, '"')
}

// VariantOf reports which representation of the file version whose
// identity ETag is base the entity-tag tag names, under the weak
// comparison that If-None-Match uses (RFC 9110 sections 8.8.3.2 and
// 13.1.2): base itself (Identity), or base with a coding's suffix
// (AppendVariantETag). A "W/" prefix on either is ignored, so a tag that
// an intermediary weakened on its way (as nginx's gzip filter does) still
// names its representation. It does not allocate.
func VariantOf(tag, base []byte) (Encoding, bool) {
	tag, base = trimWeak(tag), trimWeak(base)
	if len(base) < 2 || len(tag) < len(base) || string(tag[:len(base)-1]) != string(base[:len(base)-1]) {
		return Identity, false
	}
	rest := tag[len(base)-1:] // `"` for identity, `-<coding>"` for a variant
	if len(rest) == 1 {
		return Identity, rest[0] == '"'
	}
	if rest[0] != '-' || rest[len(rest)-1] != '"' {
		return Identity, false
	}
	name := rest[1 : len(rest)-1]
	for enc := Encoding(1); enc < numEncodings; enc++ {
		if string(name) == encodingNames[enc] {
			return enc, true
		}
	}
	return Identity, false
}

func trimWeak(t []byte) []byte {
	if len(t) >= 2 && t[0] == 'W' && t[1] == '/' {
		return t[2:]
	}
	return t
}

// repOverhead approximates what a Rep costs besides its slices' bytes.
const repOverhead = 160

// buildRep fills r's Fields, Head and HPACK for e (whose exported fields
// are set) and returns the bytes it holds, for the budget.
func buildRep(e *Entry, r *Rep) int64 {
	var lenBuf [20]byte
	clen := strconv.AppendInt(lenBuf[:0], r.Size, 10)
	negotiable := e.prof != nil && len(e.prof.Encodings) > 0
	// One backing array for the values that are not shared constants.
	vals := make([]byte, 0, len(e.ContentType)+len(clen))
	vals = append(vals, e.ContentType...)
	vals = append(vals, clen...)
	ct, cl := vals[:len(e.ContentType):len(e.ContentType)], vals[len(e.ContentType):]

	fields := make([]codec.Header, 0, 7)
	if len(ct) > 0 {
		fields = append(fields, codec.Header{Name: codec.NameContentType, Value: ct})
	}
	fields = append(fields,
		codec.Header{Name: codec.NameContentLength, Value: cl},
		codec.Header{Name: codec.NameLastModified, Value: e.LastModified},
		codec.Header{Name: codec.NameETag, Value: r.ETag},
		codec.Header{Name: codec.NameAcceptRanges, Value: codec.ValueBytes},
	)
	if r.Encoding != Identity {
		fields = append(fields, codec.Header{Name: codec.NameContentEncoding, Value: valueEncodings[r.Encoding]})
	}
	if negotiable {
		fields = append(fields, codec.Header{Name: codec.NameVary, Value: codec.ValueAcceptEncoding})
	}
	r.Fields = fields
	var buf [512]byte
	head := buf[:0]
	if e.prof != nil && e.prof.Render != nil {
		head = e.prof.Render(head, e, r)
	} else {
		head = codec.AppendFieldLines(head, fields)
	}
	r.Head = append(make([]byte, 0, len(head)), head...) // exact size: it lives as long as the entry
	if e.prof != nil && e.prof.RenderHPACK != nil {
		block := e.prof.RenderHPACK(buf[:0], e, r)
		r.HPACK = append(make([]byte, 0, len(block)), block...)
	}
	return repOverhead + int64(cap(vals)+cap(r.Head)+cap(r.HPACK)+len(r.ETag)) + int64(cap(fields))*48 + int64(len(r.Body))
}
