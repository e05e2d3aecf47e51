package app

import (
	"github.com/panjf2000/gnet/v2"

	"gale/app/wire"
	"gale/proxy"
)

// This file connects the proxy to the server: it starts and stops the
// proxy routes' health checks, sums their counters, and dispatches the
// gnet events of upstream connections (their context is a
// *proxy.UpstreamConn, set before OnOpen; accepted clients arrive without
// one). The routes are built by wire.CompileBudget, and the HTTP/1.1 engine
// implements proxy.Client (package h1).

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
