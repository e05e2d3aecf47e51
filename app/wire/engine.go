package wire

import (
	"github.com/panjf2000/gnet/v2"
)

// Engine is a protocol engine on one connection (HTTP/1.1, HTTP/2), as
// the server drives it. Every method runs on the connection's loop.
type Engine interface {
	// Traffic handles an OnTraffic event (bytes arrived, or a wake):
	// it reads through the transport, answers, and returns gnet's
	// action.
	Traffic() gnet.Action
	// Check runs from the timeout sweep: it enforces the timeouts,
	// moves closing and paused connections along, and reports whether
	// the connection must be closed now.
	Check(now int64, set *Settings) bool
	// Drain begins a graceful stop: a connection between requests
	// reports that it can close now; a busy one closes after its
	// current responses (HTTP/1.1) or streams (HTTP/2, after GOAWAY).
	Drain() bool
	// Release drops what the engine holds once gnet closed the
	// connection.
	Release()
	// State is what the connection is doing, for the metrics (read by
	// the sweep).
	State() ConnState
}
