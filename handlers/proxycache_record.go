package handlers

import (
	"net/url"
	"strings"
	"time"

	"gale/codec"
	"gale/httpcache"
)

// recMode is what a recorder does with the response it sees.
type recMode uint8

const (
	recFill       recMode = iota // a miss: store the response when it may be stored
	recRevalidate                // a conditional request for a stale entry: a 304 refreshes it
	recInvalidate                // an unsafe method: a success removes the stored entry (RFC 9111 section 4.4)
)

// recorder stands between the forwarding handler and the exchange: the
// sink it writes to, the exchange it ends, and the Pending the engine
// resumes. It passes everything on, adds Cache-Status, and keeps what it
// may store.
type recorder struct {
	l       *cacheLayer
	c       *Ctx
	sink    ResponseSink
	x       Exchange
	inner   Pending
	mode    recMode
	key     string
	stale   *httpcache.Entry // recRevalidate: the entry validated; recFill: the stale entry a stale-while-revalidate turn refetches, or nil
	v       *httpcache.View  // recRevalidate: the loop's view, for counting
	flight  *httpcache.Flight
	auth    bool // the request carried Authorization or Cookie
	request bool // the client asked for validation (no-cache)
	turn    bool // the stale entry's stale-while-revalidate turn: handed back unless replaced

	reqTime  time.Time
	storing  bool
	status   int
	length   int64
	fields   []codec.Header
	body     []byte
	dirs     httpcache.Directives
	replaced bool // a 304 was answered with the stored response
	stored   bool // a new entry replaced the stale one
	landed   bool
}

// WriteInterim implements ResponseSink.
func (r *recorder) WriteInterim(status int, fields []codec.Header) {
	r.sink.WriteInterim(status, fields)
}

// WriteHead implements ResponseSink.
func (r *recorder) WriteHead(h Head) {
	if r.mode == recInvalidate {
		if h.Status < 400 {
			r.invalidate(h.Fields)
		}
		r.sink.WriteHead(h)
		return
	}
	if r.mode == recRevalidate && h.Status == 304 {
		r.refresh(h)
		return
	}
	if r.mode == recRevalidate && h.Status >= 500 && r.staleUsable(time.Now().UnixNano()) {
		r.serveStale(h.Close)
		return
	}
	r.dirs = httpcache.ParseDirectives(h.Fields)
	req := httpcache.Request{Authorization: r.auth, StoreCookies: r.l.conf.StoreCookies, NoStore: httpcache.ParseDirectives(r.c.Req.Headers).NoStore}
	r.storing = httpcache.Storable(req, h.Status, h.Fields, &r.dirs) && h.Length <= r.l.conf.MaxEntryBytes && !r.c.Req.IsHead()
	r.status, r.length = h.Status, h.Length
	if !r.storing {
		r.land() // the requests waiting for this fetch need not wait for its body
	} else {
		r.fields = copyFields(h.Fields)
	}
	cs := csMiss
	switch {
	case r.mode == recRevalidate && r.storing:
		cs = csStaleStored
	case r.mode == recRevalidate:
		cs = csStaleFwd
	case r.request && r.storing:
		cs = csRequestStored
	case r.request:
		cs = csRequest
	case r.storing:
		cs = csMissStored
	}
	out := make([]codec.Header, 0, len(h.Fields)+1)
	out = append(append(out, h.Fields...), codec.Header{Name: nameCacheStatus, Value: cs})
	h.Fields = out
	r.sink.WriteHead(h)
}

// staleUsable reports whether the stale entry may stand in for an
// upstream error at now: stale-if-error allows it, or, on its
// stale-while-revalidate turn, it could have been served stale anyway.
func (r *recorder) staleUsable(now int64) bool {
	return r.stale.UsableOnError(now) || r.turn && r.stale.WhileRevalidating(now, &httpcache.Directives{MaxAge: -1, SMaxAge: -1, MaxStale: -1, MinFresh: -1})
}

// released hands a failed stale-while-revalidate turn back (nothing
// replaced the stale entry), so a later request tries again.
func (r *recorder) released() {
	if r.turn && !r.stored {
		r.stale.ReleaseRevalidation()
	}
}

// invalidate removes what is stored for the request's target, and for
// the URIs the response's Location and Content-Location name on the same
// host (RFC 9111 section 4.4).
func (r *recorder) invalidate(fields []codec.Header) {
	r.l.store.Invalidate([]byte(r.key))
	host, _, _ := strings.Cut(r.key, " ")
	for _, f := range fields {
		if !codec.EqualFold(f.Name, "Location") && !codec.EqualFold(f.Name, "Content-Location") {
			continue
		}
		u, err := url.Parse(string(f.Value))
		if err != nil || u.Host != "" && !strings.EqualFold(u.Host, host) || u.Path == "" || u.Path[0] != '/' {
			continue
		}
		key := host + " " + u.EscapedPath()
		if u.RawQuery != "" || u.ForceQuery {
			key += "?" + u.RawQuery
		}
		r.l.store.Invalidate([]byte(key))
	}
}

// serveStale answers with the stored entry in place of an upstream
// error its stale-if-error allows; the error's body is dropped.
func (r *recorder) serveStale(closeConn bool) {
	e := r.stale
	r.v.Count(httpcache.StaleError)
	r.replaced = true
	fields := make([]codec.Header, 0, len(e.Fields)+2)
	fields = append(fields, e.Fields...)
	age := []byte(itoa(int64(e.Age(time.Now().UnixNano()) / time.Second)))
	fields = append(fields, codec.Header{Name: nameAge, Value: age}, codec.Header{Name: nameCacheStatus, Value: csStaleError})
	r.sink.WriteHead(Head{Status: e.Status, Fields: fields, Length: int64(len(e.Body)), Close: closeConn})
	if len(e.Body) > 0 && !r.c.Req.IsHead() {
		r.sink.WriteBody(e.Body)
	}
}

// refresh answers a 304 to the cache's own condition: the stored entry,
// updated with the 304's fields, is stored again and sent whole.
func (r *recorder) refresh(h Head) {
	now := time.Now()
	e := r.stale.Refreshed(httpcache.Stored{Fields: h.Fields, ReqTime: r.reqTime, Now: now}, nil)
	r.l.store.Put([]byte(r.key), e)
	r.replaced, r.stored = true, true
	fields := make([]codec.Header, 0, len(e.Fields)+2)
	fields = append(fields, e.Fields...)
	age := []byte(itoa(int64(e.Age(now.UnixNano()) / time.Second)))
	fields = append(fields, codec.Header{Name: nameAge, Value: age}, codec.Header{Name: nameCacheStatus, Value: csStale})
	r.sink.WriteHead(Head{Status: e.Status, Fields: fields, Length: int64(len(e.Body)), Close: h.Close})
	if len(e.Body) > 0 && !r.c.Req.IsHead() {
		r.sink.WriteBody(e.Body)
	}
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}

// copyFields copies hs into memory of its own.
func copyFields(hs []codec.Header) []codec.Header {
	n := 0
	for _, f := range hs {
		n += len(f.Name) + len(f.Value)
	}
	buf := make([]byte, 0, n)
	out := make([]codec.Header, len(hs))
	for i, f := range hs {
		at := len(buf)
		buf = append(append(buf, f.Name...), f.Value...)
		out[i] = codec.Header{Name: buf[at : at+len(f.Name)], Value: buf[at+len(f.Name) : len(buf)]}
	}
	return out
}

// Room implements ResponseSink.
func (r *recorder) Room() int { return r.sink.Room() }

// WriteBody implements ResponseSink.
func (r *recorder) WriteBody(p []byte) {
	if r.replaced {
		return
	}
	if r.storing {
		if int64(len(r.body)+len(p)) > r.l.conf.MaxEntryBytes {
			r.storing, r.body = false, nil
			r.land()
		} else {
			r.body = append(r.body, p...)
		}
	}
	r.sink.WriteBody(p)
}

// Flush implements ResponseSink.
func (r *recorder) Flush() { r.sink.Flush() }

// Finish implements ResponseSink: a complete response that may be
// stored is stored.
func (r *recorder) Finish(trailers []codec.Header) {
	if r.storing && (r.length < 0 || int64(len(r.body)) == r.length) {
		e := httpcache.New(httpcache.Stored{Status: r.status, Fields: r.fields, Body: r.body, ReqTime: r.reqTime, Now: time.Now(), Request: r.c.Req.Headers}, &r.dirs)
		if e.Validatable() || e.Fresh(time.Now().UnixNano(), &httpcache.Directives{MaxAge: -1, SMaxAge: -1, MaxStale: -1, MinFresh: -1}) {
			r.l.store.Put([]byte(r.key), e)
			r.stored = true
		}
	}
	r.storing, r.body = false, nil
	r.land()
	r.sink.Finish(trailers)
}

// Abort implements ResponseSink.
func (r *recorder) Abort() {
	r.storing = false
	r.land()
	r.sink.Abort()
}

// land ends the recorder's flight, waking the requests that wait for it.
func (r *recorder) land() {
	if !r.landed {
		r.landed = true
		r.released()
		if r.flight != nil {
			r.l.store.Land(r.flight)
		}
	}
}

// End implements Exchange.
func (r *recorder) End(res Result) {
	r.land()
	r.x.End(res)
}

// Wake implements Exchange.
func (r *recorder) Wake() { r.x.Wake() }

// Settings implements Exchange.
func (r *recorder) Settings() ExchangeSettings { return r.x.Settings() }

// Closing implements Exchange.
func (r *recorder) Closing() bool { return r.x.Closing() }

// Local implements Exchange.
func (r *recorder) Local(k LocalKind) any { return r.x.Local(k) }

// Resume implements Pending.
func (r *recorder) Resume(c *Ctx) Progress { return r.inner.Resume(c) }

// Closed implements Pending.
func (r *recorder) Closed() {
	r.land()
	r.inner.Closed()
}
