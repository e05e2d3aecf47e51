package app

import (
	"net/netip"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/app/h1"
	"gale/app/h2conn"
	"gale/app/tlsconn"
	"gale/app/wire"
	"gale/config"
)

// conn is one client connection: its transport, the TLS layer under it
// when its listener is TLS, and the protocol engine that speaks over it.
// Every connection starts with the HTTP/1.1 engine and may move to the
// HTTP/2 one before its first request (protocol.go). It is owned by its
// loop.
type conn struct {
	wire.Conn // the transport: every byte to and from the client goes through it
	loop      *loop
	idx       int // position in loop.conns

	h1      h1.Conn          // the HTTP/1.1 engine
	h2      *h2conn.Conn     // the HTTP/2 engine; nil while the connection speaks HTTP/1.1
	tls     *tlsconn.Conn    // the TLS layer under the transport; nil for plain connections
	proto   bool             // the protocol is known: HTTP/2 was or was not chosen
	kind    wire.Proto       // the protocol chosen, for the gauges (conn_state.go); ProtoNone until then
	protos  config.Protocols // what the listener speaks (listen[].protocols), set at open
	toHTTPS *httpsRedirect   // set on redirect_to_https listeners: every request is redirected
	altSvc  []byte           // the Alt-Svc value advertising HTTP/3 on the listener; nil for none

	proxyWait bool // the listener expects a PROXY protocol header, which has not arrived yet (proxyproto.go)

	li       *listenerInfo // the listener that accepted it; nil when every listener is alike
	addrKey  netip.Addr    // what the per-address limit counts it by (screen.go)
	addrHeld bool          // it holds a place in that count
}

func newConn(l *loop, c gnet.Conn) *conn {
	cs := &conn{loop: l}
	cs.Init(&l.Loop, c, time.Now().UnixNano())
	cs.h1.Open(&cs.Conn, &l.h1)
	cs.protos = config.DefaultProtocols(false) // until attachTransport knows the listener
	return cs
}

// engine is the protocol engine the connection speaks now.
func (cs *conn) engine() wire.Engine {
	if cs.h2 != nil {
		return cs.h2
	}
	return &cs.h1
}

// release drops what the connection holds once gnet has closed it.
func (cs *conn) release() {
	cs.h1.Release()
	if cs.h2 != nil {
		cs.h2.Release()
	}
	if cs.tls != nil {
		cs.tls.Release()
	}
}

// onTraffic runs the connection's OnTraffic: the TLS handshake while it
// is not done, the choice of protocol, then the engine.
func (cs *conn) onTraffic() gnet.Action {
	if cs.proxyWait {
		if a, stop := cs.proxyHeader(); stop {
			return a
		}
	}
	if cs.tls != nil {
		if a, handled := cs.tls.Traffic(); handled {
			if a == gnet.None && cs.tls.Failed() {
				// An alert is on its way: the sweep closes after it.
				cs.h1.CloseAfterAlert()
			}
			return a
		}
	}
	if !cs.proto {
		if a, stop := cs.chooseProto(); stop {
			return a
		}
	}
	if cs.h2 != nil {
		return cs.h2.Traffic()
	}
	return cs.h1.Traffic()
}

// check runs on the loop from the sweep. It enforces the handshake's
// timeouts, then the engine's, and reports whether the connection must
// be closed now.
func (cs *conn) check(now int64, set *wire.Settings) bool {
	if cs.Dead {
		return false
	}
	if cs.proxyWait {
		return now-cs.LastActive > set.ReadHeader // timeouts.read_header bounds the wait for the PROXY header
	}
	if cs.tls != nil && cs.tls.Handshaking() {
		return cs.tls.CheckHandshake(now)
	}
	return cs.engine().Check(now, set)
}
