package handlers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

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

// staticHandler serves files under a root directory. It is immutable
// after newStatic and safe for concurrent use.
//
// This first version opens and stats the file on every request; the file
// cache (validators, ranges, compression, large-file streaming) will sit in
// front of open, and the response shape (Content-Type, Last-Modified,
// Cache-Control, File/FileSize) stays the same.
type staticHandler struct {
	rootPath     string   // absolute, with symbolic links resolved
	rootPrefix   string   // rootPath ending in "/"
	root         *os.Root // rootPath held open: opens through it cannot leave it
	index        []string // index file names, tried in order
	allowHidden  bool     // serve dot-files and dot-directories
	symlinks     symlinkMode
	cacheControl []byte // Cache-Control value; nil for none
	mime         *mimeTable
}

var _ Handler = (*staticHandler)(nil)

func newStatic(sc *config.Static, mime *mimeTable) (*staticHandler, error) {
	h := &staticHandler{mime: mime}
	switch sc.Hidden {
	case "", "deny":
	case "allow":
		h.allowHidden = true
	default:
		return nil, fmt.Errorf("%w: hidden %q (want deny or allow)", ErrBadStatic, sc.Hidden)
	}
	switch sc.FollowSymlinks {
	case "", "inside_root":
		h.symlinks = symlinksInsideRoot
	case "always":
		h.symlinks = symlinksAlways
	case "never":
		h.symlinks = symlinksNever
	default:
		return nil, fmt.Errorf("%w: follow_symlinks %q (want inside_root, always or never)", ErrBadStatic, sc.FollowSymlinks)
	}
	switch {
	case sc.Browse:
		return nil, fmt.Errorf("%w: browse: not supported yet", ErrBadStatic)
	case sc.SPAFallback != "":
		return nil, fmt.Errorf("%w: spa_fallback: not supported yet", ErrBadStatic)
	case len(sc.ErrorPages) > 0:
		return nil, fmt.Errorf("%w: error_pages: not supported yet", ErrBadStatic)
	}
	for _, name := range sc.Index {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
			return nil, fmt.Errorf("%w: index %q must be a plain file name", ErrBadStatic, name)
		}
	}
	h.index = sc.Index
	if sc.CacheControl != "" {
		if strings.ContainsAny(sc.CacheControl, "\r\n\x00") {
			return nil, fmt.Errorf("%w: cache_control has a control byte", ErrBadStatic)
		}
		h.cacheControl = []byte(sc.CacheControl)
	}
	if !filepath.IsAbs(sc.Root) {
		return nil, fmt.Errorf("%w: root %q is not absolute", ErrBadStatic, sc.Root)
	}
	real, err := filepath.EvalSymlinks(sc.Root)
	if err != nil {
		return nil, fmt.Errorf("%w: root: %w", ErrBadStatic, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("%w: root: %w", ErrBadStatic, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: root %q is not a directory", ErrBadStatic, sc.Root)
	}
	h.root, err = os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("%w: root: %w", ErrBadStatic, err)
	}
	h.rootPath = real
	h.rootPrefix = strings.TrimSuffix(real, "/") + "/"
	return h, nil
}

func (h *staticHandler) close() error { return h.root.Close() }

func (h *staticHandler) Serve(c *Ctx) {
	switch string(c.Req.Method) {
	case "GET", "HEAD":
	case "OPTIONS":
		c.Resp.Status = 204
		c.Resp.Add(hdrAllow, valAllowReadOnly)
		return
	default:
		c.Error(405)
		c.Resp.Add(hdrAllow, valAllowReadOnly)
		return
	}
	mark := len(c.Scratch)
	f, fi, ct, status := h.resolve(c)
	// The decoded path in Scratch is not referenced by the response.
	c.Scratch = c.Scratch[:mark]
	switch {
	case status == 301:
		h.redirectToDir(c)
	case status != 0:
		c.Error(status)
	default:
		h.serveFile(c, f, fi, ct)
	}
}

// resolve maps c.Rest to an open regular file and its Content-Type, or to
// a status: 301 for a directory named without its trailing slash, else an
// error status. It uses c.Scratch above its length for the decoded path.
func (h *staticHandler) resolve(c *Ctx) (f *os.File, fi os.FileInfo, ct []byte, status int) {
	rest := c.Rest
	if len(rest) == 0 || rest[0] != '/' {
		return nil, nil, nil, 400
	}
	mark := len(c.Scratch)
	c.Scratch, status = appendDecodedPath(c.Scratch, rest)
	if status != 0 {
		return nil, nil, nil, status
	}
	clean, dir, ok := cleanPath(c.Scratch[mark:])
	if !ok {
		return nil, nil, nil, 400
	}
	if len(rest) == 1 && !endsWithSlash(c.Req.Path) {
		dir = false // "/a" matched by route "/a": the router's Rest "/" is not the client's slash
	}
	if !h.allowHidden && hasHiddenSegment(clean) {
		return nil, nil, nil, 404
	}
	f, fi, status = h.open(clean)
	if status != 0 {
		return nil, nil, nil, status
	}
	if !fi.IsDir() {
		if dir {
			_ = f.Close()
			return nil, nil, nil, 404 // "/file/": a file is not a directory
		}
		return f, fi, h.mime.lookup(clean), 0
	}
	_ = f.Close()
	if !dir {
		return nil, nil, nil, 301
	}
	for _, name := range h.index {
		// clean + "/" + name, in Scratch after clean.
		start := len(c.Scratch)
		c.Scratch = append(c.Scratch, clean...)
		if len(clean) > 1 {
			c.Scratch = append(c.Scratch, '/')
		}
		c.Scratch = append(c.Scratch, name...)
		p := c.Scratch[start:]
		f, fi, status = h.open(p)
		switch {
		case status == 404:
			continue
		case status != 0:
			return nil, nil, nil, status
		case fi.IsDir():
			_ = f.Close()
			continue
		}
		return f, fi, h.mime.lookup(p), 0
	}
	return nil, nil, nil, 404 // directory listings come later
}

// open opens the clean path p (starting with "/") under the root with the
// route's symlink policy. It returns an open directory or regular file and
// its FileInfo, or a status: 404 for anything missing, refused or not a
// regular file or directory, 403 when permission is denied, 500 otherwise.
func (h *staticHandler) open(p []byte) (*os.File, os.FileInfo, int) {
	rel := "."
	if len(p) > 1 {
		rel = string(p[1:])
	}
	var (
		f   *os.File
		err error
	)
	switch h.symlinks {
	case symlinksAlways:
		f, err = os.OpenFile(h.rootPrefix+rel, openFlags, 0)
	case symlinksNever:
		if status := h.checkNoSymlinks(rel); status != 0 {
			return nil, nil, status
		}
		// Through the root: even if a component turned into a link since
		// the check, the open cannot leave the root.
		f, err = h.root.OpenFile(rel, openFlags, 0)
	default:
		f, err = h.root.OpenFile(rel, openFlags, 0)
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
			// os.Root refuses absolute links and links that leave the
			// root even briefly; resolve them and accept the target if it
			// is under the root.
			f, err = h.openResolved(rel)
		}
	}
	if err != nil {
		return nil, nil, statusForError(err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, 500
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, nil, 404 // FIFOs, sockets, devices
	}
	return f, fi, 0
}

// checkNoSymlinks returns 404 when any component of rel is a symbolic link.
func (h *staticHandler) checkNoSymlinks(rel string) int {
	if rel == "." {
		return 0
	}
	for i := 0; i <= len(rel); i++ {
		if i < len(rel) && rel[i] != '/' {
			continue
		}
		fi, err := h.root.Lstat(rel[:i])
		if err != nil {
			return statusForError(err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return 404
		}
	}
	return 0
}

// openResolved resolves every link in rel and opens the result through the
// root when it lies under it.
func (h *staticHandler) openResolved(rel string) (*os.File, error) {
	resolved, err := filepath.EvalSymlinks(h.rootPrefix + rel)
	if err != nil {
		return nil, err
	}
	if resolved == h.rootPath {
		return h.root.OpenFile(".", openFlags, 0)
	}
	inner, ok := strings.CutPrefix(resolved, h.rootPrefix)
	if !ok || inner == "" {
		return nil, errOutsideRoot
	}
	return h.root.OpenFile(inner, openFlags, 0)
}

var errOutsideRoot = errors.New("handlers: path resolves outside the root")

// statusForError maps a file-system error to a response status.
func statusForError(err error) int {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return 403
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR),
		errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.ENAMETOOLONG),
		errors.Is(err, errOutsideRoot):
		return 404
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Err != nil && !isErrno(pe.Err) {
		return 404 // os.Root's own refusals ("path escapes from parent")
	}
	return 500
}

func isErrno(err error) bool {
	var e syscall.Errno
	return errors.As(err, &e)
}

func endsWithSlash(p []byte) bool { return len(p) > 0 && p[len(p)-1] == '/' }

// serveFile answers 200 with f (an open regular file) as the body.
func (h *staticHandler) serveFile(c *Ctx, f *os.File, fi os.FileInfo, ct []byte) {
	c.Resp.Status = 200
	c.Resp.Add(hdrContentType, ct)
	mark := len(c.Scratch)
	c.Scratch = codec.AppendHTTPDate(c.Scratch, fi.ModTime())
	c.Resp.Add(hdrLastModified, c.scratchSince(mark))
	if h.cacheControl != nil {
		c.Resp.Add(hdrCacheControl, h.cacheControl)
	}
	if size := fi.Size(); size > 0 {
		c.Resp.File, c.Resp.FileSize = f, size
	} else {
		_ = f.Close() // nothing to send
	}
}

// redirectToDir answers 301 to the request path with a trailing slash and
// the query. Leading slashes are collapsed to one so that the Location
// can never be a network-path reference ("//host/").
func (h *staticHandler) redirectToDir(c *Ctx) {
	p := c.Req.Path
	for len(p) > 1 && p[0] == '/' && p[1] == '/' {
		p = p[1:]
	}
	mark := len(c.Scratch)
	c.Scratch = appendURLSafe(c.Scratch, p)
	c.Scratch = append(c.Scratch, '/')
	if len(c.Req.Query) > 0 {
		c.Scratch = append(c.Scratch, '?')
		c.Scratch = appendURLSafe(c.Scratch, c.Req.Query)
	}
	c.Resp.Status = 301
	c.Resp.Add(hdrLocation, c.scratchSince(mark))
	c.Resp.Add(hdrContentType, ctTextPlain)
	c.Resp.Body = redirectBodies[301]
}
