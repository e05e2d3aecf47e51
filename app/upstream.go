package app

import (
	"net"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/accesslog"
	"gale/app/wire"
	"gale/codec"
	"gale/proxy"
)

// This file connects the proxy to the server: it builds proxy routes,
// gives every event loop its proxy state, dispatches the gnet events of
// upstream connections (their context is a *proxy.UpstreamConn, set before
// OnOpen; accepted clients arrive without one), and implements
// proxy.Client on the client connection, whose exchange stays pending
// (pending.go) while the proxy works: the connection parses nothing
// further until ProxyFinish, then resumes on the same loop.

// startProxies starts the health checks of the proxy routes of set.
func (s *Server) startProxies(set *wire.Settings) {
	for _, r := range set.Router.Routes() {
		if h, ok := r.Handler.(*proxy.Handler); ok {
			h.Start(s.log)
		}
	}
}

// stopProxies stops the health checks of the running proxy routes (once
// the engine stopped; a reload closes the routes it replaced).
func (s *Server) stopProxies() {
	for _, r := range s.sh.Set.Load().Router.Routes() {
		if h, ok := r.Handler.(*proxy.Handler); ok {
			_ = h.Close()
		}
	}
}

// ProxyStats sums the proxy counters of every loop. Safe for concurrent
// use.
func (s *Server) ProxyStats() proxy.StatsSnapshot { return s.sh.Proxies.Stats() }

// upstreamEvent tells whether c is an upstream connection: its gnet
// context is then a *proxy.UpstreamConn.
func upstreamOf(c gnet.Conn) (*proxy.UpstreamConn, bool) {
	uc, ok := c.Context().(*proxy.UpstreamConn)
	return uc, ok
}

// proxyConn is a client connection's proxy state.
type proxyConn struct {
	loop *proxy.Loop
}

// proxyState returns cs's proxy state, creating it on first use.
func (cs *conn) proxyState() *proxyConn {
	if cs.px == nil {
		cs.px = &proxyConn{loop: cs.Loop.Proxy()}
	}
	return cs.px
}

// The proxy.Client implementation, over the connection's transport seam
// (see proxy.Client for each method's contract). All run on the
// connection's loop but ProxyWake.

// ProxyInbound returns the unconsumed request bytes.
func (cs *conn) ProxyInbound() []byte { return cs.Inbound() }

// ProxyConsume drops the first n unconsumed bytes (n < 0: all).
func (cs *conn) ProxyConsume(n int) { cs.Consume(n) }

// ProxyInboundBuffered is how many received bytes wait.
func (cs *conn) ProxyInboundBuffered() int { return cs.InboundBuffered() }

// ProxySwitch writes the 101 that starts a tunnel.
func (cs *conn) ProxySwitch(fields []codec.Header, upgrade []byte) {
	cs.sink.switchProtocols(fields, upgrade)
}

// ProxyChunked reports whether the sink frames the response body in
// chunks.
func (cs *conn) ProxyChunked() bool { return cs.sink.framing == sinkChunked }

// ProxyOutboundBuffered is how many bytes wait to leave for the client.
func (cs *conn) ProxyOutboundBuffered() int { return cs.OutboundBuffered() }

// ProxyWake runs the connection's events again soon; safe from any
// goroutine (gnet's Wake is).
func (cs *conn) ProxyWake() { cs.Wake() }

// ProxyLoop returns the proxy state of the connection's loop.
func (cs *conn) ProxyLoop() *proxy.Loop { return cs.proxyState().loop }

// ProxyClosing reports whether the connection closes after the current
// response whatever it is.
func (cs *conn) ProxyClosing() bool { return cs.closeAfter || cs.loop.srv.sh.Draining.Load() }

// ProxyDup returns a duplicate of the client's socket for the proxy's
// off-loop copies; on a TLS connection it carries records.
func (cs *conn) ProxyDup() (net.Conn, error) { return cs.Dup() }

// ProxySettings returns the server settings a proxied request follows.
func (cs *conn) ProxySettings() proxy.ClientSettings {
	set := cs.loop.srv.sh.Set.Load()
	return proxy.ClientSettings{
		Server:          set.ServerHeader,
		BodyBytes:       set.Limits.BodyBytes,
		WriteTimeout:    time.Duration(set.Write),
		ReadBodyTimeout: time.Duration(set.ReadBody),
	}
}

// ProxyFinish ends the pending response: it is counted and logged, then
// the connection closes (after its output drained) or parses the
// requests that arrived meanwhile.
func (cs *conn) ProxyFinish(r proxy.Result) {
	cs.pending = nil
	l := cs.loop
	now := r.At
	if now == 0 {
		now = time.Now().UnixNano()
	}
	cs.sink.Flush()
	l.Stats.BytesOut.Add(uint64(r.BytesOut + cs.sink.wrote))
	var rec accesslog.Record
	if l.srv.sh.Access != nil {
		rec.FromRequest(&cs.kept) // the copy pend made
	}
	cs.Record(&rec, r.Status, r.BodyBytes+cs.sink.body, now)
	cs.sink.wrote, cs.sink.body = 0, 0
	cs.LastActive = now
	if r.Detach {
		// The tunnel holds the connection's place in the budget from
		// now, and leaves it when it ends.
		if cs.Dead {
			l.srv.sh.Budget.Rejoin() // OnClose gave it back already
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
	case r.Close || cs.closeAfter || l.srv.sh.Draining.Load():
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
