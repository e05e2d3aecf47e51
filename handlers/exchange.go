package handlers

import (
	"net"
	"time"

	"gale/codec"
)

// Exchange is what the protocol engine gives a handler that writes its
// response itself through Ctx.Sink (the proxy, FastCGI), besides the sink
// and the body source: what every engine has, whatever the protocol. The
// engine sets it as Ctx.Exchange for each exchange.
//
// What only some protocols have is asked for by type assertion on the
// Exchange, the way net/http's Hijacker is: RawInput and Upgrader (the
// bytes as the client sent them, and the 101 that turns the connection
// into a tunnel) and Duplicator (the socket, for copies off the loop)
// exist on HTTP/1.1 only. A handler that finds none of them stays on the
// loop and speaks through the sink.
//
// Every method runs on the exchange's event loop, except Wake.
type Exchange interface {
	// End ends the pending response: the engine counts and logs it, then
	// frees the exchange (HTTP/1.1 closes the connection or resumes
	// parsing). It must be the last thing the handler does with the
	// exchange; on HTTP/1.1 it may serve the next pipelined request (and
	// start another exchange) before it returns.
	End(r Result)

	// Wake makes the exchange's loop resume it (Pending.Resume) soon.
	// Safe for concurrent use: goroutines that work for the exchange call
	// it when they are done or have something for the loop.
	Wake()

	// Settings returns the server settings that apply to the exchange
	// (read when it is served).
	Settings() ExchangeSettings

	// Closing reports whether the connection closes after this exchange
	// whatever its response (the server is stopping, or the client asked
	// for it). Protocols that end streams on their own report false.
	Closing() bool

	// Local returns the state of kind k kept on the exchange's loop, made
	// on the first call on that loop; nil when the server keeps none of
	// that kind. The caller asserts it to its concrete type. It neither
	// locks nor allocates once made.
	Local(k LocalKind) any
}

// LocalKind names a kind of per-loop state the server keeps for the
// handlers that answer later (see Exchange.Local).
type LocalKind uint8

const (
	// LocalUpstreams is the loop's upstream state: its connection
	// pools, dialing and counters (the proxy's *proxy.Loop, through
	// which FastCGI finds its loop too).
	LocalUpstreams LocalKind = iota
	// LocalProxyCache is the loop's *CacheLoop: its views of the route
	// caches (proxycache.go).
	LocalProxyCache
)

// ExchangeSettings are the server-wide settings a handler that answers
// later follows.
type ExchangeSettings struct {
	Server          []byte        // Server field of responses the handler renders itself (502, 504); nil = none; static memory
	WriteTimeout    time.Duration // timeouts.write: no progress writing to the client for this long ends an off-loop copy
	ReadBodyTimeout time.Duration // timeouts.read_body: no progress reading a request body for this long answers 408
}

// Result is how a pending response ended, for Exchange.End.
type Result struct {
	Status    int   // the final status sent to the client (0: none was)
	BodyBytes int64 // response body bytes the handler sent past the sink (an off-loop copy), for the access log; the engine counts what went through the sink itself
	BytesOut  int64 // every byte the handler wrote to the client past the sink, for the counters
	Close     bool  // close the connection once its output drained
	Unread    bool  // request bytes may be left unread (Close is set): linger while closing, so they do not turn the close into a reset
	Detach    bool  // HTTP/1.1 after Upgrader.SwitchProtocols: the socket now belongs to a tunnel; close the gnet connection at once, without shutdown or lingering; the tunnel takes over the client's place in the budget (fds.Budget.Join) and leaves it when it ends
	At        int64 // when the response ended (unix ns), read by the handler already; 0 = now
}

// RawInput is implemented by an Exchange whose protocol hands the handler
// the client's bytes as they arrived (HTTP/1.1): the rest of the request
// body, pipelined requests, and after a 101 the tunnel's first bytes. On
// HTTP/2 and HTTP/3 the body source and the flow-control windows are all
// there is.
type RawInput interface {
	// Inbound returns the bytes received from the client and not
	// consumed yet. The slice is valid until Consume or the end of the
	// current event.
	Inbound() []byte
	// Consume drops the first n bytes of Inbound (n < 0: all).
	Consume(n int)
	// InboundBuffered is how many received bytes wait.
	InboundBuffered() int
}

// Upgrader is implemented by an Exchange whose connection can become a
// tunnel after a 101 (Switching Protocols) response: HTTP/1.1 only (RFC
// 9113 section 8.6 forbids Upgrade on HTTP/2; HTTP/3 has none either).
type Upgrader interface {
	RawInput
	// Upgrading reports whether the request asks to switch protocols
	// (HTTP/1.1: Connection names "upgrade" and an Upgrade field is
	// present, RFC 9110 section 7.8).
	Upgrading() bool
	// SwitchProtocols writes the 101 response whose end-to-end fields
	// are fields, with the Connection and Upgrade fields a tunnel needs
	// (upgrade is the Upgrade value agreed on). A failing write closes
	// the connection inside the call (the Pending's Closed runs before
	// SwitchProtocols returns).
	SwitchProtocols(fields []codec.Header, upgrade []byte)
}

// Duplicator is implemented by an Exchange that owns its connection alone
// (HTTP/1.1), so that a handler may copy the rest of a response, or a
// tunnel, to the client from another goroutine over a duplicate of the
// socket. A connection that carries other exchanges (HTTP/2, HTTP/3)
// has none: its handler paces what outruns the client through the sink.
type Duplicator interface {
	// Dup returns a connection to the same client usable from another
	// goroutine (for plain TCP, over a duplicate of the socket; for TLS,
	// one that carries records). The handler writes nothing through the
	// sink while it uses the duplicate. An error means the handler stays
	// on the loop.
	Dup() (net.Conn, error)
	// Chunked reports whether the sink frames the body of the response
	// under way in chunks (else it is sent as it is: by length, or
	// delimited by the close), for a copy that writes the rest of the
	// body to the duplicate itself.
	Chunked() bool
	// OutboundBuffered is how many bytes written through the loop wait
	// to leave for the client; a copy over the duplicate starts once it
	// is 0.
	OutboundBuffered() int
}

// InboundBuffered is how many raw bytes of x's client wait unconsumed
// (RawInput), or 0 where the protocol bounds what waits itself.
func InboundBuffered(x Exchange) int {
	if r, ok := x.(RawInput); ok {
		return r.InboundBuffered()
	}
	return 0
}
