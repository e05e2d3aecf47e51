package wire

import "sync/atomic"

// Connections by protocol and by state, for the metrics. A connection's
// protocol is counted once it is chosen (after any TLS handshake); its
// state is sampled by the loop's timeout sweep, which walks every
// connection anyway, so the request path does nothing for it.

// Proto is the protocol a connection speaks.
type Proto uint8

// The protocols; ProtoNone is a connection whose protocol is not chosen
// yet (a TLS handshake, or first bytes that do not tell).
const (
	ProtoNone  Proto = iota
	ProtoH1          // HTTP/1.1 over cleartext
	ProtoH1TLS       // HTTP/1.1 over TLS
	ProtoH2          // HTTP/2 over TLS (ALPN h2)
	ProtoH2C         // HTTP/2 over cleartext (prior knowledge)
	NumProtos
)

// ProtoNames are the protocol label values.
var ProtoNames = [NumProtos]string{"none", "h1", "h1-tls", "h2", "h2c"}

// ConnState is what a connection is doing, in nginx's stub_status terms.
type ConnState uint8

// The states.
const (
	StateHandshake ConnState = iota // the TLS handshake is under way
	StateReading                    // a request head or body is arriving, nothing to answer yet
	StateWriting                    // a response is being produced or sent, or the connection is closing after one
	StateIdle                       // kept alive between requests (nginx's "waiting")
	NumStates
)

// StateNames are the state label values.
var StateNames = [NumStates]string{"handshake", "reading", "writing", "idle"}

// ConnGauges are one loop's connection counts by protocol and state. The
// loop writes them; anyone reads them.
type ConnGauges struct {
	Open   [NumProtos]atomic.Int64  // open connections by protocol (ProtoNone: not chosen yet is not counted here)
	Chosen [NumProtos]atomic.Uint64 // connections that chose each protocol, ever
	States [NumStates]atomic.Int64  // open connections by state, as the last sweep found them
}

// Choose counts a connection that chose protocol p.
func (g *ConnGauges) Choose(p Proto) {
	g.Open[p].Add(1)
	g.Chosen[p].Add(1)
}

// Closed counts the close of a connection that had chosen p (ProtoNone:
// none).
func (g *ConnGauges) Closed(p Proto) {
	if p != ProtoNone {
		g.Open[p].Add(-1)
	}
}

// StateTally counts connections by state during one sweep.
type StateTally [NumStates]int64

// Publish stores the tally as the loop's state gauges.
func (g *ConnGauges) Publish(t *StateTally) {
	for i := range t {
		g.States[i].Store(t[i])
	}
}
