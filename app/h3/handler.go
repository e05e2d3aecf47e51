package h3

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"gale/codec"
)

// ServeHTTP implements http.Handler for quic-go's http3.Server: it runs
// on the request stream's goroutine, copies the request into an
// exchange, reads the request body through (discarding it: the loops'
// handlers read no bodies), hands the exchange to its connection's loop
// and waits for the answer, then writes it.
func (l *Listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	lp, err := l.loopOf(r.Context())
	if err != nil {
		http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
		return
	}
	ex := l.pool.Get().(*exchange)
	ex.loop = lp
	ex.start = time.Now().UnixNano()
	ex.early = ex.fill(r)
	ex.ctx.Cert = l.certOf(r.Context())
	set := lp.Shared.Set.Load()
	if set.Forwards {
		// A route may forward the request (forward.go).
		ex.fw.init(ex)
		ex.fw.attach(&ex.ctx)
	}
	if hasBody(r) && ex.early == 0 {
		ex.ctx.Req = &ex.req
		ex.body.init(r, set.Limits.BodyBytes)
		if set.Forwards && set.Router.ReadsBody(&ex.ctx) {
			// Read as the handler takes it.
			ex.fw.body = &ex.body
			ex.fw.rc, _ = w.(interface{ SetReadDeadline(time.Time) error })
			if r.ContentLength < 0 {
				ex.fw.peek(&ex.req)
			}
		} else {
			ex.early = ex.discardBody(w)
		}
	}
	if lp.EL.Execute(context.Background(), ex) != nil {
		// The engine stopped under the request.
		http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
		ex.release()
		l.pool.Put(ex)
		return
	}
	<-ex.done
	if ex.fw.on {
		cut := ex.fw.stream(w)
		ex.release()
		if ex.reusable() {
			l.pool.Put(ex)
		}
		if cut {
			panic(http.ErrAbortHandler) // resets the stream
		}
		return
	}
	if ex.fw.body != nil {
		ex.discardBody(w) // answered at once (a 403, a 502) by a route that reads bodies
	}
	ex.write(w)
	ex.release()
	l.pool.Put(ex)
}

// bodyBufs are the buffers request bodies are read into and dropped.
var bodyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// discardBody reads the request body (ex.body) to its end, dropping the
// bytes as they arrive, and returns the status to answer instead of
// serving the request: 413 past limits.body_bytes (without reading
// further), 408 when no byte arrived for timeouts.read_body, 400 when the
// stream failed; 0 once the body ended.
func (ex *exchange) discardBody(w http.ResponseWriter) int {
	wait := time.Duration(ex.loop.Shared.Set.Load().ReadBody)
	rc, _ := w.(interface{ SetReadDeadline(time.Time) error })
	bp := bodyBufs.Get().(*[]byte)
	defer bodyBufs.Put(bp)
	total := int64(0)
	for {
		if rc != nil {
			_ = rc.SetReadDeadline(time.Now().Add(wait))
		}
		n, err := ex.body.Read(*bp)
		total += int64(n)
		ex.inBytes = total
		var ce *codec.Error
		switch {
		case err == io.EOF:
			return 0
		case errors.As(err, &ce):
			return ce.Status
		case errors.Is(err, os.ErrDeadlineExceeded):
			return 408
		case err != nil:
			return 400
		}
	}
}
