package handlers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gale/cache"
	"gale/codec"
	"gale/config"
)

// symlinkMode is a static route's follow_symlinks policy.
type symlinkMode uint8

const (
	symlinksInsideRoot symlinkMode = iota // follow links whose target stays under the root
	symlinksAlways                        // follow every link
	symlinksNever                         // refuse any link on the path
)

// openFlags open files without blocking on FIFOs or devices (which are then
// refused after fstat); regular files ignore O_NONBLOCK.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK

// staticSyncMax is the largest file a cache miss reads on the event loop;
// larger files (up to cache.max_file_bytes) are read by the cache's
// workers while the exchange waits (see CacheAccess).
const staticSyncMax = 64 << 10

// staticHandler serves files under a root directory through the file
// cache. It is immutable after newStatic and safe for concurrent use.
//
// A request path is decoded and cleaned (path.go), then looked up in the
// cache under the route's key prefix and the clean path. A hit answers
// with the entry's pre-rendered head and in-memory body (one write for
// the app); a miss loads the path (on the loop up to staticSyncMax, else
// on a cache worker while the connection waits). Files larger than
// cache.max_file_bytes keep only their metadata in the cache and are
// opened per request and streamed. Preconditions (static_cond.go) and
// ranges (static_range.go) are evaluated against the representation
// selected by Accept-Encoding.
type staticHandler struct {
	rootPath     string   // absolute, with symbolic links resolved
	rootPrefix   string   // rootPath ending in "/"
	root         *os.Root // rootPath held open: opens through it cannot leave it
	index        []string // index file names, tried in order
	allowHidden  bool     // serve dot-files and dot-directories
	symlinks     symlinkMode
	cacheControl []byte // Cache-Control value; nil for none
	mime         *mimeTable
	browse       bool              // list directories without an index file
	spa          []byte            // clean path of the SPA fallback file; nil = off
	try          []config.Template // try_files candidates; nil = off
	tryStatus    int               // the status when no candidate exists; 0 = the last candidate is the fallback
	errPages     []errPage         // custom error pages by status-400 (400..599); path "" = none
	routePath    string            // the route's path prefix, for listing titles
	server       []byte            // Server field of pre-rendered heads; nil = none
	respOps      *headerOps        // the route's response header rules, rendered into heads
	keyPrefix    []byte            // prefix of this route's cache keys
	encodings    bool              // the route serves some content coding (responses vary on Accept-Encoding)
	codings      cache.EncodingSet // those codings, for revalidations of a variant

	cache   *cache.Cache
	prof    cache.Profile // how this route's files are represented
	errProf cache.Profile // how its error pages are
	shared  sharedView    // for requests outside the server (Ctx.Cache nil)
	retry   loadRetry     // the continuation of requests that wait for a load
	scripts ScriptHandler // runs the route's scripts (the php preset; static_script.go); nil for a plain static route
}

// errPage is a custom error page of a static route.
type errPage struct {
	path string // absolute file path
	key  []byte // cache key
	ct   []byte // Content-Type
}

var _ Handler = (*staticHandler)(nil)

// staticEnv is what Build gives every static route besides its config.
type staticEnv struct {
	mime      *mimeTable
	cache     *cache.Cache
	server    []byte
	keyPrefix string // unique per route and per Build
}

// newStatic builds the handler of one static route from its config,
// checking each setting in turn and opening the root last.
func newStatic(sc *config.Static, rt *Route, env staticEnv) (*staticHandler, error) {
	h := &staticHandler{
		mime:      env.mime,
		cache:     env.cache,
		server:    env.server,
		keyPrefix: []byte(env.keyPrefix),
		browse:    sc.Browse,
	}
	if rt != nil {
		h.routePath = rt.Conf.Path
		h.respOps = &rt.respOps
	}
	if err := h.setAccess(sc); err != nil {
		return nil, err
	}
	if err := h.setFiles(sc); err != nil {
		return nil, err
	}
	if err := h.setErrorPages(sc, env.keyPrefix); err != nil {
		return nil, err
	}
	if err := h.setCompression(sc); err != nil {
		return nil, err
	}
	if err := h.openRoot(sc.Root); err != nil {
		return nil, err
	}
	h.retry.h = h
	return h, nil
}

// setAccess sets whether hidden files are served and which symbolic
// links are followed.
func (h *staticHandler) setAccess(sc *config.Static) error {
	switch sc.Hidden {
	case "", "deny":
	case "allow":
		h.allowHidden = true
	default:
		return fmt.Errorf("%w: hidden %q (want deny or allow)", ErrBadStatic, sc.Hidden)
	}
	switch sc.FollowSymlinks {
	case "", "inside_root":
		h.symlinks = symlinksInsideRoot
	case "always":
		h.symlinks = symlinksAlways
	case "never":
		h.symlinks = symlinksNever
	default:
		return fmt.Errorf("%w: follow_symlinks %q (want inside_root, always or never)", ErrBadStatic, sc.FollowSymlinks)
	}
	return nil
}

// setFiles sets the index names, try_files, Cache-Control and the SPA
// fallback, each checked so that none can name a path outside the root
// or put a control byte into a header.
func (h *staticHandler) setFiles(sc *config.Static) error {
	for _, name := range sc.Index {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
			return fmt.Errorf("%w: index %q must be a plain file name", ErrBadStatic, name)
		}
	}
	h.index = sc.Index
	h.try, h.tryStatus = sc.TryFiles, sc.TryStatus
	if sc.CacheControl != "" {
		if strings.ContainsAny(sc.CacheControl, "\r\n\x00") {
			return fmt.Errorf("%w: cache_control has a control byte", ErrBadStatic)
		}
		h.cacheControl = []byte(sc.CacheControl)
	}
	if sc.SPAFallback != "" {
		p := []byte(sc.SPAFallback)
		clean, dir, ok := cleanPath(p)
		if !ok || dir || sc.SPAFallback[0] != '/' || strings.ContainsRune(sc.SPAFallback, 0) {
			return fmt.Errorf("%w: spa_fallback %q must be a file path under the root", ErrBadStatic, sc.SPAFallback)
		}
		h.spa = clean
	}
	return nil
}

// setErrorPages sets the file served for each error status, with a cache
// key made unique by keyPrefix.
func (h *staticHandler) setErrorPages(sc *config.Static, keyPrefix string) error {
	for status, file := range sc.ErrorPages {
		if status < 400 || status > 599 {
			return fmt.Errorf("%w: error_pages: status %d is not an error", ErrBadStatic, status)
		}
		if !filepath.IsAbs(file) {
			return fmt.Errorf("%w: error_pages: %q is not absolute", ErrBadStatic, file)
		}
		if h.errPages == nil {
			h.errPages = make([]errPage, 200)
		}
		h.errPages[status-400] = errPage{
			path: file,
			key:  fmt.Appendf(nil, "%s!%d", keyPrefix, status),
			ct:   h.mime.lookup([]byte(filepath.ToSlash(file))),
		}
	}
	return nil
}

// setCompression sets the encodings and size threshold of the cache
// profile, and how the profiles open and render files.
func (h *staticHandler) setCompression(sc *config.Static) error {
	for _, name := range sc.Compress.Encodings {
		enc, ok := cache.ParseEncoding(name)
		if !ok {
			return fmt.Errorf("%w: compress: unknown encoding %q", ErrBadStatic, name)
		}
		h.prof.Encodings = append(h.prof.Encodings, enc)
		h.codings = h.codings.With(enc)
	}
	h.encodings = len(h.prof.Encodings) > 0
	h.prof.MinCompress = sc.Compress.MinBytes
	h.prof.Open = h.openAbs
	h.prof.Render = h.render
	h.prof.RenderHPACK = h.renderHPACK
	h.errProf.Render = renderNothing
	return nil
}

// openRoot resolves the symbolic links in root, which must be an absolute
// path to a directory, and opens it as the handler's os.Root.
func (h *staticHandler) openRoot(root string) error {
	if !filepath.IsAbs(root) {
		return fmt.Errorf("%w: root %q is not absolute", ErrBadStatic, root)
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("%w: root: %w", ErrBadStatic, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("%w: root: %w", ErrBadStatic, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: root %q is not a directory", ErrBadStatic, root)
	}
	h.root, err = os.OpenRoot(real)
	if err != nil {
		return fmt.Errorf("%w: root: %w", ErrBadStatic, err)
	}
	h.rootPath = real
	h.rootPrefix = strings.TrimSuffix(real, "/") + "/"
	return nil
}

func (h *staticHandler) close() error { return h.root.Close() }

// render is the route's cache.Profile.Render: the head of a 200 response
// for representation r, with a Date placeholder (see AppendHead). Its
// HTTP/2 twin is renderHPACK (static_hpack.go).
func (h *staticHandler) render(dst []byte, _ *cache.Entry, r *cache.Rep) []byte {
	dst = append(dst, headStatusOK...)
	dst = append(dst, headDateLine...)
	if len(h.server) > 0 {
		dst = codec.AppendFieldLine(dst, codec.NameServer, h.server)
	}
	return codec.AppendFieldLines(dst, h.headFields(r))
}

// renderNothing is the Render of error pages, whose responses are
// rendered per request (their status and fields vary).
func renderNothing(dst []byte, _ *cache.Entry, _ *cache.Rep) []byte { return dst }

func (h *staticHandler) Serve(c *Ctx) {
	if h.scripts != nil {
		h.serveWithScripts(c)
		return
	}
	switch string(c.Req.Method) {
	case "GET", "HEAD":
	case "OPTIONS":
		c.Resp.Status = 204
		c.Resp.Add(hdrAllow, valAllowReadOnly)
		return
	default:
		h.fail(c, 405)
		c.Resp.Add(hdrAllow, valAllowReadOnly)
		return
	}
	h.serveFiles(c)
}

// serveFiles answers from the files under the root (try_files, or the
// request's path).
func (h *staticHandler) serveFiles(c *Ctx) {
	var ri reqInfo
	ri.scan(c.Req)
	if h.try != nil {
		h.serveTry(c, &ri)
		return
	}
	clean, dir, status := h.cleanRest(c, c.Rest)
	if status != 0 {
		h.fail(c, status)
		return
	}
	if len(c.Rest) == 1 && !endsWithSlash(c.Path) {
		dir = false // "/a" matched by route "/a": the router's Rest "/" is not the client's slash
	}
	e, err := h.entry(c, clean)
	if err != nil {
		h.loadFailed(c, &ri, err, clean, dir)
		return
	}
	h.serveClean(c, &ri, e, clean, dir)
}

// cleanRest decodes and cleans a path under the root (Ctx.Rest, or a
// try_files candidate) into c.Scratch: the clean path, whether it names a
// directory (a trailing slash), or the status that refuses it (hidden
// segments are 404 unless allowed).
func (h *staticHandler) cleanRest(c *Ctx, rest []byte) ([]byte, bool, int) {
	if len(rest) == 0 || rest[0] != '/' {
		return nil, false, 400
	}
	mark := len(c.Scratch)
	var status int
	c.Scratch, status = appendDecodedPath(c.Scratch, rest)
	if status != 0 {
		return nil, false, status
	}
	clean, dir, ok := cleanPath(c.Scratch[mark:len(c.Scratch):len(c.Scratch)])
	if !ok {
		return nil, false, 400
	}
	if !h.allowHidden && hasHiddenSegment(clean) {
		return nil, false, 404
	}
	return clean, dir, 0
}

// serveClean answers with the entry e of the clean path.
func (h *staticHandler) serveClean(c *Ctx, ri *reqInfo, e *cache.Entry, clean []byte, dir bool) {
	switch e.Kind {
	case cache.KindFile, cache.KindLarge:
		if dir {
			h.fail(c, 404) // "/file/": a file is not a directory
			return
		}
		h.serveEntry(c, ri, e)
	case cache.KindDir:
		if !dir {
			h.redirectToDir(c)
			return
		}
		h.serveDir(c, ri, clean)
	case cache.KindDenied:
		h.fail(c, 403)
	default:
		h.notFound(c, ri, clean)
	}
}

// entry returns the cache entry of the clean path (see get).
func (h *staticHandler) entry(c *Ctx, clean []byte) (*cache.Entry, error) {
	k := len(c.Scratch)
	c.Scratch = append(c.Scratch, h.keyPrefix...)
	c.Scratch = append(c.Scratch, clean...)
	return h.get(c, c.scratchSince(k), clean, nil)
}

// get returns key's entry: from the loop's view of the cache, or from the
// result a finished load left on the exchange, or by loading it. A
// page of nil loads the clean path under the root with the route's
// profile; else it loads the error page. err is cache.ErrPending when the
// exchange waits for the load (the handler must return without an
// answer), cache.ErrBusy or cache.ErrClosed when the file must be served
// without the cache, or another error.
func (h *staticHandler) get(c *Ctx, key, clean []byte, page *errPage) (*cache.Entry, error) {
	sc := c.Cache
	var v *cache.View
	if sc != nil {
		v = sc.CacheView(h.cache)
	}
	if v != nil {
		if e, ok := v.Lookup(key); ok {
			return e, nil
		}
		if e, err, ok := sc.CacheLoaded(key); ok {
			return e, err
		}
	}
	req := cache.Request{Key: key, SyncMax: staticSyncMax}
	if page != nil {
		req.Path, req.ContentType, req.Profile = []byte(page.path), string(page.ct), &h.errProf
	} else {
		p := len(c.Scratch)
		c.Scratch = append(c.Scratch, h.rootPrefix...)
		c.Scratch = append(c.Scratch, clean[1:]...)
		req.Path, req.ContentType, req.Profile = c.scratchSince(p), string(h.mime.lookup(clean)), &h.prof
	}
	if v == nil {
		return h.shared.load(h.cache, &req)
	}
	req.Done = sc.CacheDone(key)
	e, err := v.Load(&req)
	if err == cache.ErrPending {
		c.Resp.Pending = &h.retry
	}
	return e, err
}

// loadFailed answers a request whose entry could not be had from the
// cache: nothing while the exchange waits for a load, the file read
// directly when the cache is busy or closed, else 500.
func (h *staticHandler) loadFailed(c *Ctx, ri *reqInfo, err error, clean []byte, dir bool) {
	switch {
	case errors.Is(err, cache.ErrPending):
	case errors.Is(err, cache.ErrBusy), errors.Is(err, cache.ErrClosed):
		h.serveUncached(c, ri, clean, dir)
	case errors.Is(err, cache.ErrUnsettled):
		// Being rewritten: no whole version to send yet.
		c.Error(503)
		c.Resp.Add(hdrRetryAfter, retryAfterOne)
	default:
		h.fail(c, 500)
	}
}

// serveDir answers for a directory named with its trailing slash: its
// first index file, else a listing when browsing is on, else 404.
func (h *staticHandler) serveDir(c *Ctx, ri *reqInfo, clean []byte) {
	for _, name := range h.index {
		start := len(c.Scratch)
		c.Scratch = append(c.Scratch, clean...)
		if len(clean) > 1 {
			c.Scratch = append(c.Scratch, '/')
		}
		c.Scratch = append(c.Scratch, name...)
		p := c.scratchSince(start)
		e, err := h.entry(c, p)
		if err != nil {
			h.loadFailed(c, ri, err, p, false)
			return
		}
		switch e.Kind {
		case cache.KindFile, cache.KindLarge:
			h.serveEntry(c, ri, e)
			return
		case cache.KindDenied:
			h.fail(c, 403)
			return
		}
	}
	if h.browse {
		h.serveListing(c, ri, clean)
		return
	}
	h.fail(c, 404)
}

// notFound answers for a path that does not exist: the SPA fallback file
// for requests that look like page loads, else 404.
func (h *staticHandler) notFound(c *Ctx, ri *reqInfo, clean []byte) {
	if h.spa == nil || !(ri.acceptsHTML || !hasExtension(clean)) {
		h.fail(c, 404)
		return
	}
	e, err := h.entry(c, h.spa)
	if err != nil {
		h.loadFailed(c, ri, err, h.spa, false)
		return
	}
	switch e.Kind {
	case cache.KindFile, cache.KindLarge:
		h.serveEntry(c, ri, e)
	default:
		h.fail(c, 404)
	}
}

// hasExtension reports whether the last segment of a clean path has a dot
// after its first byte ("/a/b.js", not "/a/b" or "/a/.well").
func hasExtension(p []byte) bool {
	for i := len(p) - 1; i > 0 && p[i] != '/'; i-- {
		if p[i] == '.' && p[i-1] != '/' {
			return true
		}
	}
	return false
}

// fail answers status with the route's error page for it, or the fixed
// error response.
func (h *staticHandler) fail(c *Ctx, status int) {
	if p := h.errorPage(status); p != nil {
		e, err := h.get(c, p.key, nil, p)
		if errors.Is(err, cache.ErrPending) {
			return
		}
		if err == nil && h.serveErrorPage(c, p, e, status) {
			return
		}
	}
	c.Error(status)
}

func (h *staticHandler) errorPage(status int) *errPage {
	if h.errPages == nil || status < 400 || status > 599 || h.errPages[status-400].path == "" {
		return nil
	}
	return &h.errPages[status-400]
}

// serveErrorPage answers status with the page's file, and reports whether
// it could.
func (h *staticHandler) serveErrorPage(c *Ctx, p *errPage, e *cache.Entry, status int) bool {
	var f *os.File
	var version cache.Version
	size := e.Size
	switch e.Kind {
	case cache.KindFile:
	case cache.KindLarge:
		var err error
		if f, err = os.OpenFile(p.path, openFlags, 0); err != nil {
			return false
		}
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			_ = f.Close()
			return false
		}
		size, version = fi.Size(), cache.VersionOf(fi)
	default:
		return false
	}
	c.resetResp()
	c.Resp.Status = status
	c.Resp.Add(codec.NameContentType, p.ct)
	c.Resp.Entry = e
	if f != nil {
		c.Resp.File, c.Resp.FileSize = f, size
		c.Resp.FileVersion = version
	} else {
		c.Resp.Body = e.Body
	}
	return true
}

// resetResp clears the response for another answer, closing a File and
// keeping Close.
func (c *Ctx) resetResp() {
	if c.Resp.File != nil {
		_ = c.Resp.File.Close()
	}
	closeConn := c.Resp.Close
	c.Resp.Reset()
	c.Resp.Close = closeConn
}

// serveEntry answers with a cached file.
func (h *staticHandler) serveEntry(c *Ctx, ri *reqInfo, e *cache.Entry) {
	if h.serveScriptEntry(c, e) {
		return
	}
	var rep *cache.Rep
	if ri.multiRange {
		rep = e.Identity() // multipart/byteranges bodies are of the identity representation
	} else {
		rep = e.SelectAccepted(&ri.ae)
	}
	fr := fileRep{
		entry:  e,
		head:   rep.Head,
		hpack:  rep.HPACK,
		fields: rep.Fields,
		etag:   rep.ETag,
		enc:    rep.Encoding,
		base:   e.ETag,
		mtime:  e.ModTime,
		size:   rep.Size,
		body:   rep.Body,
		blob:   rep.Blob,
		vary:   e.Negotiable(),
	}
	if rep.Body == nil {
		fr.version = e.Version()
		// A file larger than cache.max_file_bytes: open it now, and make
		// sure it is still the version the entry describes.
		f, fi, status := h.openPath(e.Path)
		if status != 0 {
			e.Invalidate()
			h.fail(c, status)
			return
		}
		if fi.IsDir() || !e.SameFile(fi) {
			e.Invalidate()
			if fi.IsDir() {
				_ = f.Close()
				h.fail(c, 404)
				return
			}
			h.openedRep(c, &fr, f, fi, []byte(e.ContentType))
		}
		if h.unsettled(c, f, fi) {
			return
		}
		fr.file = f
	}
	h.respond(c, ri, &fr)
}

// serveUncached answers from the file system directly (the cache is busy
// or closed): a whole regular file, a redirect for a directory named
// without its slash, or an error.
func (h *staticHandler) serveUncached(c *Ctx, ri *reqInfo, clean []byte, dir bool) {
	if h.scripts != nil && !dir && isScript(clean) {
		h.scripts.ServeScript(c, clean, nil) // a script is run, never read out, whatever the cache's state
		return
	}
	rel := "."
	if len(clean) > 1 {
		rel = string(clean[1:])
	}
	f, fi, status := h.open(rel)
	switch {
	case status != 0:
		h.fail(c, status)
		return
	case fi.IsDir():
		_ = f.Close()
		if !dir {
			h.redirectToDir(c)
			return
		}
		h.fail(c, 503)
		return
	case dir:
		_ = f.Close()
		h.fail(c, 404)
		return
	}
	if h.unsettled(c, f, fi) {
		return
	}
	var fr fileRep
	h.openedRep(c, &fr, f, fi, h.mime.lookup(clean))
	fr.file = f
	h.respond(c, ri, &fr)
}

// unsettled reports whether the file opened to be streamed was modified
// within its racy window (cache.Version.Racy): a write to it now might
// not change its mtime, so the reads that stream it could not tell a
// mixed body. Then it closes f, and the exchange waits until the window
// passed (a few milliseconds) and is served again, as a cache miss waits
// for its load; without the cache's wake-ups (the cache busy or closed)
// it answers 503 with Retry-After.
func (h *staticHandler) unsettled(c *Ctx, f *os.File, fi os.FileInfo) bool {
	d := cache.VersionOf(fi).SettleWait(time.Now().UnixNano())
	if d == 0 {
		return false
	}
	_ = f.Close()
	if c.Cache == nil {
		c.Error(503)
		c.Resp.Add(hdrRetryAfter, retryAfterOne)
		return true
	}
	key := []byte(settleKeyPrefix + f.Name())
	c.Cache.CacheLoaded(key) // drop what an earlier wait of this exchange left
	done := c.Cache.CacheDone(key)
	time.AfterFunc(d, func() { done(nil, cache.ErrUnsettled) })
	c.Resp.Pending = &h.retry
	return true
}

// settleKeyPrefix keeps the keys of settling waits apart from cache keys.
const settleKeyPrefix = "\x00settle:"

var retryAfterOne = []byte("1")

// redirectToDir answers 301 to the normalised request path with a
// trailing slash and the query. A normal path never starts with "//", so
// the Location can never be a network-path reference ("//host/").
func (h *staticHandler) redirectToDir(c *Ctx) {
	mark := len(c.Scratch)
	c.Scratch = codec.AppendLocationSafe(c.Scratch, c.Path)
	c.Scratch = append(c.Scratch, '/')
	if len(c.Req.Query) > 0 {
		c.Scratch = append(c.Scratch, '?')
		c.Scratch = codec.AppendLocationSafe(c.Scratch, c.Req.Query)
	}
	c.Resp.Status = 301
	c.Resp.Add(hdrLocation, c.scratchSince(mark))
	c.Resp.Add(codec.NameContentType, ctTextPlain)
	c.Resp.Body = redirectBodies[301]
}

// keyPrefixFor returns the cache key prefix of a static route: unique per
// Build (gen) and per route (n), so that routes with different settings
// over one root, and the routers before and after a reload, never share
// an entry.
func keyPrefixFor(gen uint64, n int) string {
	return strconv.FormatUint(gen, 36) + "." + strconv.Itoa(n) + ":"
}
