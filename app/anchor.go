package app

import (
	"context"
	"errors"
	"net"

	"github.com/panjf2000/gnet/v2"
)

// Anchors: the server learns of an event loop when a connection first
// opens on it (loopFor), and gnet has no other way to name its loops.
// HTTP/3 requests arrive over UDP, beside gnet, and need the loops from
// the start: so at boot the server enrolls one end of a loopback connection
// per loop as an anchor connection, through gnet's load balancing, until
// every loop is known. Anchors send nothing, are not client connections
// (neither counted nor drained), and close with the engine. Each holds
// two descriptors (gnet's end and the peer kept open), counted in the
// budget.

// anchor is the context of an anchor connection: the other end of its
// loopback connection.
type anchor struct {
	peer net.Conn
}

// anchorLoops enrolls anchors until every one of the engine's loops is
// known, trying a few times more than there are loops (a load balancing
// by source address sends every anchor to the same loop). An anchor is
// a loopback TCP connection made through a listener of its own, closed
// once the anchors are made (gnet enrolls stream sockets with an
// address).
func (s *Server) anchorLoops(eng gnet.Engine) {
	want := loopCount(s.sh.Set.Load().Cfg.Server)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.log.Warn("http3: no loopback listener to find the event loops with; HTTP/3 uses the loops TCP connections opened on", "err", err)
		return
	}
	defer ln.Close()
	for try := 0; try < 2*want+2 && len(s.loopSlice()) < want; try++ {
		if err := s.enrollAnchor(eng, ln); err != nil {
			s.log.Warn("http3: an event loop could not be found; HTTP/3 uses the loops found so far", "found", len(s.loopSlice()), "loops", want, "err", err)
			return
		}
	}
}

// enrollAnchor enrolls one anchor and waits until gnet opened it (or
// failed to).
func (s *Server) enrollAnchor(eng gnet.Engine, ln net.Listener) error {
	if !s.sh.Budget.Acquire(2) {
		return errors.New("no descriptors left")
	}
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		s.sh.Budget.Release(2)
		return err
	}
	peer, err := ln.Accept()
	if err != nil {
		_ = nc.Close()
		s.sh.Budget.Release(2)
		return err
	}
	a := &anchor{peer: peer}
	ctx := gnet.NewNetConnContext(gnet.NewContext(context.Background(), a), nc)
	ch, err := eng.Register(ctx) // gnet duplicates nc's descriptor and closes nc
	if err != nil {
		_ = nc.Close()
		s.dropAnchor(a)
		return err
	}
	if res := <-ch; res.Err != nil {
		s.dropAnchor(a)
		return res.Err
	}
	return nil
}

// anchorOf returns the anchor that c is, if it is one.
func anchorOf(c gnet.Conn) (*anchor, bool) {
	a, ok := c.Context().(*anchor)
	return a, ok
}

// dropAnchor closes an anchor's peer and gives its descriptors back.
func (s *Server) dropAnchor(a *anchor) {
	_ = a.peer.Close()
	s.sh.Budget.Release(2)
}
