package h3

import (
	"context"
	"os"
	"sync/atomic"

	"gale/accesslog"
	"gale/app/serve"
	"gale/app/wire"
	"gale/cache"
	"gale/codec"
	"gale/handlers"
)

// exchange is one HTTP/3 request and its response. The request's
// goroutine fills it (request.go) and hands it to its loop; from then
// until the loop signals done, only the loop touches it, and afterwards
// only the goroutine, which writes the response and puts the exchange
// back in the listener's pool. The channel's send and receive order the
// two sides (and gnet's task queue orders the hand-over).
type exchange struct {
	l     *Listener
	loop  *wire.Loop
	ctx   handlers.Ctx
	req   codec.Request
	buf   []byte        // the bytes req aliases
	early int           // a status to answer without serving (400, 408, 413), or 0
	done  chan struct{} // the loop answered: Resp, status and size are the goroutine's now

	// What the loop answered, read by the goroutine after done.
	status   int
	size     int64        // body bytes that follow the head
	noBody   bool         // a response to HEAD, or a status without a body
	server   []byte       // the Server field of the settings the request was served under
	pinned   *cache.Entry // the entry the body aliases, pinned until the body was sent
	heldFile bool         // Resp.File is counted in the descriptor budget

	// The exchange's continuation (handlers.Pending), while it waits
	// for a load of the file cache.
	pending  handlers.Pending
	loadDone cache.Done     // stores into wait and resumes the exchange
	wait     wire.CacheWait // a finished load of the key waited for
	resumer  resumeRun
	waker    wakeRun      // a forwarded exchange's resumes (forward.go)
	wakes    atomic.Int32 // waker's runs queued and not yet run
	fw       forward      // a forwarded exchange's two sides (forward.go); fw.ex is nil unless the configuration forwards
	body     limitedBody  // the request body, bounded by limits.body_bytes (body.go)
	rec      accesslog.Record
	meter    wire.Meter // the exchange's start and route, for the metrics
	start    int64      // when the request reached the handler (unix ns)
	inBytes  int64      // request body bytes read (and dropped)
}

// Each buffer a pooled exchange keeps is at most this large, so that one
// large request does not leave a pooled exchange holding its size.
const (
	keepBytes   = 4 << 10
	keepFields  = 64
	scratchSize = 2 << 10
)

// newExchange makes an exchange of listener l.
func newExchange(l *Listener) *exchange {
	ex := &exchange{l: l, done: make(chan struct{}, 1)}
	ex.ctx.Scratch = make([]byte, 0, scratchSize)
	ex.ctx.Cache = ex
	ex.ctx.TLS = true
	ex.resumer.ex = ex
	ex.waker.ex = ex
	ex.loadDone = func(e *cache.Entry, err error) {
		ex.wait.Store(e, err)
		if ex.loop.EL.Execute(context.Background(), &ex.resumer) != nil {
			ex.abandonOff() // the engine stopped: no loop runs again
		}
	}
	return ex
}

// Run implements gnet.Runnable: the exchange's first turn on its loop.
func (ex *exchange) Run(context.Context) error {
	c := &ex.ctx
	c.Req = &ex.req
	set := ex.loop.Shared.Set.Load()
	ex.server = set.ServerHeader
	if ex.early != 0 {
		c.Error(ex.early)
	} else {
		ex.serve(set)
	}
	if p := c.Resp.Pending; p != nil {
		ex.pending = p
		if ex.fw.ex != nil && c.Route != nil && c.Route.ReadsBody() {
			ex.fw.on = true
			ex.done <- struct{}{} // the request's goroutine writes what the sink queues
		}
		return nil
	}
	ex.answer()
	return nil
}

// serve routes the request and runs its handler, as the other engines
// do. A handler that answers later leaves Resp.Pending set.
func (ex *exchange) serve(set *wire.Settings) {
	serve.Dispatch(&ex.ctx, nil, set.Router) // HTTP/3 listeners redirect nothing
}

// resumeRun resumes an exchange's continuation on its loop.
type resumeRun struct{ ex *exchange }

func (r *resumeRun) Run(context.Context) error {
	r.ex.resume()
	return nil
}

// resume hands a finished load to the exchange's continuation.
func (ex *exchange) resume() {
	p := ex.pending
	if p == nil {
		return
	}
	c := &ex.ctx
	switch p.Resume(c) {
	case handlers.Waiting:
		return
	case handlers.CloseNow:
		ex.pending = nil
		p.Closed()
		c.Resp.Reset()
		c.Error(500)
	default:
		ex.pending = nil
		if np := c.Resp.Pending; np != nil {
			// It waits again (an error page, an index file, the proxy
			// after a verification or forward_auth): resumed at once,
			// since a body it forwards may have arrived whole already,
			// and no event would come for it before the sweep.
			ex.pending = np
			ex.resume()
			return
		}
	}
	if ex.fw.on {
		// The request's goroutine writes through the sink: a
		// continuation that answered itself (a 401) is sent so.
		ex.fw.answer(c)
		return
	}
	ex.answer()
}

// answer takes the response the handler left in Resp for the goroutine
// to write, counts and logs it, and signals done. The exchange is the
// goroutine's afterwards.
func (ex *exchange) answer() {
	c := &ex.ctx
	resp := &c.Resp
	ex.wait.Clear() // a load result belongs to this request only
	ex.noBody = codec.NoBody(c.Req.IsHead(), resp.Status)
	ex.size = resp.BodySize()
	if !ex.noBody && ex.size > 0 && resp.File != nil {
		if ex.heldFile = ex.loop.Shared.Budget.Acquire(1); !ex.heldFile {
			// The file would outlive this turn uncounted: 503, as
			// the other engines answer.
			c.Error(503)
			ex.size = resp.BodySize()
		}
	}
	if ex.noBody || ex.size == 0 {
		closeFile(resp)
	}
	if e := resp.Entry; e != nil && !ex.noBody {
		e.Pin()
		ex.pinned = e
	}
	ex.status = resp.Status
	ex.record()
	ex.done <- struct{}{}
}

// record counts the exchange and writes its access log line; the bytes
// are the body's length as answered.
func (ex *exchange) record() {
	sent := ex.size
	if ex.noBody {
		sent = 0
	}
	ex.recordSent(sent)
}

// recordSent counts the exchange and writes its access log line, with
// sent body bytes.
func (ex *exchange) recordSent(sent int64) {
	lp := ex.loop
	lp.Stats.H3Requests.Add(1)
	if lp.Shared.Access != nil {
		ex.rec.FromRequest(ex.ctx.Req, ex.ctx.Cert)
	}
	ex.meter.Begin(ex.req.Method, ex.start)
	ex.meter.Route = ex.ctx.Route
	ex.meter.InBytes = ex.inBytes
	lp.Record(ex.ctx.Remote.Addr(), &ex.rec, &ex.meter, ex.status, sent)
	lp.FlushAccessLog()
}

// abandonOff ends an exchange whose loop will not run again (the engine
// stopped while it waited): the goroutine answers 503. It runs off the
// loop, on which nothing of the exchange is queued any more.
func (ex *exchange) abandonOff() {
	ex.pending = nil
	c := &ex.ctx
	closeFile(&c.Resp)
	c.Resp.Reset()
	c.Error(503)
	ex.status, ex.size, ex.noBody = 503, int64(len(c.Resp.Body)), false
	ex.done <- struct{}{}
}

// closeFile closes the response's file, if any.
func closeFile(resp *handlers.Response) {
	if resp.File != nil {
		_ = resp.File.Close()
		resp.File = nil
	}
}

// release drops what the written response held, and trims the buffers a
// large request grew, before the exchange goes back to the pool. It runs
// on the request's goroutine.
func (ex *exchange) release() {
	resp := &ex.ctx.Resp
	if f := resp.File; f != nil {
		releaseFile(f, ex)
		resp.File = nil
	}
	if ex.pinned != nil {
		ex.pinned.Release()
		ex.pinned = nil
	}
	resp.Reset()
	c := &ex.ctx
	c.Req, c.Route, c.Path, c.Rest = nil, nil, nil, nil
	c.Sink, c.Body, c.Exchange = nil, nil, nil
	ex.fw, ex.body = forward{}, limitedBody{}
	c.Scratch = c.Scratch[:0]
	ex.early, ex.loop, ex.rec, ex.inBytes = 0, nil, accesslog.Record{}, 0
	if cap(ex.buf) > keepBytes || cap(ex.req.Headers) > keepFields {
		ex.buf, ex.req = nil, codec.Request{}
	}
	if cap(c.Scratch) > keepBytes {
		c.Scratch = make([]byte, 0, scratchSize)
	}
}

// releaseFile closes f and gives its place in the budget back.
func releaseFile(f *os.File, ex *exchange) {
	_ = f.Close()
	if ex.heldFile {
		ex.loop.Shared.Budget.Release(1)
		ex.heldFile = false
	}
}

// The file cache, per exchange (handlers.CacheAccess).

var _ handlers.CacheAccess = (*exchange)(nil)

// CacheView implements handlers.CacheAccess: the loop's view over c.
func (ex *exchange) CacheView(c *cache.Cache) *cache.View { return ex.loop.CacheView(c) }

// CacheDone implements handlers.CacheAccess: the callback stores the
// result and resumes the exchange on its loop.
func (ex *exchange) CacheDone(key []byte) cache.Done {
	ex.wait.Expect(key)
	return ex.loadDone
}

// CacheReady implements handlers.CacheAccess.
func (ex *exchange) CacheReady() bool { return ex.wait.Ready() }

// CacheLoaded implements handlers.CacheAccess.
func (ex *exchange) CacheLoaded(key []byte) (*cache.Entry, error, bool) {
	return ex.wait.Loaded(key)
}
