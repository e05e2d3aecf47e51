package app

import (
	"log/slog"

	"github.com/panjf2000/gnet/v2"

	"gale/app/wire"
	"gale/gateway"
	"gale/handlers"
	"gale/proxy"
	"gale/upstream"
)

// This file connects the proxy to the server: it starts and stops the
// proxy routes' health checks, sums their counters, and dispatches the
// gnet events of upstream connections (their context is an
// *upstream.Conn, set before OnOpen; accepted clients arrive without
// one). The routes are built by wire.CompileBudget, and the HTTP/1.1 engine
// implements handlers.Exchange for the proxy (package h1).

// startProxies starts the health checks of the proxy routes of set, and
// gives the FastCGI routes (a php route's scripts among them) the log.
func (s *Server) startProxies(set *wire.Settings) {
	for _, r := range set.Router.Routes() {
		h := handlers.Unwrap(r.Handler)
		if sh, ok := h.(interface{ Scripts() handlers.ScriptHandler }); ok && sh.Scripts() != nil {
			h = sh.Scripts()
		}
		if st, ok := h.(interface{ Start(*slog.Logger) }); ok {
			st.Start(s.log)
		}
		if a, ok := r.AuthGate().(*proxy.AuthService); ok {
			a.Start(s.log)
		}
	}
}

// stopProxies stops the health checks of the running proxy routes and
// retires the FastCGI routes (once the engine stopped; a reload closes the
// routes it replaced).
func (s *Server) stopProxies() {
	for _, r := range s.sh.Set.Load().Router.Routes() {
		h := handlers.Unwrap(r.Handler)
		if sh, ok := h.(interface{ Scripts() handlers.ScriptHandler }); ok && sh.Scripts() != nil {
			h = sh.Scripts()
		}
		switch h := h.(type) {
		case *proxy.Handler:
			_ = h.Close()
		case *gateway.Handler:
			_ = h.Close()
		}
		if a, ok := r.AuthGate().(*proxy.AuthService); ok {
			_ = a.Close()
		}
	}
}

// ProxyStats sums the proxy counters of every loop. Safe for concurrent
// use.
func (s *Server) ProxyStats() proxy.StatsSnapshot { return s.sh.Proxies.Stats() }

// enrolled is a connection gale opened itself and enrolled into a loop
// (*upstream.Conn: to a proxy upstream or a FastCGI server). Its gnet context, set before OnOpen, takes its events.
type enrolled interface {
	OnOpen(gnet.Conn)
	OnTraffic(gnet.Conn) gnet.Action
	OnClose(gnet.Conn, error)
}

var _ enrolled = (*upstream.Conn)(nil)

// upstreamOf tells whether c is a connection gale opened (accepted
// clients arrive without a context).
func upstreamOf(c gnet.Conn) (enrolled, bool) {
	uc, ok := c.Context().(enrolled)
	return uc, ok
}

// FastCGIStats sums the counters of the running FastCGI routes (a php
// route's scripts among them) over every loop. A reload starts the new
// routes' counters from zero. Safe for concurrent use.
func (s *Server) FastCGIStats() gateway.StatsSnapshot {
	var d gateway.StatsSnapshot
	for _, r := range s.sh.Set.Load().Router.Routes() {
		h := handlers.Unwrap(r.Handler)
		if sh, ok := h.(interface{ Scripts() handlers.ScriptHandler }); ok && sh.Scripts() != nil {
			h = sh.Scripts()
		}
		if g, ok := h.(*gateway.Handler); ok {
			g.Stats(&d)
		}
	}
	return d
}
