package h1

import (
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/app/wire"
	"gale/handlers"
)

// An HTTP/1.1 exchange answered later: its handler left a continuation
// (handlers.Pending), a static route waiting for a file load or the proxy
// waiting for its upstream. The connection parses nothing further until
// the exchange ends, so that pipelined responses keep their order; it
// keeps the request meanwhile (the request's bytes in the inbound buffer
// are consumed: the proxy reads the body that follows them), and hands
// every event to the continuation. The exchange ends when Resume answers
// (the response is then written as any other), or when the proxy reports
// its end (End, exchange.go).

// pend makes p the connection's pending exchange, keeping the request.
func (cs *Conn) pend(p handlers.Pending) {
	cs.pending = p
	cs.keptBuf = cs.ctx.KeepRequest(&cs.kept, cs.keptBuf)
}

// resumePending hands the connection's event to the pending exchange,
// and moves the connection on as the continuation reports.
func (cs *Conn) resumePending() gnet.Action {
	cs.inResume = true
	prog := cs.pending.Resume(&cs.ctx)
	cs.inResume = false
	switch {
	case prog == handlers.CloseNow:
		cs.pending = nil
		return gnet.Close
	case prog == handlers.Answered:
		cs.pending = nil
		return cs.answerLater()
	case cs.endClose:
		cs.endClose, cs.endParse = false, false
		return gnet.Close
	case cs.endParse:
		cs.endParse = false
		if cs.InboundBuffered() > 0 {
			return cs.serve()
		}
		return gnet.None
	}
	if cs.pending != nil && cs.InboundBuffered() > pendingInputBound(cs.loop.Shared.Set.Load()) {
		return gnet.Close // gnet cannot stop reading: past the bound, the client is cut off
	}
	return gnet.None
}

// pendingInputBound is how many received bytes may wait while an exchange
// is pending, whatever its continuation: twice a body of
// limits.body_bytes with wire.MaxPendingInput of framing and pipelined
// requests after it. It is the backstop for a continuation that takes
// nothing of the input (a static route waiting for a load); the proxy,
// which reads the body it forwards, holds the input to its own tighter
// bounds first (and answers 413 where one is due).
func pendingInputBound(set *wire.Settings) int {
	return 2 * (int(set.Limits.BodyBytes) + wire.MaxPendingInput)
}

// answerLater writes the response a continuation answered, as serve
// writes one that Serve returned, then goes on with what the client sent
// after the request.
func (cs *Conn) answerLater() gnet.Action {
	l := cs.loop
	set := l.Shared.Set.Load()
	now := time.Now().UnixNano()
	if p := cs.ctx.Resp.Pending; p != nil {
		// It waits again (for an error page, an index file, the
		// proxy once forward_auth let the request through): resumed
		// at once, as endBatch resumes a new one, since the request's
		// body may have arrived whole already and no event would
		// come for it.
		cs.pend(p)
		return cs.resumePending()
	}
	l.Out = l.Out[:0]
	l.Bodies = l.Bodies[:0]
	cs.respond(set, now)
	cs.expectBody(set)
	if cs.closeAfter || cs.xfer != nil || cs.InboundBuffered() == 0 {
		return cs.endBatch(now)
	}
	cs.flush()
	if cs.Dead {
		return gnet.None
	}
	return cs.serve()
}

// endPending ends the pending exchange from outside Resume (the proxy's
// end, on an upstream event): act is what the connection does next. While
// Resume runs, the connection acts once it returned.
func (cs *Conn) endPending(act gnet.Action) {
	switch {
	case cs.inResume && act == gnet.Close:
		cs.endClose = true
	case act == gnet.Close:
		if l := cs.loop; l.EL != nil {
			_ = l.EL.Close(cs.C)
		}
	}
}

// pendingClosed tells a pending exchange that the connection closed (from
// release).
func (cs *Conn) pendingClosed() {
	p := cs.pending
	if p == nil {
		return
	}
	cs.pending = nil
	p.Closed()
}
