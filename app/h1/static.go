package h1

import (
	"errors"
	"time"

	"gale/app/wire"
	"gale/cache"
	"gale/handlers"
)

// The file cache's place in the server: one cache.Cache per Server (made
// in New, purged on every reload, closed when Run returns), one
// cache.View per event loop (made on the loop's first static request),
// and, per connection (HTTP/1.1 serves one exchange at a time), the
// handlers.CacheAccess methods below, through which a static route waits
// for a file read off the loop.
//
// Waiting: when a load is pending, the static handler answers with its
// continuation (handlers.Pending), and the connection keeps the request
// (pending.go). The cache's worker calls the connection's Done callback,
// which stores the result in an atomic and wakes the connection; the
// continuation's Resume then sees CacheReady and serves the request
// again, and the handler finds the entry in the cache or takes the stored
// result (an entry the cache did not keep).

var _ handlers.CacheAccess = (*Conn)(nil)

// staticConn is a connection's state for static routes.
type staticConn struct {
	done  cache.Done     // the Done callback, made once
	wait  wire.CacheWait // where done stores a finished load, for the key it was last handed for
	asked int64          // when done was handed for a load (unix ns); 0 once the response was written
}

// CacheView implements handlers.CacheAccess: the loop's view over c.
func (cs *Conn) CacheView(c *cache.Cache) *cache.View {
	return cs.Loop.CacheView(c)
}

// CacheDone implements handlers.CacheAccess.
func (cs *Conn) CacheDone(key []byte) cache.Done {
	st := &cs.st
	st.wait.Expect(key)
	st.asked = time.Now().UnixNano()
	if st.done == nil {
		gc := cs.C
		st.done = func(e *cache.Entry, err error) {
			// On a cache worker: store, then wake the loop.
			st.wait.Store(e, err)
			_ = gc.Wake(nil) // a no-op once the connection closed
		}
	}
	return st.done
}

// CacheReady implements handlers.CacheAccess.
func (cs *Conn) CacheReady() bool { return cs.st.wait.Ready() }

// CacheLoaded implements handlers.CacheAccess.
func (cs *Conn) CacheLoaded(key []byte) (*cache.Entry, error, bool) {
	return cs.st.wait.Loaded(key)
}

// forgetLoad runs once a response was written: a load result it did not
// take belonged to that exchange only, and no load is awaited any more.
func (cs *Conn) forgetLoad() {
	cs.st.wait.Clear()
	cs.st.asked = 0
}

// loadOverdue reports, from the sweep, whether the connection's pending
// exchange has waited for a file load longer than limit.
func (cs *Conn) loadOverdue(now, limit int64) bool {
	return cs.st.asked != 0 && !cs.st.wait.Ready() && now-cs.st.asked > limit
}

// appendFileBody appends a body read from a file or made of parts
// (resp.Parts, resp.File from resp.FileOffset) to the loop's output: a
// body that fits in server.max_buffered_output, read on the loop (from
// the page cache: files this small are normally served from the file
// cache, which reads them off the loop).
func (cs *Conn) appendFileBody(resp *handlers.Response, size int64) error {
	l := cs.loop
	bmark := len(l.Bodies)
	err := cs.readFileBody(resp, size)
	if err != nil {
		clear(l.Bodies[bmark:])
		l.Bodies = l.Bodies[:bmark]
	}
	return err
}

func (cs *Conn) readFileBody(resp *handlers.Response, size int64) error {
	l := cs.loop
	if resp.Parts == nil {
		l.Out = wire.GrowLen(l.Out, int(size))
		_, err := resp.FileVersion.ReadAt(resp.File, l.Out[len(l.Out)-int(size):], resp.FileOffset)
		return err
	}
	for _, p := range resp.Parts {
		switch {
		case p.Data == nil:
			if resp.File == nil {
				return errNoFile
			}
			l.Out = wire.GrowLen(l.Out, int(p.Len))
			if _, err := resp.FileVersion.ReadAt(resp.File, l.Out[len(l.Out)-int(p.Len):], p.Off); err != nil {
				return err
			}
		case len(p.Data) <= inlineBody:
			l.Out = append(l.Out, p.Data...)
		default:
			l.Bodies = append(l.Bodies, wire.Segment{At: len(l.Out), Body: p.Data})
		}
	}
	return nil
}

var errNoFile = errors.New("app: a body part refers to a file, but the response has none")
