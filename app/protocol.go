package app

import (
	"crypto/tls"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/app/h2conn"
	"gale/app/wire"
)

// http2On reports whether new connections may speak HTTP/2 (the TLS
// listeners' ALPN asks it for every handshake). Safe for concurrent use.
func (s *Server) http2On() bool { return s.sh.Set.Load().HTTP2On }

// chooseProto decides, on a connection's first bytes after any TLS
// handshake, whether it speaks HTTP/2, within what its listener speaks
// (cs.protos). On TLS, ALPN "h2" chooses HTTP/2 (refused with
// INADEQUATE_SECURITY under a forbidden TLS 1.2 suite) and anything else
// HTTP/1.1, except on a listener without h1: there a client that
// negotiated no protocol is HTTP/2 if it opens with the client preface. On
// a plain listener with h2c, the preface chooses HTTP/2 (prior knowledge,
// RFC 9113 section 3.3); a listener without h2c never looks for it.
//
// stop says that onTraffic must return a now: the connection waits for
// more bytes before it can tell (a prefix of the preface arrived), or is
// closed. A listener without h1 closes a connection whose first bytes are
// not the preface without answering, as RFC 9113 section 3.4 has an
// endpoint do with an invalid preface: an HTTP/1.1 error response would
// be garbage to a client that believes it speaks HTTP/2.
func (cs *conn) chooseProto() (a gnet.Action, stop bool) {
	set := cs.loop.srv.sh.Set.Load()
	if cs.tls != nil {
		st := cs.tls.ConnectionState()
		switch {
		case st.NegotiatedProtocol == "h2":
			cs.proto = true
			cs.startH2(set, &st)
			cs.chose()
			return gnet.None, false
		case cs.protos.H1():
			cs.proto = true
			cs.chose()
			return gnet.None, false
		}
		return cs.sniffProto(set, set.HTTP2On && cs.protos.H2(), &st)
	}
	return cs.sniffProto(set, set.HTTP2On && cs.protos.H2C(), nil)
}

// sniffProto chooses by the connection's first bytes: HTTP/2 when h2 is
// allowed and they are the client preface, else HTTP/1.1 when the
// listener has h1, else a close. st is the TLS state, nil on a plain
// connection.
func (cs *conn) sniffProto(set *wire.Settings, h2 bool, st *tls.ConnectionState) (gnet.Action, bool) {
	state := h2conn.NotPreface
	if h2 {
		state = h2conn.SniffPreface(cs.Inbound())
	}
	switch {
	case state == h2conn.IsPreface:
		cs.proto = true
		cs.h1.EndHeadWait()
		cs.startH2(set, st)
		cs.chose()
	case state == h2conn.MaybePreface:
		cs.h1.WaitHead(time.Now().UnixNano()) // read_header bounds the wait
		return gnet.None, true
	case cs.protos.H1():
		cs.proto = true
		cs.h1.EndHeadWait()
		cs.chose()
	default:
		cs.loop.Stats.NoPreface.Add(1)
		return gnet.Close, true
	}
	return gnet.None, false
}

// startH2 makes cs an HTTP/2 connection; st is its TLS session's state,
// nil for h2c.
func (cs *conn) startH2(set *wire.Settings, st *tls.ConnectionState) {
	cs.h2 = h2conn.New(&cs.Conn, set, cs.redirect(), st)
	cs.h2.SetAltSvc(cs.altSvc)
}
