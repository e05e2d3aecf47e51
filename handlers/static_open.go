package handlers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Opening files under a static route's root with its symbolic-link
// policy. Every open goes through here: the cache's loads (Profile.Open,
// sidecars included), large files streamed per request, listings, and
// the uncached path.

// openAbs is the route's cache.Profile.Open: it opens an absolute path
// under the root (as built by get: rootPrefix + the clean path without
// its slash) with the route's link policy. Refusals are reported as
// fs.ErrNotExist or fs.ErrPermission so that the cache records them as
// negative entries. Safe for concurrent use; it does not block on FIFOs.
func (h *staticHandler) openAbs(path string) (*os.File, error) {
	rel, ok := h.relPath(path)
	if !ok {
		return nil, fs.ErrNotExist
	}
	f, err := h.openRel(rel)
	if err != nil {
		switch statusForError(err) {
		case 404:
			return nil, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
		case 403:
			return nil, fmt.Errorf("%w: %w", fs.ErrPermission, err)
		}
		return nil, err
	}
	return f, nil
}

// relPath maps an absolute path under the root to the name os.Root takes.
func (h *staticHandler) relPath(path string) (string, bool) {
	if path == h.rootPath {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, h.rootPrefix)
	if !ok {
		return "", false
	}
	if rel == "" {
		rel = "."
	}
	return rel, true
}

// openPath opens an absolute path under the root (an entry's Path) like
// open does.
func (h *staticHandler) openPath(path string) (*os.File, os.FileInfo, int) {
	rel, ok := h.relPath(path)
	if !ok {
		return nil, nil, 404
	}
	return h.open(rel)
}

// open opens rel ("." for the root) under the root with the route's
// symlink policy. It returns an open directory or regular file and its
// FileInfo, or a status: 404 for anything missing, refused or not a
// regular file or directory, 403 when permission is denied, 500 otherwise.
func (h *staticHandler) open(rel string) (*os.File, os.FileInfo, int) {
	f, err := h.openRel(rel)
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

// openRel opens rel under the root with the route's symlink policy.
func (h *staticHandler) openRel(rel string) (*os.File, error) {
	switch h.symlinks {
	case symlinksAlways:
		return os.OpenFile(h.rootPrefix+rel, openFlags, 0)
	case symlinksNever:
		if err := h.checkNoSymlinks(rel); err != nil {
			return nil, err
		}
		// Through the root: even if a component turned into a link since
		// the check, the open cannot leave the root.
		return h.root.OpenFile(rel, openFlags, 0)
	}
	f, err := h.root.OpenFile(rel, openFlags, 0)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
		// os.Root refuses absolute links and links that leave the root
		// even briefly; resolve them and accept the target if it is
		// under the root.
		f, err = h.openResolved(rel)
	}
	return f, err
}

// errSymlink refuses a path with a symbolic link under follow_symlinks:
// never.
var errSymlink = errors.New("handlers: symbolic link refused")

// checkNoSymlinks fails when any component of rel is a symbolic link.
func (h *staticHandler) checkNoSymlinks(rel string) error {
	if rel == "." {
		return nil
	}
	for i := 0; i <= len(rel); i++ {
		if i < len(rel) && rel[i] != '/' {
			continue
		}
		fi, err := h.root.Lstat(rel[:i])
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return errSymlink
		}
	}
	return nil
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
		errors.Is(err, errOutsideRoot), errors.Is(err, errSymlink):
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
