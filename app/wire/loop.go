package wire

import (
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"

	"gale/cache"
	"gale/handlers"
	"gale/proxy"
)

// Loop holds the per-loop services that every engine uses. All fields but
// Stats, Meters and Conns are touched only on that loop.
type Loop struct {
	pcache  *handlers.CacheLoop // the route caches' views on this loop (made on first use)
	Shared  *Shared
	EL      gnet.EventLoop
	Out     []byte    // response bytes of one OnTraffic call, written with one Write
	Iov     [][]byte  // Out split around large bodies referenced in place
	Bodies  []Segment // large bodies between Out's bytes
	FileBuf []byte    // small file bodies are read here
	Alog    []byte    // access log lines not yet handed to the writer
	Stats   Stats
	Meters  Meters      // per-route counters; written by the loop only, like Stats
	Conns   ConnGauges  // connections by protocol and state; likewise
	Resets  Rate        // HTTP/2 streams reset by the loop's clients (resetrate.go)
	Forward AddrLoad    // HTTP/2 streams forwarded upstream and not ended, per client address (addrload.go)
	view    *cache.View // this loop's view of the file cache; nil until a static request
	proxy   *proxy.Loop // the proxy state of this loop; nil until a proxied request
}

// Segment places an in-memory body (referenced, not copied) at offset At
// of the loop's Out buffer. With Blob set, Body's bytes are also Blob's
// from Off, and the engine may hand the socket those pages (sendfile)
// instead of copying Body.
type Segment struct {
	At   int
	Body []byte
	Blob *cache.Blob
	Off  int64
}

// Init makes l the services of event loop el (nil in tests that drive an
// engine without gnet), reading sh.
func (l *Loop) Init(sh *Shared, el gnet.EventLoop) {
	l.Shared, l.EL, l.Out = sh, el, make([]byte, 0, 64<<10)
}

// CacheView returns the loop's view of the file cache c, made on first
// use and again when the cache changed.
func (l *Loop) CacheView(c *cache.Cache) *cache.View {
	if l.view == nil || l.view.Cache() != c {
		l.view = c.NewView()
	}
	return l.view
}

// Proxy returns the loop's proxy state, made on the first proxied
// request. It runs on the loop.
func (l *Loop) Proxy() *proxy.Loop {
	if l.proxy == nil {
		l.proxy = l.Shared.Proxies.For(l, l.Shared.Log)
	}
	return l.proxy
}

// Local implements handlers.Exchange.Local for the engines' exchanges on
// the loop: the state of kind k kept on this loop, made on first use.
func (l *Loop) Local(k handlers.LocalKind) any {
	switch k {
	case handlers.LocalUpstreams:
		return l.Proxy()
	case handlers.LocalProxyCache:
		if l.pcache == nil {
			l.pcache = handlers.NewCacheLoop()
		}
		return l.pcache
	}
	return nil
}

// FlushAccessLog hands the access log lines gathered on the loop to the
// writer.
func (l *Loop) FlushAccessLog() {
	if len(l.Alog) == 0 || l.Shared.Access == nil {
		return
	}
	l.Alog = l.Shared.Access.Submit(l.Alog)
}

// CacheWait is where a load of the file cache that an exchange waits for
// leaves its result, for each engine's handlers.CacheAccess: the load's
// Done callback stores it from a cache worker (Store, concurrency-safe);
// everything else runs on the exchange's loop. Ready, Loaded and Clear
// take a nil *CacheWait for one that never waited.
type CacheWait struct {
	result atomic.Pointer[cacheResult]
	key    []byte // the key of the load last waited for
}

// cacheResult is a finished load of the file cache.
type cacheResult struct {
	entry *cache.Entry
	err   error
}

// Expect notes that the exchange waits for the load of key.
func (w *CacheWait) Expect(key []byte) { w.key = append(w.key[:0], key...) }

// Store keeps a finished load's result. Concurrency-safe.
func (w *CacheWait) Store(e *cache.Entry, err error) {
	w.result.Store(&cacheResult{entry: e, err: err})
}

// Ready reports whether a finished load's result is kept
// (handlers.CacheAccess.CacheReady).
func (w *CacheWait) Ready() bool { return w != nil && w.result.Load() != nil }

// Loaded takes the kept result when it is of the load of key
// (handlers.CacheAccess.CacheLoaded).
func (w *CacheWait) Loaded(key []byte) (*cache.Entry, error, bool) {
	if !w.Ready() || string(w.key) != string(key) {
		return nil, nil, false
	}
	r := w.result.Swap(nil)
	return r.entry, r.err, true
}

// Clear drops a result no one took: it belonged to the request that was
// answered.
func (w *CacheWait) Clear() {
	if w.Ready() {
		w.result.Store(nil)
	}
}
