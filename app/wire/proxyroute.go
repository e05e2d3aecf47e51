package wire

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/config"
	"gale/fds"
	"gale/handlers"
	"gale/proxy"
	"gale/upstream"
)

// proxyOption gives handlers.Build the factory of proxy routes, which
// count their descriptors in b.
func proxyOption(cfg *config.Config, b *fds.Budget) handlers.Option {
	loops := cfg.Server.EventLoops
	return handlers.WithProxy(func(rt *handlers.Route) (handlers.Handler, error) {
		return proxy.New(rt, proxy.Options{Loops: loops, Budget: b})
	})
}

// forwardAuthOption gives handlers.Build the factory of forward_auth
// gates, whose connections count in b.
func forwardAuthOption(cfg *config.Config, b *fds.Budget) handlers.Option {
	loops := cfg.Server.EventLoops
	return handlers.WithForwardAuth(func(rt *handlers.Route) (handlers.AuthGate, error) {
		return proxy.NewAuth(rt, proxy.Options{Loops: loops, Budget: b})
	})
}

// ExchangeSettings returns the server settings that a handler answering
// later follows, whichever protocol the client speaks.
func (s *Settings) ExchangeSettings() handlers.ExchangeSettings {
	return handlers.ExchangeSettings{
		Server:          s.ServerHeader,
		WriteTimeout:    time.Duration(s.Write),
		ReadBodyTimeout: time.Duration(s.ReadBody),
	}
}

// ProxyLoops holds the proxy state of every event loop, made on a loop's
// first proxied request. Safe for concurrent use.
type ProxyLoops struct {
	group upstream.Group // the upstream core's bounds over every loop
	mu    sync.Mutex
	byEl  sync.Map // *Loop -> *proxy.Loop
	list  atomic.Pointer[[]*proxy.Loop]
	count int

	// Dial, when set before the first proxied request, replaces how the
	// loops' proxy state makes upstream connections: it is handed each
	// new connection, to open and drive by hand (tests of an engine that
	// run without gnet).
	Dial func(Upstream)
}

// Upstream is a connection to an upstream as gnet drives it, for
// ProxyLoops.Dial.
type Upstream interface {
	OnOpen(gnet.Conn)
	OnTraffic(gnet.Conn) gnet.Action
	OnClose(gnet.Conn, error)
}

// For returns the proxy state of loop l, creating it on first use. It
// runs on l.
func (p *ProxyLoops) For(l *Loop, log *slog.Logger) *proxy.Loop {
	if v, ok := p.byEl.Load(l); ok {
		return v.(*proxy.Loop)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.byEl.Load(l); ok {
		return v.(*proxy.Loop)
	}
	pl := proxy.NewLoop(l.EL, p.count, log, &p.group)
	if d := p.Dial; d != nil {
		pl.SetDial(func(uc *upstream.Conn) { d(uc) })
	}
	p.count++
	p.byEl.Store(l, pl)
	var list []*proxy.Loop
	if cur := p.list.Load(); cur != nil {
		list = append(list, *cur...)
	}
	list = append(list, pl)
	p.list.Store(&list)
	return pl
}

// Tick posts each loop's proxy sweep (timeouts, idle pools) to its loop.
func (p *ProxyLoops) Tick() {
	cur := p.list.Load()
	if cur == nil {
		return
	}
	for _, pl := range *cur {
		if el := pl.EventLoop(); el != nil {
			_ = el.Execute(context.Background(), pl.SweepRunnable())
		}
	}
}

// Stats sums the proxy counters of every loop.
func (p *ProxyLoops) Stats() proxy.StatsSnapshot {
	var d proxy.StatsSnapshot
	if cur := p.list.Load(); cur != nil {
		for _, pl := range *cur {
			pl.Stats.Add(&d)
		}
	}
	return d
}
