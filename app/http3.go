package app

// HTTP/3 on the TLS listeners that set http3: true (package h3 is the
// engine): the QUIC listeners are bound when the server runs, on the
// UDP port of their TLS listener; their requests are answered on the
// event loops, which the server hands the engine (Loops) and makes sure
// exist before the first TCP connection (anchors); a graceful stop sends
// GOAWAY and waits for their requests in flight beside the TCP drain.

import (
	"context"
	"fmt"
	"sync"

	"gale/app/h3"
	"gale/app/wire"
	"gale/config"
)

// altSvcValue renders, once per listener, the Alt-Svc value advertising
// HTTP/3 on port, which its HTTP/1.1 and HTTP/2 responses carry
// (wire.HeadFields).
func altSvcValue(port uint16, h config.HTTP3) []byte {
	return []byte(h3.AltSvc(int(port), int64(h.AltSvcMaxAge.Seconds())))
}

// Loops implements h3.Loops: the event loops known so far.
func (s *Server) Loops() []*wire.Loop {
	if p := s.wireLoops.Load(); p != nil {
		return *p
	}
	return nil
}

// addWireLoop publishes l to Loops. It runs as l is made, under the
// lock of s.loops.
func (s *Server) addWireLoop(l *loop) {
	list := append(append([]*wire.Loop(nil), s.Loops()...), &l.Loop)
	s.wireLoops.Store(&list)
}

// startHTTP3 binds the QUIC listeners; serveHTTP3 serves them.
func (s *Server) startHTTP3() error {
	cfg := s.sh.Set.Load().Cfg
	for i := range s.listeners {
		li := &s.listeners[i]
		if !li.http3 {
			continue
		}
		ql, err := h3.Listen(h3.Config{
			Addr:   s.addrs[i],
			TLS:    li.tls.QUICConfig(),
			Certs:  li.tls,
			HTTP3:  cfg.Server.HTTP3,
			Shared: &s.sh,
			Loops:  s,
			Log:    s.log,
		})
		if err != nil {
			s.closeHTTP3()
			return fmt.Errorf("listen %s: %w", cfg.Listen[i].Address, err)
		}
		s.quic = append(s.quic, ql)
	}
	return nil
}

// bootHTTP3 runs after the loops started (gnet starts its ticker once
// they run): it makes every loop known (anchors), serves HTTP/3, and
// only then says the server booted.
func (s *Server) bootHTTP3() {
	s.engMu.Lock()
	eng := s.eng
	s.engMu.Unlock()
	s.anchorLoops(eng)
	s.serveHTTP3()
	close(s.booted)
}

// serveHTTP3 serves the QUIC listeners on goroutines of their own.
func (s *Server) serveHTTP3() {
	for _, ql := range s.quic {
		go func() {
			if err := ql.Serve(); err != nil {
				s.log.Error("http3: serving stopped", "port", ql.Port(), "err", err)
			}
		}()
	}
}

// shutdownHTTP3 stops the QUIC listeners gracefully (GOAWAY, then the
// requests in flight finish until ctx ends) and returns a channel closed
// once all of them stopped.
func (s *Server) shutdownHTTP3(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, ql := range s.quic {
		wg.Go(func() { _ = ql.Shutdown(ctx) })
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// closeHTTP3 closes the QUIC listeners at once.
func (s *Server) closeHTTP3() {
	for _, ql := range s.quic {
		_ = ql.Close()
	}
}
