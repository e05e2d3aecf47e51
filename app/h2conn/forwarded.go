package h2conn

import (
	"time"

	"gale/h2"
	"gale/handlers"
)

// The handlers.Exchange of a stream, for the handlers that write their
// response through the sink (the proxy, FastCGI). A stream offers what
// every engine does and nothing of what HTTP/1.1 alone has: its request
// body comes through the body source (body.go), not as raw bytes; it
// cannot become a tunnel (RFC 9113 section 8.6 forbids Upgrade); and its
// socket carries other streams, so it cannot be handed to a goroutine
// (the proxy paces a body that outruns the client instead).

// streamExchange is one exchange's handlers.Exchange.
type streamExchange struct {
	ex *exchange
}

var _ handlers.Exchange = (*streamExchange)(nil)

// Wake implements handlers.Exchange: the connection's next event resumes
// the exchange. Safe from any goroutine.
func (x *streamExchange) Wake() { _ = x.ex.h.wc.C.Wake(nil) }

// Local implements handlers.Exchange.
func (x *streamExchange) Local(k handlers.LocalKind) any { return x.ex.h.wc.Loop.Local(k) }

// Settings implements handlers.Exchange.
func (x *streamExchange) Settings() handlers.ExchangeSettings {
	return x.ex.h.wc.Loop.Shared.Set.Load().ExchangeSettings()
}

// Closing implements handlers.Exchange: a stream ends on its own, and
// closing the connection is the engine's business (GOAWAY), so no
// response needs to say so.
func (*streamExchange) Closing() bool { return false }

// End implements handlers.Exchange: the forwarded response ended. The
// exchange is counted, logged and freed once the body bytes still
// waiting for the client's windows went out.
func (x *streamExchange) End(r handlers.Result) {
	ex := x.ex
	ex.setPending(nil)
	if !ex.sink.head && r.Status != 0 {
		ex.status = r.Status
	}
	ex.forwarded = true
	if ex.sink.queued() > 0 && ex.sink.usable() {
		return // finishSent ends it
	}
	ex.endForwarded()
}

// endForwarded ends a forwarded exchange whose response left (or was
// cut): the stream is reset if the producer left it open, and the
// exchange is counted, logged and freed.
func (ex *exchange) endForwarded() {
	h := ex.h
	h.dequeue(ex)
	if ex.s != nil && !ex.sink.closed {
		h.core.Reset(ex.s, h2.InternalError)
	}
	if !ex.answered && h.wc.Loop.Shared.Access != nil {
		ex.rec.FromRequest(ex.ctx.Req, ex.ctx.Cert)
		ex.recBuf = ex.rec.Keep(ex.recBuf)
	}
	h.now = time.Now().UnixNano()
	ex.finish()
	if !h.wc.Dead {
		h.flushLater() // and the connection may close if it is going away
	}
}
