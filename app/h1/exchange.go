package h1

import (
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/accesslog"
	"gale/codec"
	"gale/handlers"
)

// The handlers.Exchange of the HTTP/1.1 engine, for handlers that answer
// later through the sink (the proxy, FastCGI): the exchange stays pending
// (pending.go) while the handler works, and the connection parses nothing
// further until End, then resumes on the same loop. The connection alone
// carries the exchange, so it also offers what only HTTP/1.1 has: the raw
// inbound bytes (handlers.RawInput: Inbound, Consume and InboundBuffered
// of the transport), the 101 that starts a tunnel (handlers.Upgrader) and
// a duplicate of its socket for copies off the loop (handlers.Duplicator:
// Dup and OutboundBuffered of the transport, and Chunked). All run on the
// connection's loop but Wake.

var (
	_ handlers.Exchange   = (*Conn)(nil)
	_ handlers.Upgrader   = (*Conn)(nil)
	_ handlers.Duplicator = (*Conn)(nil)
)

// SwitchProtocols implements handlers.Upgrader: it writes the 101 that
// starts a tunnel.
func (cs *Conn) SwitchProtocols(fields []codec.Header, upgrade []byte) {
	cs.sink.switchProtocols(fields, upgrade)
}

// Chunked implements handlers.Duplicator: whether the sink frames the
// response body in chunks.
func (cs *Conn) Chunked() bool { return cs.sink.framing == sinkChunked }

// Local implements handlers.Exchange: the loop's state of kind k.
func (cs *Conn) Local(k handlers.LocalKind) any { return cs.Loop.Local(k) }

// Closing implements handlers.Exchange: whether the connection closes
// after the current response whatever it is.
func (cs *Conn) Closing() bool {
	return cs.closeAfter || !cs.ctx.Req.KeepAlive || cs.loop.Shared.Draining.Load()
}

// Upgrading implements handlers.Upgrader: the request asks to switch
// protocols.
func (cs *Conn) Upgrading() bool { return cs.ctx.Req.Upgrade }

// Settings implements handlers.Exchange.
func (cs *Conn) Settings() handlers.ExchangeSettings {
	return cs.loop.Shared.Set.Load().ExchangeSettings()
}

// End implements handlers.Exchange: the pending response ended; it is
// counted and logged, then the connection closes (after its output
// drained) or parses the requests that arrived meanwhile.
func (cs *Conn) End(r handlers.Result) {
	cs.pending = nil
	l := cs.loop
	now := r.At
	if now == 0 {
		now = time.Now().UnixNano()
	}
	cs.sink.Flush()
	l.Stats.BytesOut.Add(uint64(r.BytesOut + cs.sink.wrote))
	var rec accesslog.Record
	if l.Shared.Access != nil {
		rec.FromRequest(&cs.kept, cs.ctx.Cert) // the copy pend made
	}
	cs.meter.InBytes = cs.src.Raw()
	cs.RecordFor(cs.ctx.Remote.Addr(), &rec, &cs.meter, r.Status, r.BodyBytes+cs.sink.body)
	cs.sink.wrote, cs.sink.body = 0, 0
	cs.LastActive = now
	if r.Detach {
		// The tunnel holds the connection's place in the budget from
		// now, and leaves it when it ends.
		if cs.Dead {
			l.Shared.Budget.Rejoin() // OnClose gave it back already
		}
		cs.Detached = true
	}
	if cs.Dead {
		return
	}
	act := gnet.None
	switch {
	case r.Detach:
		// The socket belongs to a tunnel now: close gnet's descriptor
		// only (no shutdown, which would end the tunnel too).
		cs.closeAfter, cs.closing = true, true
		act = gnet.Close
	case r.Close || cs.closeAfter || l.Shared.Draining.Load():
		cs.closeAfter = true
		if r.Unread || cs.InboundBuffered() > 0 {
			cs.linger = true
		}
		act = cs.finish(now)
	case cs.inResume:
		cs.endParse = true
		return
	case cs.InboundBuffered() > 0:
		act = cs.serve()
	}
	cs.endPending(act)
}
