package h2conn

import (
	"net/netip"
	"os"
	"time"

	"gale/accesslog"
	"gale/app/serve"
	"gale/app/wire"
	"gale/cache"
	"gale/codec"
	"gale/h2"
	"gale/handlers"
)

// exchange is one HTTP/2 stream's request and response: its own Ctx,
// scratch memory and, while it is answered later (a continuation, or
// parked), its own copy of the request. One is made per stream slot of a connection and reused by
// the streams that take that slot, so steady-state requests allocate
// nothing. Owned by the connection's loop.
type exchange struct {
	h   *Conn
	s   *h2.Stream // nil when the slot is free
	ctx handlers.Ctx

	own    codec.Request // the request copied out of the core's memory (answered later)
	ownBuf []byte        // the bytes own aliases

	rec    accesslog.Record // what the access log says of the request, kept once the response outlives Request
	recBuf []byte
	meter  wire.Meter // the exchange's start, first byte and route, for the metrics

	// The response body still to send, in order; the first part is
	// partly sent when off is not zero.
	parts      []handlers.BodyPart
	one        [1]handlers.BodyPart // storage for a body in one piece
	off        int64                // bytes of parts[0] already sent
	file       *os.File             // the body's file regions are read from here, counted in the descriptor budget; closed by dropFile
	fileQueued bool                 // the writer has regions of file to read: it closes it
	version    cache.Version        // the version of file the response's validators name
	status     int
	sent       int64 // body bytes sent
	headOnly   bool  // HEAD: the head went out, no body follows
	reqDone    bool  // the request's END_STREAM arrived
	answered   bool  // the response head went out
	deferred   bool  // the request has a body: it is served once the body ended
	bodyBytes  int64 // request body bytes received (and discarded)
	bodySince  int64 // when the deferred request's body last made progress (unix ns)
	queued     bool  // in h2conn.active
	mem        int64 // in-memory body bytes the exchange holds while queued (h2conn.memHeld)
	parked     bool  // answered later: the connection holds too many body bytes (park)

	// The exchange's continuation (handlers.Pending): it is answered
	// later, when a load of the file cache (handlers.CacheAccess) ends.
	pending handlers.Pending
	done    cache.Done      // stores into wait; made with it
	wait    *wire.CacheWait // where done stores the result of a load; see release

	// A handler that forwards the request (the proxy, FastCGI) reads its
	// body from body, writes its response to sink and reports its end
	// through x (forwarded.go).
	body       requestBody
	sink       streamSink
	x          streamExchange
	keepBody   bool       // DATA is kept in body for the handler, not discarded
	forwarded  bool       // the handler reported the end (End): the exchange ends once sink drained
	heldAnswer bool       // answered at once but deferred: the answer goes out when the body ended
	dispatch   bool       // held for dispatch at the end of the read batch (dispatch.go)
	shareHeld  bool       // the stream counts in its address's upstream share (share.go)
	shareKey   netip.Addr // the address it counts under
}

// An exchange whose stream ends while a load is pending leaves its wait
// (and done) to that load and takes new ones (release), so that a result
// arriving late reaches no later stream on the slot.

var _ h2.Handler = (*Conn)(nil)

// exchange returns the exchange of slot, made on first use.
func (h *Conn) exchange(slot int) *exchange {
	for len(h.ex) <= slot {
		h.ex = append(h.ex, nil)
	}
	ex := h.ex[slot]
	if ex == nil {
		ex = &exchange{h: h}
		ex.ctx.Scratch = make([]byte, 0, slotScratch)
		ex.ctx.Cache = ex
		ex.body.ex, ex.sink.ex, ex.x.ex = ex, ex, ex
		ex.ctx.Body, ex.ctx.Sink, ex.ctx.Exchange = &ex.body, &ex.sink, &ex.x
		h.ex[slot] = ex
	}
	return ex
}

// Request implements h2.Handler: a stream's request head arrived. A
// request with a body is answered once the body has ended (the loop's own
// handlers read no bodies; the bytes are discarded as they arrive), so
// that the stream's frames are judged in the state the request left it
// in; a handler that forwards the body (serveWithBody) gets it as it
// arrives.
func (h *Conn) Request(s *h2.Stream, req *codec.Request) {
	h.streamActive()
	ex := h.exchange(s.Slot)
	ex.start(s)
	ex.ctx.Req = req
	ex.meter.Begin(req.Method, h.now)
	if h.deferForward(ex) {
		return // dispatched at the end of the read batch (dispatch.go)
	}
	if s.BodyFollows && !s.TooLarge {
		ex.keepRequest()
		ex.deferred = true
		ex.bodySince = h.wc.LastActive
		return
	}
	ex.run()
}

// serveWithBody serves a request whose body is still to come, on a route
// that reads bodies (a proxy or FastCGI route): a handler that answers
// later gets the body as it arrives; an answer given at once (an access
// rule's 403, a 502) is held until the body ended, as for every request
// with a body.
func (ex *exchange) serveWithBody() {
	ex.keepBody = true
	ex.serve()
	if ex.pending != nil {
		ex.deferred = false
		return
	}
	ex.keepBody = false
	ex.heldAnswer = true
}

// run serves the request and answers it, unless it is answered later.
func (ex *exchange) run() {
	if ex.s.TooLarge {
		ex.ctx.Resp.Reset()
		ex.ctx.Error(431)
	} else {
		ex.serve()
	}
	if ex.pending != nil {
		return
	}
	ex.answer()
}

// Data implements h2.Handler: request body bytes, discarded with their
// credit returned at once. A body over limits.body_bytes never gets here:
// the core answers it 413 and resets its stream (h2.Config.MaxBodyBytes).
func (h *Conn) Data(s *h2.Stream, data []byte, end bool) {
	var ex *exchange
	if s.Slot < len(h.ex) {
		ex = h.ex[s.Slot]
	}
	if ex == nil || ex.s != s {
		h.core.Consumed(s, len(data))
		return
	}
	if ex.keepBody {
		ex.body.add(data, end) // credit goes back as the handler consumes it
	} else {
		h.core.Consumed(s, len(data))
	}
	if len(data) > 0 || end {
		h.streamActive()
		ex.bodySince = h.wc.LastActive
	}
	ex.bodyBytes += int64(len(data))
	if end {
		ex.reqDone = true
	}
	if ex.heldData(end) || !ex.deferred {
		return
	}
	if end {
		ex.deferred = false
		if ex.heldAnswer {
			ex.heldAnswer = false
			ex.answer()
			return
		}
		ex.run()
	}
}

// answerNow answers a deferred request with status at once, in place of
// what it was going to answer.
func (ex *exchange) answerNow(status int) {
	ex.deferred, ex.heldAnswer = false, false
	ex.closeFile(&ex.ctx.Resp)
	ex.ctx.Resp.Reset()
	ex.ctx.Error(status)
	ex.answer()
}

// expireBodies answers 408 (RFC 9110 section 15.5.9) to every request
// whose body made no progress for timeouts.read_body: the timeout is each
// stream's, so that a body trickling on one stream holds no other. It
// reports whether it answered any.
func (h *Conn) expireBodies(now, limit int64) bool {
	answered := false
	for _, ex := range h.ex {
		if ex == nil || ex.s == nil || !ex.deferred || now-ex.bodySince <= limit {
			continue
		}
		h.wc.Loop.Stats.TimedOut.Add(1)
		ex.answerNow(408)
		answered = true
	}
	return answered
}

// Reset implements h2.Handler: the stream ended abnormally.
func (h *Conn) Reset(s *h2.Stream, _ h2.ErrCode) {
	if s.Slot >= len(h.ex) {
		return
	}
	ex := h.ex[s.Slot]
	if ex == nil || ex.s != s {
		return
	}
	ex.abandon()
}

// Writable implements h2.Handler. Production runs after every Feed, so
// nothing needs doing here.
func (h *Conn) Writable(*h2.Stream) {}

// start prepares ex for stream s.
func (ex *exchange) start(s *h2.Stream) {
	cs := ex.h.wc
	ex.s = s
	ex.reqDone = !s.BodyFollows
	ex.answered, ex.headOnly, ex.deferred = false, false, false
	ex.keepBody, ex.forwarded, ex.heldAnswer, ex.dispatch = false, false, false, false
	ex.body.reset()
	ex.sink.reset()
	ex.setPending(nil)
	ex.bodyBytes = 0
	ex.status, ex.sent, ex.off = 0, 0, 0
	ex.parts = nil
	ex.rec = accesslog.Record{}
	c := &ex.ctx
	c.Resp.Reset()
	c.Scratch = c.Scratch[:0]
	c.Route, c.Path, c.Rest = nil, nil, nil
	c.Remote, c.Peer = cs.Remote, netip.AddrPort{}
	c.TLS = cs.Layered()
	c.Cert = cs.Cert
}

// serve routes the request and runs its handler (serve.Dispatch, as on
// every protocol). A handler that answers later leaves ex.pending set.
func (ex *exchange) serve() {
	cs := ex.h.wc
	set := cs.Loop.Shared.Set.Load()
	c := &ex.ctx
	serve.Dispatch(c, ex.h.redirect, set.Router)
	ex.meter.Route = c.Route
	if p := c.Resp.Pending; p != nil {
		ex.pend(p)
	}
}

// pend makes p the exchange's continuation, keeping the request.
func (ex *exchange) pend(p handlers.Pending) {
	ex.setPending(p)
	ex.keepRequest()
}

// keepRequest copies the request out of the core's memory, which the next
// header block overwrites, so that it can be served later.
func (ex *exchange) keepRequest() {
	ex.ownBuf = ex.ctx.KeepRequest(&ex.own, ex.ownBuf)
}

// resume hands a wake of the connection to the exchange's continuation,
// and answers what it answered.
func (ex *exchange) resume() {
	p := ex.pending
	if ex.s == nil || p == nil {
		return
	}
	switch p.Resume(&ex.ctx) {
	case handlers.Waiting:
		return
	case handlers.CloseNow:
		ex.setPending(nil)
		ex.h.core.Reset(ex.s, h2.InternalError)
		ex.abandon()
		return
	}
	ex.setPending(nil)
	if p := ex.ctx.Resp.Pending; p != nil {
		// It waits again (for an error page, an index file, the proxy
		// once basic_auth or forward_auth let the request through):
		// resumed at once, since a body it forwards may have arrived
		// whole already, and no event would come for it before the
		// sweep.
		ex.setPending(p)
		ex.resume()
		return
	}
	ex.answer()
}

// entryBody is how many bytes of resp's body are a cache entry's memory
// (0 for a body of file regions, or not from the cache: error pages and
// respond bodies are the configuration's, shared by every response).
func entryBody(resp *handlers.Response) int64 {
	switch {
	case resp.Entry == nil:
		return 0
	case resp.Parts != nil:
		n := int64(0)
		for _, p := range resp.Parts {
			n += int64(len(p.Data))
		}
		return n
	case resp.File != nil:
		return 0
	}
	return int64(len(resp.Body))
}

// memCap bounds the cache entries' body bytes the exchanges of a
// connection hold while their bodies wait for the client's windows: an
// entry's body outlives its eviction while a stream holds it, so without
// a bound one connection could hold max_concurrent_streams distinct files
// beyond the cache's budget. One exchange may always hold its body,
// however large.
func (h *Conn) memCap() int64 { return 4 * int64(h.wc.Loop.Shared.Set.Load().MaxOut) }

// park puts off answering ex until the connection's queued bodies leave
// room (unpark): its response, a cache entry's, is dropped and its
// request kept, to be served again (from the cache, or loaded again).
func (ex *exchange) park() {
	if ex.ctx.Req != &ex.own {
		ex.keepRequest()
	}
	ex.closeFile(&ex.ctx.Resp)
	ex.ctx.Resp.Reset()
	ex.parked = true
	ex.h.parked++
}

// unparkWaiting serves again the parked exchanges while the connection's
// queued bodies leave room.
func (h *Conn) unparkWaiting() {
	for _, ex := range h.ex {
		if h.parked == 0 || len(h.active) > 0 && h.memHeld >= h.memCap() {
			return
		}
		if ex != nil && ex.parked {
			if ex.unpark(); ex.parked {
				return // parked again: no room yet
			}
		}
	}
}

// unpark serves a parked exchange again.
func (ex *exchange) unpark() {
	ex.parked = false
	ex.h.parked--
	ex.ctx.Resp.Reset()
	ex.ctx.Scratch = ex.ctx.Scratch[:0]
	ex.serve()
	if ex.pending != nil {
		return
	}
	ex.answer()
}

// answer sends the response head, and the body as far as the windows and
// the output bound allow; the rest is produced later (produce).
func (ex *exchange) answer() {
	h := ex.h
	c := &ex.ctx
	resp := &c.Resp
	ex.wait.Clear() // a load result belongs to this request only
	isHead := c.Req.IsHead()
	bodyless := codec.NoBody(false, resp.Status)
	size := resp.BodySize()
	end := isHead || bodyless || size == 0
	mem := int64(0)
	if !end {
		mem = entryBody(resp)
		if mem > 0 && len(h.active) > 0 && h.memHeld+mem > h.memCap() {
			ex.park()
			return
		}
	}
	if !end && resp.File != nil && !h.wc.Loop.Shared.Budget.Acquire(1) {
		// The file would outlive this event uncounted: 503, as
		// HTTP/1.1 answers a transfer it has no descriptors for.
		c.Error(503)
		bodyless, size = false, resp.BodySize()
	}
	ex.status = resp.Status
	h.hdr = ex.appendHead(h.hdr[:0], resp, bodyless, size)
	h.core.WriteHeaders(ex.s, h.hdr, end)
	ex.answered = true
	logged := h.wc.Loop.Shared.Access != nil
	if logged {
		ex.rec.FromRequest(c.Req, c.Cert)
	}
	if end {
		ex.closeFile(resp)
		ex.finish()
		return
	}
	sent := ex.sendAtOnce(resp, size)
	if sent == size {
		ex.finish()
		return
	}
	ex.setBody(resp)
	ex.off, ex.sent = sent, sent
	ex.mem = mem
	h.memHeld += mem
	if ex.bodyFromFile() && size > int64(h.wc.Loop.Shared.Set.Load().MaxOut) {
		h.wantWriter = true // large file regions are read off the loop
	}
	if logged {
		ex.recBuf = ex.rec.Keep(ex.recBuf) // the response outlives the request's bytes
	}
	if h.wc.Loop.Shared.Metered {
		ex.meter.Head = time.Now().UnixNano() // the body follows later
	}
	h.enqueue(ex)
}

// sendAtOnce sends a body in memory whole, right after its head, when the
// windows and the output bound take it all (the common small response):
// the exchange then ends within the event that brought its request. It
// returns how many body bytes it sent (0 when it left the body to
// produce).
func (ex *exchange) sendAtOnce(resp *handlers.Response, size int64) int64 {
	h := ex.h
	if resp.File != nil || resp.Parts != nil || h.wantWriter || len(h.active) > 0 ||
		size > int64(h.core.SendWindow(ex.s)) || size > int64(h.room()) {
		return 0
	}
	n := int64(h.core.WriteData(ex.s, resp.Body, true))
	ex.sent = n
	return n
}

// setBody takes the response's body as parts to send.
func (ex *exchange) setBody(resp *handlers.Response) {
	switch {
	case resp.Parts != nil:
		ex.parts = resp.Parts
	case resp.File != nil:
		ex.one[0] = handlers.BodyPart{Off: resp.FileOffset, Len: resp.FileSize}
		ex.parts = ex.one[:]
	default:
		ex.one[0] = handlers.BodyPart{Data: resp.Body, Len: int64(len(resp.Body))}
		ex.parts = ex.one[:]
	}
	ex.file, ex.version = resp.File, resp.FileVersion
	resp.File = nil // the exchange owns it now
}

// bodyFromFile reports whether any part of the body is a file region.
func (ex *exchange) bodyFromFile() bool {
	for _, p := range ex.parts {
		if p.Data == nil && p.Size() > 0 {
			return true
		}
	}
	return false
}

func (ex *exchange) closeFile(resp *handlers.Response) {
	if resp.File != nil {
		_ = resp.File.Close()
		resp.File = nil
	}
}

// finish ends the exchange once its last frame was queued: it is counted
// and logged, and its slot freed. A request whose body is still arriving
// is told to stop with RST_STREAM(NO_ERROR) (RFC 9113 section 8.1).
func (ex *exchange) finish() {
	h := ex.h
	cs := h.wc
	now := h.now
	if !ex.reqDone {
		h.core.Reset(ex.s, h2.NoError)
	}
	cs.LastActive = now
	cs.Loop.Stats.H2Requests.Add(1)
	ex.meter.InBytes = ex.bodyBytes
	cs.RecordFor(ex.ctx.Remote.Addr(), &ex.rec, &ex.meter, ex.status, ex.sent)
	ex.release()
}

// abandon drops the exchange when its stream was reset or the connection
// closed: the response, if any began, is logged as it stands.
func (ex *exchange) abandon() {
	if ex.answered {
		ex.meter.InBytes = ex.bodyBytes
		ex.h.wc.RecordFor(ex.ctx.Remote.Addr(), &ex.rec, &ex.meter, ex.status, ex.sent)
	}
	ex.h.dequeue(ex)
	ex.closeFile(&ex.ctx.Resp)
	ex.dropFile()
	ex.release()
}

// release frees the slot for the next stream. A load the exchange still
// waits for keeps its callback and result storage: the next stream on the
// slot gets new ones (CacheDone).
func (ex *exchange) release() {
	if p := ex.pending; p != nil {
		ex.done, ex.wait = nil, nil
		p.Closed()
	}
	if ex.parked {
		ex.parked = false
		ex.h.parked--
	}
	if n := len(ex.body.in) - ex.body.off; n > 0 {
		ex.h.core.Consumed(nil, n) // the connection's credit for body bytes no one will read
	}
	ex.body.reset()
	ex.keepBody, ex.dispatch = false, false
	ex.dropShare()
	ex.s = nil
	ex.file = nil
	ex.parts = nil
	ex.one[0] = handlers.BodyPart{}
	ex.setPending(nil)
	ex.ctx.Req = nil
	ex.ctx.Resp.Reset()
	ex.trim()
}

// Each buffer an idle slot keeps is at most this large: one large
// request must not leave every slot of a connection holding its size for
// the connection's life, which would make an idle connection cost
// MaxConcurrentStreams times the largest request.
const (
	slotKeep       = 4 << 10 // bytes of a buffer
	slotKeepFields = 64      // header fields of a copied request
	slotScratch    = 2 << 10 // the scratch memory a slot starts with
)

// trim drops the buffers a large request grew past slotKeep, and what
// aliases them; the next large request on the slot makes them again.
func (ex *exchange) trim() {
	c := &ex.ctx
	c.Path, c.Rest = nil, nil // they may alias the request's copy or the scratch
	if cap(ex.ownBuf) > slotKeep || cap(ex.own.Headers) > slotKeepFields {
		ex.ownBuf, ex.own = nil, codec.Request{} // own aliases ownBuf
	}
	if cap(ex.recBuf) > slotKeep {
		ex.recBuf, ex.rec = nil, accesslog.Record{} // rec aliases recBuf
	}
	if cap(c.Scratch) > slotKeep {
		c.Scratch = make([]byte, 0, slotScratch)
	}
}

// The file cache, per exchange (handlers.CacheAccess).

var _ handlers.CacheAccess = (*exchange)(nil)

// CacheView implements handlers.CacheAccess: the loop's view over c.
func (ex *exchange) CacheView(c *cache.Cache) *cache.View {
	return ex.h.wc.Loop.CacheView(c)
}

// CacheDone implements handlers.CacheAccess: the callback stores the
// result and wakes the connection, whose next event resumes the exchange.
func (ex *exchange) CacheDone(key []byte) cache.Done {
	if ex.done == nil {
		gc := ex.h.wc.C
		w := &wire.CacheWait{}
		ex.wait = w
		ex.done = func(e *cache.Entry, err error) {
			w.Store(e, err)
			_ = gc.Wake(nil)
		}
	}
	ex.wait.Expect(key)
	return ex.done
}

// CacheReady implements handlers.CacheAccess.
func (ex *exchange) CacheReady() bool { return ex.wait.Ready() }

// CacheLoaded implements handlers.CacheAccess.
func (ex *exchange) CacheLoaded(key []byte) (*cache.Entry, error, bool) {
	return ex.wait.Loaded(key)
}

// setPending sets or clears the exchange's continuation, keeping the
// connection's count of pending exchanges.
func (ex *exchange) setPending(p handlers.Pending) {
	switch {
	case ex.pending == nil && p != nil:
		ex.h.nwait++
	case ex.pending != nil && p == nil:
		ex.h.nwait--
	}
	ex.pending = p
}

// resumeWaiting hands a wake of the connection to every pending exchange.
func (h *Conn) resumeWaiting() {
	if h.nwait == 0 {
		return
	}
	for _, ex := range h.ex {
		if ex != nil && ex.pending != nil {
			ex.resume()
		}
	}
}
