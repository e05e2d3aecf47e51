package app

import (
	"net/netip"

	"gale/app/wire"
)

// Screening at accept: a listener's deny list and its per-address
// connection limit (max_conns_per_address, nginx's limit_conn), applied
// before a connection's first byte is read, or, on a proxy_protocol
// listener, right after the PROXY header named the client. A refused
// connection is closed unanswered and counted.

// screen reports whether the connection from ap may go on, and holds its
// place in the per-address count when the listener limits it.
func (s *Server) screen(cs *conn, ap netip.AddrPort) bool {
	li := cs.li
	if li == nil || len(li.deny) == 0 && li.maxPerAddr == 0 {
		return true
	}
	a := ap.Addr().Unmap()
	for _, p := range li.deny {
		if p.Contains(a) {
			cs.loop.Stats.Screened.Add(1)
			return false
		}
	}
	if li.maxPerAddr > 0 {
		key := wire.AddrKey(a)
		if !s.perAddr.Acquire(key, int64(li.maxPerAddr)) {
			cs.loop.Stats.Screened.Add(1)
			return false
		}
		cs.addrKey, cs.addrHeld = key, true
	}
	return true
}

// unscreen gives back a closed connection's place in the per-address
// count.
func (s *Server) unscreen(cs *conn) {
	if cs.addrHeld {
		cs.addrHeld = false
		s.perAddr.Release(cs.addrKey)
	}
}
