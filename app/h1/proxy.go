package h1

import (
	"net"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/accesslog"
	"gale/codec"
	"gale/proxy"
)

// The proxy.Client implementation of the HTTP/1.1 engine: the exchange
// stays pending (pending.go) while the proxy works, and the connection
// parses nothing further until ProxyFinish, then resumes on the same loop.

// proxyConn is a client connection's proxy state.
type proxyConn struct {
	loop *proxy.Loop
}

// proxyState returns cs's proxy state, creating it on first use.
func (cs *Conn) proxyState() *proxyConn {
	if cs.px == nil {
		cs.px = &proxyConn{loop: cs.Loop.Proxy()}
	}
	return cs.px
}

// The proxy.Client implementation, over the connection's transport seam
// (see proxy.Client for each method's contract). All run on the
// connection's loop but ProxyWake.

// ProxyInbound returns the unconsumed request bytes.
func (cs *Conn) ProxyInbound() []byte { return cs.Inbound() }

// ProxyConsume drops the first n unconsumed bytes (n < 0: all).
func (cs *Conn) ProxyConsume(n int) { cs.Consume(n) }

// ProxyInboundBuffered is how many received bytes wait.
func (cs *Conn) ProxyInboundBuffered() int { return cs.InboundBuffered() }

// ProxySwitch writes the 101 that starts a tunnel.
func (cs *Conn) ProxySwitch(fields []codec.Header, upgrade []byte) {
	cs.sink.switchProtocols(fields, upgrade)
}

// ProxyChunked reports whether the sink frames the response body in
// chunks.
func (cs *Conn) ProxyChunked() bool { return cs.sink.framing == sinkChunked }

// ProxyOutboundBuffered is how many bytes wait to leave for the client.
func (cs *Conn) ProxyOutboundBuffered() int { return cs.OutboundBuffered() }

// ProxyWake runs the connection's events again soon; safe from any
// goroutine (gnet's Wake is).
func (cs *Conn) ProxyWake() { cs.Wake() }

// ProxyLoop returns the proxy state of the connection's loop.
func (cs *Conn) ProxyLoop() *proxy.Loop { return cs.proxyState().loop }

// ProxyClosing reports whether the connection closes after the current
// response whatever it is.
func (cs *Conn) ProxyClosing() bool { return cs.closeAfter || cs.loop.Shared.Draining.Load() }

// ProxyDup returns a duplicate of the client's socket for the proxy's
// off-loop copies; on a TLS connection it carries records.
func (cs *Conn) ProxyDup() (net.Conn, error) { return cs.Dup() }

// ProxySettings returns the server settings a proxied request follows.
func (cs *Conn) ProxySettings() proxy.ClientSettings {
	return cs.loop.Shared.Set.Load().ProxyClientSettings()
}

// ProxyFinish ends the pending response: it is counted and logged, then
// the connection closes (after its output drained) or parses the
// requests that arrived meanwhile.
func (cs *Conn) ProxyFinish(r proxy.Result) {
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
		rec.FromRequest(&cs.kept) // the copy pend made
	}
	cs.meter.InBytes = cs.src.Raw()
	cs.RecordFor(cs.ctx.Remote.Addr(), &rec, &cs.meter, r.Status, r.BodyBytes+cs.sink.body, now)
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
