package handlers

import (
	"bytes"
	"strconv"
	"time"

	"gale/codec"
	"gale/config"
	"gale/httpcache"
)

// The proxy cache (a route's cache section) is a layer in front of the
// handler that forwards (proxy, fastcgi, php scripts): it answers from
// its store what the store may answer (a hit is an ordinary Response,
// rendered like any other, with no allocation), and otherwise lets the
// handler forward through a recorder that wraps the exchange's sink and
// keeps what may be stored (package httpcache holds the RFC 9111 rules
// and the store). One request per key goes upstream at a time; the
// others wait for its answer, up to lock_timeout.

// CacheLoop is one event loop's state for the route caches: a view of
// each store and a key buffer. Owned by its loop.
type CacheLoop struct {
	views map[*httpcache.Store]*httpcache.View
	key   []byte
}

// NewCacheLoop returns an empty CacheLoop.
func NewCacheLoop() *CacheLoop {
	return &CacheLoop{views: map[*httpcache.Store]*httpcache.View{}, key: make([]byte, 0, 512)}
}

func (l *CacheLoop) view(s *httpcache.Store) *httpcache.View {
	v := l.views[s]
	if v == nil {
		v = s.NewView()
		l.views[s] = v
	}
	return v
}

// Cache-Status values (RFC 9211).
var (
	nameCacheStatus = []byte("Cache-Status")
	nameAge         = []byte("Age")
	csHit           = []byte("gale; hit")
	csMiss          = []byte("gale; fwd=miss")
	csMissStored    = []byte("gale; fwd=miss; stored")
	csStale         = []byte("gale; fwd=stale; fwd-status=304")
	csStaleStored   = []byte("gale; fwd=stale; stored")
	csStaleFwd      = []byte("gale; fwd=stale")
	csStaleError    = []byte("gale; hit; detail=stale-if-error")
	csStaleReval    = []byte("gale; hit; detail=stale-while-revalidate")
	csRequest       = []byte("gale; fwd=request")
	csRequestStored = []byte("gale; fwd=request; stored")
)

// unkeyedFields are request fields some applications read to change a
// response although no cache key includes them (cache poisoning): a
// cached route removes them before forwarding.
var unkeyedFields = []string{"X-Original-URL", "X-Rewrite-URL", "X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override", "X-Forwarded-Server", "X-Host"}

// cacheLayer is a route's cache in front of its forwarding handler.
type cacheLayer struct {
	inner   Handler
	scripts ScriptHandler // a php route's scripts, when the layer stands before them (inner is then nil)
	store   *httpcache.Store
	conf    config.ProxyCache
}

// newCacheLayer wraps h in the cache pc describes.
func newCacheLayer(h Handler, pc *config.ProxyCache) *cacheLayer {
	return &cacheLayer{inner: h, store: httpcache.NewStore(pc.MaxBytes), conf: *pc}
}

// withCache returns h behind route r's cache, or h when r has none.
func withCache(h Handler, r *Route) Handler {
	if r.Conf.Cache == nil {
		return h
	}
	return newCacheLayer(h, r.Conf.Cache)
}

// Unwrap returns the handler behind h's layers (a route's cache): the
// proxy or FastCGI handler the server starts and stops.
func Unwrap(h Handler) Handler {
	if l, ok := h.(*cacheLayer); ok && l.inner != nil {
		return l.inner
	}
	return h
}

// CacheStore returns the store of route r's cache, nil when it has
// none.
func (r *Route) CacheStore() *httpcache.Store {
	h := r.Handler
	if s, ok := h.(*staticHandler); ok {
		h, _ = s.scripts.(Handler)
	}
	if l, ok := h.(*cacheLayer); ok {
		return l.store
	}
	return nil
}

// Serve implements Handler.
func (l *cacheLayer) Serve(c *Ctx) { l.serve(c, true, script{}) }

// ServeScript implements ScriptHandler, for a php route's scripts.
func (l *cacheLayer) ServeScript(c *Ctx, name, info []byte) {
	l.serve(c, true, script{name, info, true})
}

// script is the script a php route's static handler asked to run (see
// ScriptHandler); set is false for the other route kinds.
type script struct {
	name, info []byte
	set        bool
}

// next hands c to what the layer stands before.
func (l *cacheLayer) next(c *Ctx, s script) {
	if s.set {
		l.scripts.ServeScript(c, s.name, s.info)
		return
	}
	l.inner.Serve(c)
}

// serve answers c from the store, or forwards it through a recorder:
// the methods that read (GET, HEAD) look up, the others invalidate.
func (l *cacheLayer) serve(c *Ctx, collapse bool, s script) {
	x := c.Exchange
	var cl *CacheLoop
	if x != nil {
		cl, _ = x.Local(LocalProxyCache).(*CacheLoop)
	}
	if cl == nil || c.Sink == nil || c.Req.Upgrade {
		l.next(c, s)
		return
	}
	c.Req.Headers = dropUnkeyed(c.Req.Headers)
	cl.key = appendCacheKey(cl.key[:0], c)
	v := cl.view(l.store)
	switch string(c.Req.Method) {
	case "GET", "HEAD":
		l.read(c, collapse, s, v, cl.key)
	case "OPTIONS", "TRACE": // safe: they change nothing stored
		l.next(c, s)
	default: // unsafe, or unknown and so not known to be safe (RFC 9111 section 4.4)
		v.Count(httpcache.Bypass)
		l.forward(c, s, &recorder{mode: recInvalidate, key: string(cl.key)})
	}
}

// read serves a GET or HEAD: a fresh stored response, else a stale one
// within its stale-while-revalidate window unless this request takes its
// revalidation turn, else a revalidation of a stale one, else a fetch.
// (Past the first cases, a stale entry still within its window means
// this request took the turn.)
func (l *cacheLayer) read(c *Ctx, collapse bool, s script, v *httpcache.View, key []byte) {
	rd := httpcache.ParseDirectives(c.Req.Headers)
	if rd.MaxAge < 0 && !rd.NoCache && c.Req.Header("Cache-Control") == nil && codec.EqualFold(c.Req.Header("Pragma"), "no-cache") {
		rd.NoCache = true
	}
	now := time.Now().UnixNano()
	e := pickVariant(v.Lookup(key), c.Req.Headers)
	switch {
	case e != nil && e.Fresh(now, &rd):
		v.Count(httpcache.Hit)
		serveHit(c, e, now, csHit)
	case e != nil && e.WhileRevalidating(now, &rd) && (c.Req.IsHead() || rd.OnlyIfCached || !e.TakeRevalidation()):
		v.Count(httpcache.Stale)
		serveHit(c, e, now, csStaleReval)
	case rd.OnlyIfCached:
		v.Count(httpcache.Miss)
		c.Error(504)
	case e != nil && e.Validatable() && !c.Req.IsHead():
		v.Count(httpcache.Revalidated)
		addValidators(c, e)
		l.forward(c, s, &recorder{mode: recRevalidate, key: string(key), stale: e, v: v, turn: e.WhileRevalidating(now, &rd)})
	case e != nil && e.WhileRevalidating(now, &rd): // its revalidation turn, without validators
		v.Count(httpcache.Revalidated)
		l.forward(c, s, &recorder{mode: recFill, key: string(key), stale: e, turn: true})
	default:
		l.fetch(c, collapse && !rd.NoCache && !c.Req.IsHead(), rd.NoCache, s, v, key)
	}
}

// fetch forwards a request nothing stored answers, as the one request
// for its key upstream when collapse is set (others then wait for it);
// validate says the client asked for validation (no-cache).
func (l *cacheLayer) fetch(c *Ctx, collapse, validate bool, s script, v *httpcache.View, key []byte) {
	var f *httpcache.Flight
	if collapse {
		x := c.Exchange
		var leader bool
		if f, leader = l.store.Join(key, l.conf.LockTimeout, x.Wake); !leader {
			v.Count(httpcache.Collapsed)
			c.Resp.Pending = &waiter{l: l, s: s, f: f, deadline: time.Now().Add(l.conf.LockTimeout), timer: time.AfterFunc(l.conf.LockTimeout, x.Wake)}
			return
		}
	}
	if validate {
		v.Count(httpcache.Bypass)
	} else {
		v.Count(httpcache.Miss)
	}
	l.forward(c, s, &recorder{mode: recFill, key: string(key), flight: f, request: validate})
}

// dropUnkeyed removes from hs, in place, the fields of unkeyedFields.
func dropUnkeyed(hs []codec.Header) []codec.Header {
	h := hs[:0]
	for _, f := range hs {
		if !unkeyed(f.Name) {
			h = append(h, f)
		}
	}
	clear(hs[len(h):])
	return h
}

// unkeyed reports whether name is one of unkeyedFields.
func unkeyed(name []byte) bool {
	if len(name) < 2 || name[0]|0x20 != 'x' || name[1] != '-' {
		return false
	}
	for _, n := range unkeyedFields {
		if codec.EqualFold(name, n) {
			return true
		}
	}
	return false
}

// pickVariant returns the stored variant that req selects, the newest
// first, or nil.
func pickVariant(vs []*httpcache.Entry, req []codec.Header) *httpcache.Entry {
	for _, e := range vs {
		if e.Matches(req) {
			return e
		}
	}
	return nil
}

// serveHit answers c with stored entry e: its status, fields and body,
// with Age and Cache-Status (the writer adds Date, Server and
// Content-Length; HEAD drops the body). A request whose If-None-Match
// names the entry's tag gets 304.
func serveHit(c *Ctx, e *httpcache.Entry, now int64, status []byte) {
	c.Resp.Reset()
	c.Resp.Status = e.Status
	c.Resp.Body = e.Body
	c.Resp.Headers = append(c.Resp.Headers, e.Fields...)
	switch {
	case e.Status != 200:
	case notModified(c.Req, e):
		c.Resp.Status, c.Resp.Body = 304, nil
	case c.Req.Header("Range") != nil:
		serveRange(c, e)
	}
	mark := len(c.Scratch)
	c.Scratch = strconv.AppendInt(c.Scratch, int64(e.Age(now)/time.Second), 10)
	c.Resp.Add(nameAge, c.scratchSince(mark))
	c.Resp.Add(nameCacheStatus, status)
}

// serveRange answers a single byte range of a stored 200 (RFC 9110
// section 14) with 206 and Content-Range, or 416 for a range past the
// end; several ranges, another unit, a malformed set, or an If-Range
// that does not name the stored response exactly get the whole body. It
// does not allocate.
func serveRange(c *Ctx, e *httpcache.Entry) {
	if ir := c.Req.Header("If-Range"); ir != nil {
		strong := e.ETag != nil && !bytes.HasPrefix(e.ETag, []byte("W/")) && string(ir) == string(e.ETag)
		if !strong && (e.LastModified == nil || string(ir) != string(e.LastModified)) {
			return
		}
	}
	size := int64(len(e.Body))
	var rs rangeSet
	switch parseRanges(c.Req.Header("Range"), size, &rs) {
	case rangesOK:
		if rs.n != 1 {
			return
		}
		r := rs.r[0]
		c.Resp.Status = 206
		c.Resp.Body = e.Body[r.start : r.start+r.length]
		c.Resp.Add(hdrContentRange, appendContentRange(c, r, size))
	case rangesUnsatisfiable:
		m := len(c.Scratch)
		c.Scratch = append(c.Scratch, "bytes */"...)
		c.Scratch = strconv.AppendInt(c.Scratch, size, 10)
		c.Resp.Status, c.Resp.Body = 416, nil
		c.Resp.Add(hdrContentRange, c.scratchSince(m))
	}
}

// notModified reports whether req's conditions say its client has e
// already (RFC 9110 section 13.1): an If-None-Match naming e's tag (weak
// comparison), or without one, an If-Modified-Since not before e's
// Last-Modified.
func notModified(req *codec.Request, e *httpcache.Entry) bool {
	if inm := req.Header("If-None-Match"); inm != nil {
		return e.ETag != nil && etagListHas(inm, e.ETag)
	}
	ims := req.Header("If-Modified-Since")
	if ims == nil || e.LastModified == nil {
		return false
	}
	since, ok := httpcache.ParseDate(ims)
	lm, ok2 := httpcache.ParseDate(e.LastModified)
	return ok && ok2 && !lm.After(since)
}

// etagListHas reports whether the If-None-Match value list names tag,
// compared weakly, or is "*".
func etagListHas(list, tag []byte) bool {
	tag = bytes.TrimPrefix(tag, []byte("W/"))
	for len(list) > 0 {
		var item []byte
		if i := bytes.IndexByte(list, ','); i >= 0 {
			item, list = bytes.TrimSpace(list[:i]), list[i+1:]
		} else {
			item, list = bytes.TrimSpace(list), nil
		}
		if string(item) == "*" || string(bytes.TrimPrefix(item, []byte("W/"))) == string(tag) {
			return true
		}
	}
	return false
}

// Names of the request's conditions. Static memory: never modified.
var (
	nameIfNoneMatch     = []byte("If-None-Match")
	nameIfModifiedSince = []byte("If-Modified-Since")
)

// addValidators makes c's request conditional on stored entry e, in
// place of the client's own conditions.
func addValidators(c *Ctx, e *httpcache.Entry) {
	h := delHeader(c.Req.Headers, nameIfNoneMatch)
	h = delHeader(h, nameIfModifiedSince)
	if e.ETag != nil {
		h = append(h, codec.Header{Name: []byte("If-None-Match"), Value: e.ETag})
	}
	if e.LastModified != nil {
		h = append(h, codec.Header{Name: []byte("If-Modified-Since"), Value: e.LastModified})
	}
	c.Req.Headers = h
}

// appendCacheKey appends c's cache key: the host in lower case, the
// normal path and the query.
func appendCacheKey(dst []byte, c *Ctx) []byte {
	for _, b := range c.Req.Host {
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		dst = append(dst, b)
	}
	dst = append(dst, ' ')
	dst = append(dst, c.Path...)
	if c.Req.Query != nil {
		dst = append(dst, '?')
		dst = append(dst, c.Req.Query...)
	}
	return dst
}

// forward lets the inner handler forward c through recorder r.
func (l *cacheLayer) forward(c *Ctx, s script, r *recorder) {
	r.l, r.c, r.sink, r.x = l, c, c.Sink, c.Exchange
	r.reqTime = time.Now()
	r.auth = c.Req.Header("Authorization") != nil || c.Req.Header("Cookie") != nil
	c.Sink, c.Exchange = r, r
	l.next(c, s)
	c.Sink, c.Exchange = r.sink, r.x
	if c.Resp.Pending == nil {
		r.land()
		if now := time.Now().UnixNano(); r.mode == recRevalidate && c.Resp.Status >= 500 && r.staleUsable(now) {
			r.v.Count(httpcache.StaleError)
			serveHit(c, r.stale, now, csStaleError) // no upstream could be asked
		}
		return
	}
	r.inner = c.Resp.Pending
	c.Resp.Pending = r
}

// waiter is a request waiting for another's fetch of its key.
type waiter struct {
	l        *cacheLayer
	s        script
	f        *httpcache.Flight
	deadline time.Time
	timer    *time.Timer
}

// Resume implements Pending: once the fetch ended (or the wait timed
// out) the request is served again, from the store or upstream.
func (w *waiter) Resume(c *Ctx) Progress {
	if !w.f.Done() && time.Now().Before(w.deadline) {
		return Waiting
	}
	w.timer.Stop()
	c.Resp.Reset()
	w.l.serve(c, false, w.s)
	return Answered
}

// Closed implements Pending.
func (w *waiter) Closed() { w.timer.Stop() }
