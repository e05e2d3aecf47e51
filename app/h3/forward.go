package h3

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"gale/app/wire"
	"gale/codec"
	"gale/handlers"
)

// Forwarded exchanges: a request to a route whose handler forwards it (a
// proxy or FastCGI route) is answered through a response sink and a
// request body source, as on the other protocols. Their two sides run on
// two goroutines besides the loop: the request's goroutine writes what
// the loop's sink queued to quic-go's ResponseWriter, and a reader hands
// the loop one buffer of the request body at a time, reading the next
// only when the loop consumed it, so that QUIC's flow control holds a
// fast uploader to the upstream's pace. What the sink queues is bounded
// by server.max_buffered_output (Room), so a slow client paces the
// upstream too (the proxy paces a body that outruns it, paced.go).

// forward is an exchange's forwarded side. The fields under mu are shared
// by the loop (which queues) and the request's goroutine (which writes);
// the body fields follow the reader's hand-over (ready).
type forward struct {
	ex *exchange
	on bool // the exchange is forwarded (set on the loop before done)

	mu       sync.Mutex
	cond     sync.Cond
	status   int
	header   http.Header
	headSet  bool
	chunks   [][]byte
	queued   int         // bytes in chunks
	trailers http.Header // set with ended
	ended    bool        // the response is complete (or cut: abort)
	abort    bool        // cut: the stream is reset
	gone     bool        // the client's stream failed: nothing more is written

	finished chan struct{} // the loop is done with the exchange (End, or the client gone)

	// The request body: the reader fills buf when asked (more), the loop
	// consumes buf[off:n].
	body       io.Reader
	rc         interface{ SetReadDeadline(time.Time) error }
	buf        [32 << 10]byte
	n          int
	off        int
	err        error
	total      int64
	ready      atomic.Bool
	peeked     bool // peek read the first buffer: the reader waits for the loop to ask before it reads again
	more       chan struct{}
	quit       chan struct{}
	readerDone chan struct{} // closed when readBody returned

	sent int64 // body bytes the sink took (the loop's)

	sink   forwardSink
	source forwardBody
	x      forwardExchange
}

// init prepares f for a new exchange.
func (f *forward) init(ex *exchange) {
	*f = forward{ex: ex, finished: make(chan struct{}, 1), more: make(chan struct{}, 1), quit: make(chan struct{}), readerDone: make(chan struct{})}
	f.cond.L = &f.mu
	f.sink.f, f.source.f, f.x.f = f, f, f
}

// attach gives the exchange's context the sink, the body source and the
// exchange's capabilities, for a handler that forwards.
func (f *forward) attach(c *handlers.Ctx) {
	c.Sink, c.Body, c.Exchange = &f.sink, &f.source, &f.x
}

// The request's goroutine side.

// stream writes the response the loop queues to w until it ended, then
// waits for the loop to be done with the exchange. It reports whether the
// response was cut (the caller resets the stream).
func (f *forward) stream(w http.ResponseWriter) bool {
	if f.body != nil {
		go f.readBody()
	} else {
		close(f.readerDone)
	}
	cut := f.writeAll(w)
	f.mu.Lock()
	gone := f.gone
	f.mu.Unlock()
	if gone {
		<-f.ex.closeOnLoop()
	}
	<-f.finished
	f.stopReader()
	return cut
}

// stopReader ends the body reader and waits for it: a read under way is
// cut short by a deadline in the past and by closing the body, so that
// nothing of the reader outlives the exchange.
func (f *forward) stopReader() {
	close(f.quit)
	if f.body != nil {
		if f.rc != nil {
			_ = f.rc.SetReadDeadline(time.Now())
		}
		if c, ok := f.body.(io.Closer); ok {
			_ = c.Close()
		}
	}
	<-f.readerDone
}

// writeAll writes the head, the chunks and the trailers as they are
// queued. It reports whether the response was cut.
func (f *forward) writeAll(w http.ResponseWriter) bool {
	wrote := false
	fl, _ := w.(http.Flusher)
	for {
		f.mu.Lock()
		for !f.ended && (!f.headSet || wrote) && len(f.chunks) == 0 {
			f.cond.Wait()
		}
		if f.abort {
			f.mu.Unlock()
			return true
		}
		chunks := f.chunks
		f.chunks = nil
		ended, headSet, trailers := f.ended, f.headSet, f.trailers
		f.mu.Unlock()
		if !wrote && headSet {
			h := w.Header()
			for k, v := range f.header {
				h[k] = v
			}
			for k := range trailers {
				h.Add("Trailer", k)
			}
			w.WriteHeader(f.status)
			wrote = true
		}
		n := 0
		for _, c := range chunks {
			if _, err := w.Write(c); err != nil {
				f.mu.Lock()
				f.gone = true
				f.mu.Unlock()
				return true
			}
			n += len(c)
		}
		if fl != nil && len(chunks) > 0 {
			fl.Flush()
		}
		if n > 0 {
			f.mu.Lock()
			f.queued -= n
			f.mu.Unlock()
			f.ex.wakeLoop() // room again
		}
		if ended && len(chunks) == 0 {
			if !wrote {
				return true // ended without a head
			}
			for k, v := range trailers {
				w.Header()[http.TrailerPrefix+k] = v
			}
			return false
		}
	}
}

// peek reads the first buffer of a body whose length the request did
// not declare: HTTP/3 says only with the stream's end whether a body
// follows, and a request whose stream ends with its head has none (a GET
// goes upstream without framing, not chunked). A body that ended within
// the buffer gets its length. It runs on the request's goroutine before
// the exchange goes to the loop.
func (f *forward) peek(req *codec.Request) {
	f.peeked = true
	f.read(time.Duration(f.ex.loop.Shared.Set.Load().ReadBody))
	switch {
	case f.n == 0 && f.err == io.EOF:
		f.body = nil
		req.ContentLength, req.Streamed = 0, false
	case f.err == io.EOF:
		req.ContentLength, req.Streamed = int64(f.n), false
	}
}

// read reads the next buffer of the body, waiting at most wait.
func (f *forward) read(wait time.Duration) {
	if f.rc != nil {
		_ = f.rc.SetReadDeadline(time.Now().Add(wait))
	}
	n, err := f.body.Read(f.buf[:])
	f.n, f.off, f.err = n, 0, err
	f.ready.Store(true)
}

// readBody reads the request body one buffer at a time, when the loop
// asks, and wakes the loop with each. A buffer peek read goes first: the
// next read waits for the loop to ask, which it may have done already
// (the handler consumed the buffer before the reader started, leaving
// its request in more), or the reader would read twice in a row and
// overwrite a buffer the loop has not taken.
func (f *forward) readBody() {
	defer close(f.readerDone)
	wait := time.Duration(f.ex.loop.Shared.Set.Load().ReadBody)
	if f.peeked && (f.err != nil || !f.waitMore()) {
		return
	}
	for {
		f.read(wait)
		f.ex.wakeLoop()
		if f.err != nil || !f.waitMore() {
			return
		}
	}
}

// waitMore waits until the loop asks for the next buffer, and reports
// false when the exchange ended instead.
func (f *forward) waitMore() bool {
	select {
	case <-f.more:
		return true
	case <-f.quit:
		return false
	}
}

// wakeLoop has the exchange resumed on its loop. A resume that arrives
// after the exchange ended finds no continuation, or one it does not
// disturb (Resume only looks for work). Such a resume may still be queued
// when the request's goroutine is done with the exchange: it counts in
// wakes until it ran, and an exchange with one outstanding is not reused
// (reusable).
func (ex *exchange) wakeLoop() {
	ex.wakes.Add(1)
	if ex.loop.EL.Execute(context.Background(), &ex.waker) != nil {
		ex.wakes.Add(-1)
		ex.fw.finishedNow() // the engine stopped: no loop runs again
	}
}

// wakeRun is a resume queued by wakeLoop.
type wakeRun struct{ ex *exchange }

func (r *wakeRun) Run(context.Context) error {
	r.ex.resume()
	r.ex.wakes.Add(-1)
	return nil
}

// reusable reports whether no resume of the exchange is still queued on
// its loop, so that it may go back to the pool: a later use, on another
// loop, would race with it.
func (ex *exchange) reusable() bool { return ex.wakes.Load() == 0 }

// closeOnLoop tells the exchange's handler, on its loop, that the
// client's stream failed; the channel closes once it was told.
func (ex *exchange) closeOnLoop() <-chan struct{} {
	r := &closeRun{ex: ex, done: make(chan struct{})}
	if ex.loop.EL.Execute(context.Background(), r) != nil {
		ex.fw.finishedNow()
		close(r.done)
	}
	return r.done
}

// finishedNow signals that the loop is done with the exchange (once).
func (f *forward) finishedNow() {
	select {
	case f.finished <- struct{}{}:
	default:
	}
}

// closeRun tells a forwarded exchange's handler, on its loop, that the
// client's stream failed. The request's goroutine keeps the exchange
// until done closed.
type closeRun struct {
	ex   *exchange
	done chan struct{}
}

func (r *closeRun) Run(context.Context) error {
	ex := r.ex
	if p := ex.pending; p != nil {
		ex.pending = nil
		p.Closed()
		ex.recordSent(0)
		ex.fw.finishedNow()
	}
	close(r.done)
	return nil
}

// The loop side: the response sink.

type forwardSink struct{ f *forward }

var _ handlers.ResponseSink = (*forwardSink)(nil)

// WriteInterim implements handlers.ResponseSink: dropped (quic-go's
// ResponseWriter would take only some; none is needed).
func (s *forwardSink) WriteInterim(int, []codec.Header) {}

// WriteHead implements handlers.ResponseSink.
func (s *forwardSink) WriteHead(hd handlers.Head) {
	f := s.f
	ex := f.ex
	h := http.Header{}
	for _, fl := range hd.Fields {
		if codec.ConnectionSpecific(fl.Name) {
			continue
		}
		k := fieldKey(fl.Name)
		h[k] = append(h[k], string(fl.Value))
	}
	common := wire.CommonFields(nil, nil, hd.Fields)
	ex.l.addDate(h, &common)
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = nil
	}
	bodyless := codec.NoBody(false, hd.Status)
	if hd.Length >= 0 && !bodyless {
		h["Content-Length"] = []string{strconv.FormatInt(hd.Length, 10)}
	}
	ex.status = hd.Status
	f.mu.Lock()
	f.status, f.header, f.headSet = hd.Status, h, true
	f.mu.Unlock()
	f.cond.Signal()
}

// Room implements handlers.ResponseSink: server.max_buffered_output less
// what waits for the client.
func (s *forwardSink) Room() int {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone || f.ended {
		return 0
	}
	return max(f.ex.loop.Shared.Set.Load().MaxOut-f.queued, 0)
}

// WriteBody implements handlers.ResponseSink: the bytes are copied for
// the request's goroutine.
func (s *forwardSink) WriteBody(p []byte) {
	if len(p) == 0 {
		return
	}
	f := s.f
	f.sent += int64(len(p))
	c := append([]byte(nil), p...)
	f.mu.Lock()
	f.chunks = append(f.chunks, c)
	f.queued += len(c)
	f.mu.Unlock()
	f.cond.Signal()
}

// Flush implements handlers.ResponseSink: WriteBody signalled already.
func (s *forwardSink) Flush() {}

// Finish implements handlers.ResponseSink.
func (s *forwardSink) Finish(trailers []codec.Header) {
	f := s.f
	var t http.Header
	for _, fl := range trailers {
		if t == nil {
			t = http.Header{}
		}
		k := fieldKey(fl.Name)
		t[k] = append(t[k], string(fl.Value))
	}
	f.mu.Lock()
	f.trailers, f.ended = t, true
	f.mu.Unlock()
	f.cond.Signal()
}

// Abort implements handlers.ResponseSink: the stream is reset.
func (s *forwardSink) Abort() {
	f := s.f
	f.mu.Lock()
	f.abort, f.ended = true, true
	f.mu.Unlock()
	f.cond.Signal()
}

// The loop side: the request body.

type forwardBody struct{ f *forward }

var _ handlers.BodySource = (*forwardBody)(nil)

// Next implements handlers.BodySource.
func (b *forwardBody) Next() ([]byte, bool, error) {
	f := b.f
	if f.body == nil {
		return nil, true, nil
	}
	if !f.ready.Load() {
		return nil, false, nil
	}
	var ce *codec.Error
	switch {
	case f.err == nil, f.err == io.EOF:
	case errors.As(f.err, &ce):
		return nil, false, ce // over limits.body_bytes (limitedBody)
	case errors.Is(f.err, os.ErrDeadlineExceeded):
		return nil, false, &codec.Error{Status: 408, Reason: "request body read timeout"}
	default:
		return nil, false, &codec.Error{Status: 400, Reason: "request body: " + f.err.Error()}
	}
	return f.buf[f.off:f.n], f.err == io.EOF, nil
}

// Consume implements handlers.BodySource: once the buffer is used up, the
// reader reads the next.
func (b *forwardBody) Consume(n int) {
	f := b.f
	if f.body == nil || !f.ready.Load() {
		return
	}
	n = min(n, f.n-f.off)
	f.off += n
	f.total += int64(n)
	f.ex.inBytes = f.total
	if f.off == f.n && f.err == nil {
		f.ready.Store(false)
		f.more <- struct{}{}
	}
}

// The loop side: what the handler sees of the exchange.

// forwardExchange is a forwarded exchange's handlers.Exchange: what every
// engine offers and nothing of what HTTP/1.1 alone has (a request stream
// has no raw bytes, cannot become a tunnel, and its QUIC connection
// carries other streams, so it cannot be handed to a goroutine).
type forwardExchange struct{ f *forward }

var _ handlers.Exchange = (*forwardExchange)(nil)

// Wake implements handlers.Exchange. Safe from any goroutine.
func (x *forwardExchange) Wake() { x.f.ex.wakeLoop() }

// Local implements handlers.Exchange.
func (x *forwardExchange) Local(k handlers.LocalKind) any { return x.f.ex.loop.Local(k) }

// Closing implements handlers.Exchange: a request stream ends on its own.
func (*forwardExchange) Closing() bool { return false }

// Settings implements handlers.Exchange.
func (x *forwardExchange) Settings() handlers.ExchangeSettings {
	return x.f.ex.loop.Shared.Set.Load().ExchangeSettings()
}

// End implements handlers.Exchange: the forwarded response ended; it is
// counted and logged, and the request's goroutine finishes writing it.
func (x *forwardExchange) End(r handlers.Result) {
	f := x.f
	ex := f.ex
	ex.pending = nil
	if ex.status == 0 {
		ex.status = r.Status
	}
	ex.recordSent(r.BodyBytes + f.sent)
	f.mu.Lock()
	f.ended = true
	if ex.status == 0 || !f.headSet {
		f.abort = true
	}
	f.mu.Unlock()
	f.cond.Signal()
	f.finishedNow()
}

// answer sends a response a forwarded exchange's continuation answered
// itself (a 401 after a failed verification) through the sink, and ends
// the exchange. It runs on the loop.
func (f *forward) answer(c *handlers.Ctx) {
	ex := f.ex
	resp := &c.Resp
	fields := resp.Headers
	if len(ex.server) > 0 {
		fields = append([]codec.Header{{Name: []byte("Server"), Value: ex.server}}, fields...)
	}
	f.sink.WriteHead(handlers.Head{Status: resp.Status, Fields: fields, Length: int64(len(resp.Body))})
	f.sink.WriteBody(resp.Body)
	f.sink.Finish(nil)
	ex.recordSent(f.sent)
	f.finishedNow()
}
