package app

import "gale/app/wire"

// The connection's place in the loop's gauges by protocol and state
// (wire.ConnGauges).

// chose counts the connection's protocol, once it is chosen: h2 is
// HTTP/2 over TLS or h2c, HTTP/1.1 is over TLS or not.
func (cs *conn) chose() {
	k := wire.ProtoH1
	switch {
	case cs.h2 != nil && cs.tls != nil:
		k = wire.ProtoH2
	case cs.h2 != nil:
		k = wire.ProtoH2C
	case cs.tls != nil:
		k = wire.ProtoH1TLS
	}
	cs.kind = k
	cs.loop.Conns.Choose(k)
}

// state is what the connection is doing, for the sweep's tally.
func (cs *conn) state() wire.ConnState {
	if cs.tls != nil && cs.tls.Handshaking() {
		return wire.StateHandshake
	}
	if !cs.proto {
		return wire.StateReading // its first bytes do not tell its protocol yet
	}
	return cs.engine().State()
}
