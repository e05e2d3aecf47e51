package handlers

import (
	"errors"

	"gale/cache"
)

// try_files (nginx's, and Caddy's file matcher): the candidates are path
// templates under the root, tried in order. A candidate without a trailing
// slash is taken when it names a file, one with a trailing slash when it
// names a directory (which is then served as a directory: its index file,
// a listing, or 404). The last candidate is the fallback, served whatever
// it is (404, with the route's error page, when it does not exist), unless
// the list ends with "=CODE": then that status answers when no candidate
// exists.
//
// Each candidate is normalised as a request path is (a candidate that
// would climb above "/" is a bad request, so none leaves the root) and
// looked up through the file cache like any request path, so a candidate
// that is being loaded off the loop makes the exchange wait (see
// loadRetry): when the load has finished, Serve walks the list again,
// finding the candidates before it in the cache (as entries or as
// remembered misses) and the loaded one in the cache or in the result the
// load left on the exchange, which it serves without looking it up again.

// serveTry answers with the first try_files candidate that exists.
func (h *staticHandler) serveTry(c *Ctx, ri *reqInfo) {
	for i := range h.try {
		p, ok := h.tryPath(c, i)
		if !ok {
			h.fail(c, 400)
			return
		}
		clean, dir, status := h.cleanRest(c, p)
		last := i == len(h.try)-1 && h.tryStatus == 0
		if status != 0 {
			if last {
				h.fail(c, status)
				return
			}
			continue
		}
		e, err := h.entry(c, clean)
		switch {
		case errors.Is(err, cache.ErrPending):
			return // Resume walks the list again
		case err != nil && last:
			h.loadFailed(c, ri, err, clean, dir)
			return
		case err != nil:
			if found, status := h.tryUncached(clean, dir); found || status != 0 {
				h.loadFailed(c, ri, err, clean, dir)
				return
			}
			continue
		}
		if last || tryFound(e, dir) {
			h.serveClean(c, ri, e, clean, dir)
			return
		}
	}
	h.fail(c, h.tryStatus)
}

// tryPath expands candidate i into c.Scratch and normalises it; false
// when it cannot be (a ".." above "/").
func (h *staticHandler) tryPath(c *Ctx, i int) ([]byte, bool) {
	p, flags, ok := c.expandPath(&h.try[i])
	if !ok || flags == 0 {
		return p, ok
	}
	at := len(c.Scratch) // a file is named by the routing form
	c.Scratch = appendRouting(c.Scratch, p)
	return c.scratchSince(at), true
}

// tryFound reports whether a candidate's entry is what it names: a file
// for a path without a trailing slash, a directory for one with it.
func tryFound(e *cache.Entry, dir bool) bool {
	switch e.Kind {
	case cache.KindFile, cache.KindLarge:
		return !dir
	case cache.KindDir:
		return dir
	case cache.KindDenied:
		return true // answered 403, as a request for it would be
	}
	return false
}

// tryUncached decides a candidate when the cache cannot (busy or closed)
// from the file system: whether it exists as named, or the status of a
// failed open.
func (h *staticHandler) tryUncached(clean []byte, dir bool) (bool, int) {
	rel := "."
	if len(clean) > 1 {
		rel = string(clean[1:])
	}
	f, fi, status := h.open(rel)
	if status != 0 {
		if status == 404 {
			return false, 0
		}
		return false, status
	}
	_ = f.Close()
	return fi.IsDir() == dir, 0
}
