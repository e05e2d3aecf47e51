package app

import (
	"errors"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"

	"gale/cache"
	"gale/config"
	"gale/fds"
	"gale/handlers"
)

// The file cache's place in the server: one cache.Cache per Server (made
// in New, purged on every reload, closed when Run returns), one
// cache.View per event loop (made on the loop's first static request),
// and, per connection (HTTP/1.1 serves one exchange at a time), the
// handlers.CacheAccess methods below, through which a static route waits
// for a file read off the loop.
//
// Waiting: when a load is pending, the handler calls CacheWait and
// answers nothing. serve then leaves the request's bytes unconsumed
// (staticAnswered), flushes the responses before it, and parses nothing
// further. The cache's worker calls the connection's Done callback, which
// stores the result in an atomic and wakes the connection; onTraffic
// (staticResume) then serves the same request again, and the handler
// finds the entry in the cache or takes the stored result (an entry the
// cache did not keep). The request bytes stay in gnet's inbound buffer
// all along, so nothing of the request is copied.

var _ handlers.CacheAccess = (*conn)(nil)

// staticConn is a connection's state for static routes.
type staticConn struct {
	done    cache.Done                  // the Done callback, made once
	result  atomic.Pointer[cacheResult] // a finished load, stored by done
	waitKey string                      // the key the waiting request waits for
	waiting bool                        // the request at the head of the input waits for a load
}

// cacheResult is the outcome of a load a connection waited for.
type cacheResult struct {
	e   *cache.Entry
	err error
}

// newFileCache makes the server's file cache, which counts the files it
// keeps open for queued loads in b.
func newFileCache(cfg *config.Config, b *fds.Budget) *cache.Cache {
	o := cache.FromConfig(cfg.Cache)
	o.Budget = b
	return cache.New(o)
}

// cacheNotes reports cache settings a reload cannot change.
func cacheNotes(old, cfg *config.Config) []string {
	if old.Cache != cfg.Cache {
		return []string{"cache settings changed: restart gale to apply them"}
	}
	return nil
}

// CacheView implements handlers.CacheAccess: the loop's view over c.
func (cs *conn) CacheView(c *cache.Cache) *cache.View {
	l := cs.loop
	if l.view == nil || l.view.Cache() != c {
		l.view = c.NewView()
	}
	return l.view
}

// CacheDone implements handlers.CacheAccess.
func (cs *conn) CacheDone() cache.Done {
	if cs.st.done == nil {
		gc := cs.c
		st := &cs.st
		cs.st.done = func(e *cache.Entry, err error) {
			// On a cache worker: store, then wake the loop.
			st.result.Store(&cacheResult{e: e, err: err})
			_ = gc.Wake(nil) // a no-op once the connection closed
		}
	}
	return cs.st.done
}

// CacheLoaded implements handlers.CacheAccess.
func (cs *conn) CacheLoaded(key []byte) (*cache.Entry, error, bool) {
	r := cs.st.result.Load()
	if r == nil || cs.st.waitKey != string(key) {
		return nil, nil, false
	}
	cs.st.result.Store(nil)
	return r.e, r.err, true
}

// CacheWait implements handlers.CacheAccess.
func (cs *conn) CacheWait(key []byte) {
	cs.st.waiting = true
	cs.st.waitKey = string(key)
}

// staticAnswered runs after each request answer() served. It reports
// whether that request waits for a load (serve must leave it unconsumed
// and stop), and otherwise forgets a stored load result: it belonged to
// this request.
func (cs *conn) staticAnswered() bool {
	if cs.st.waiting {
		return true
	}
	if cs.st.result.Load() != nil {
		cs.st.result.Store(nil)
	}
	return false
}

// staticResume runs on traffic while a request waits for a load: it keeps
// waiting (bounding the input that piles up meanwhile) until the load
// finished, then serves the request again.
func (cs *conn) staticResume() gnet.Action {
	if cs.st.result.Load() == nil {
		if cs.inboundBuffered() > maxPendingInput {
			return gnet.Close
		}
		return gnet.None
	}
	cs.st.waiting = false
	if cs.closeAfter && !cs.closing {
		// A graceful stop began while the request waited: it has not
		// been answered yet, so serve it (answer adds "Connection:
		// close" while the server drains) rather than drop it.
		cs.closeAfter = false
	}
	return cs.serve()
}

// appendFileBody appends a body read from a file or made of parts
// (resp.Parts, resp.File from resp.FileOffset) to the loop's output: a
// body that fits in server.max_buffered_output, read on the loop (from
// the page cache: files this small are normally served from the file
// cache, which reads them off the loop).
func (cs *conn) appendFileBody(resp *handlers.Response, size int64) error {
	l := cs.loop
	bmark := len(l.bodies)
	err := cs.readFileBody(resp, size)
	if err != nil {
		clear(l.bodies[bmark:])
		l.bodies = l.bodies[:bmark]
	}
	return err
}

func (cs *conn) readFileBody(resp *handlers.Response, size int64) error {
	l := cs.loop
	if resp.Parts == nil {
		l.out = growLen(l.out, int(size))
		_, err := resp.File.ReadAt(l.out[len(l.out)-int(size):], resp.FileOffset)
		return err
	}
	for _, p := range resp.Parts {
		switch {
		case p.Data == nil:
			if resp.File == nil {
				return errNoFile
			}
			l.out = growLen(l.out, int(p.Len))
			if _, err := resp.File.ReadAt(l.out[len(l.out)-int(p.Len):], p.Off); err != nil {
				return err
			}
		case len(p.Data) <= inlineBody:
			l.out = append(l.out, p.Data...)
		default:
			l.bodies = append(l.bodies, segment{at: len(l.out), body: p.Data})
		}
	}
	return nil
}

var errNoFile = errors.New("app: a body part refers to a file, but the response has none")
