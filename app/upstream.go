package app

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/accesslog"
	"gale/codec"
	"gale/config"
	"gale/fds"
	"gale/handlers"
	"gale/proxy"
)

// This file connects the proxy to the server: it builds proxy routes,
// gives every event loop its proxy state, dispatches the gnet events of
// upstream connections (their context is a *proxy.UpstreamConn, set before
// OnOpen; accepted clients arrive without one), and implements
// proxy.Client on the client connection, whose exchange stays pending
// (pending.go) while the proxy works: the connection parses nothing
// further until ProxyFinish, then resumes on the same loop.

// proxyOption gives handlers.Build the factory of proxy routes, which
// count their descriptors in b.
func proxyOption(cfg *config.Config, b *fds.Budget) handlers.Option {
	loops := cfg.Server.EventLoops
	return handlers.WithProxy(func(rt *handlers.Route) (handlers.Handler, error) {
		return proxy.New(rt, proxy.Options{Loops: loops, Budget: b})
	})
}

// startProxies starts the health checks of the proxy routes of set.
func (s *Server) startProxies(set *settings) {
	for _, r := range set.router.Routes() {
		if h, ok := r.Handler.(*proxy.Handler); ok {
			h.Start(s.log)
		}
	}
}

// stopProxies stops the health checks of the running proxy routes (once
// the engine stopped; a reload closes the routes it replaced).
func (s *Server) stopProxies() {
	for _, r := range s.set.Load().router.Routes() {
		if h, ok := r.Handler.(*proxy.Handler); ok {
			_ = h.Close()
		}
	}
}

// proxyLoops holds the proxy state of every event loop.
type proxyLoops struct {
	mu    sync.Mutex
	byEl  sync.Map // *loop -> *proxy.Loop
	list  atomic.Pointer[[]*proxy.Loop]
	count int
}

// proxyLoop returns the proxy state of l, creating it on first use (on
// l's event loop).
func (s *Server) proxyLoop(l *loop) *proxy.Loop {
	if v, ok := s.px.byEl.Load(l); ok {
		return v.(*proxy.Loop)
	}
	s.px.mu.Lock()
	defer s.px.mu.Unlock()
	if v, ok := s.px.byEl.Load(l); ok {
		return v.(*proxy.Loop)
	}
	pl := proxy.NewLoop(l.el, s.px.count, s.log)
	s.px.count++
	s.px.byEl.Store(l, pl)
	var list []*proxy.Loop
	if p := s.px.list.Load(); p != nil {
		list = append(list, *p...)
	}
	list = append(list, pl)
	s.px.list.Store(&list)
	return pl
}

// proxyTick posts the proxy sweep to every loop that has proxy state
// (from OnTick, which runs off the loops).
func (s *Server) proxyTick() {
	p := s.px.list.Load()
	if p == nil {
		return
	}
	for _, pl := range *p {
		if el := pl.EventLoop(); el != nil {
			_ = el.Execute(context.Background(), pl.SweepRunnable())
		}
	}
}

// ProxyStats sums the proxy counters of every loop. Safe for concurrent
// use.
func (s *Server) ProxyStats() proxy.StatsSnapshot {
	var d proxy.StatsSnapshot
	if p := s.px.list.Load(); p != nil {
		for _, pl := range *p {
			pl.Stats.Add(&d)
		}
	}
	return d
}

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
		cs.px = &proxyConn{loop: cs.loop.srv.proxyLoop(cs.loop)}
	}
	return cs.px
}

// The proxy.Client implementation, over the connection's transport seam
// (see proxy.Client for each method's contract). All run on the
// connection's loop but ProxyWake.

// ProxyInbound returns the unconsumed request bytes.
func (cs *conn) ProxyInbound() []byte { return cs.inbound() }

// ProxyConsume drops the first n unconsumed bytes (n < 0: all).
func (cs *conn) ProxyConsume(n int) { cs.consume(n) }

// ProxyInboundBuffered is how many received bytes wait.
func (cs *conn) ProxyInboundBuffered() int { return cs.inboundBuffered() }

// ProxySwitch writes the 101 that starts a tunnel.
func (cs *conn) ProxySwitch(fields []codec.Header, upgrade []byte) {
	cs.sink.switchProtocols(fields, upgrade)
}

// ProxyChunked reports whether the sink frames the response body in
// chunks.
func (cs *conn) ProxyChunked() bool { return cs.sink.framing == sinkChunked }

// ProxyOutboundBuffered is how many bytes wait to leave for the client.
func (cs *conn) ProxyOutboundBuffered() int { return cs.outboundBuffered() }

// ProxyWake runs the connection's events again soon; safe from any
// goroutine (gnet's Wake is).
func (cs *conn) ProxyWake() { _ = cs.c.Wake(nil) }

// ProxyLoop returns the proxy state of the connection's loop.
func (cs *conn) ProxyLoop() *proxy.Loop { return cs.proxyState().loop }

// ProxyClosing reports whether the connection closes after the current
// response whatever it is.
func (cs *conn) ProxyClosing() bool { return cs.closeAfter || cs.loop.srv.draining.Load() }

var errNoDup = errors.New("app: the connection has no descriptor to duplicate")

// ProxyDup returns a net.Conn over a duplicate of the client's socket.
func (cs *conn) ProxyDup() (net.Conn, error) {
	fd, err := cs.c.Dup()
	if err != nil {
		return nil, err
	}
	if fd < 0 {
		return nil, errNoDup
	}
	f := os.NewFile(uintptr(fd), "client")
	nc, err := net.FileConn(f) // duplicates fd again
	_ = f.Close()
	if err == nil && cs.tls != nil {
		return cs.tls.dup(nc) // records, not plaintext, on a TLS connection
	}
	return nc, err
}

// ProxySettings returns the server settings a proxied request follows.
func (cs *conn) ProxySettings() proxy.ClientSettings {
	set := cs.loop.srv.set.Load()
	return proxy.ClientSettings{
		Server:          set.serverHeader,
		BodyBytes:       set.limits.BodyBytes,
		WriteTimeout:    time.Duration(set.write),
		ReadBodyTimeout: time.Duration(set.readBody),
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
	l.stats.BytesOut.Add(uint64(r.BytesOut + cs.sink.wrote))
	var rec accesslog.Record
	if l.srv.access != nil {
		rec.FromRequest(&cs.kept) // the copy pend made
	}
	cs.record(&rec, r.Status, r.BodyBytes+cs.sink.body, now)
	cs.sink.wrote, cs.sink.body = 0, 0
	cs.lastActive = now
	if r.Detach {
		// The tunnel holds the connection's place in the budget from
		// now, and leaves it when it ends.
		if cs.dead {
			l.srv.budget.Rejoin() // OnClose gave it back already
		}
		cs.detached = true
	}
	if cs.dead {
		return
	}
	act := gnet.None
	switch {
	case r.Detach:
		// The socket belongs to a tunnel now: close gnet's descriptor
		// only (no shutdown, which would end the tunnel too).
		cs.closeAfter, cs.closing = true, true
		act = gnet.Close
	case r.Close || cs.closeAfter || l.srv.draining.Load():
		cs.closeAfter = true
		if r.Unread || cs.inboundBuffered() > 0 {
			cs.linger = true
		}
		act = cs.finish(now)
	case cs.inResume:
		cs.endParse = true
		return
	case cs.inboundBuffered() > 0:
		act = cs.serve()
	}
	cs.endPending(act)
}
