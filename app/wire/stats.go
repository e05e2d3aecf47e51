package wire

import (
	"sync/atomic"
)

// Stats are one event loop's counters. Only the owning loop writes them;
// any goroutine may read them (atomics keep the reads race-free, and an
// uncontended atomic add costs the loop a few nanoseconds). The server
// sums the loops' Stats when they are read.
type Stats struct {
	Accepted    atomic.Uint64    // connections opened
	Open        atomic.Int64     // connections currently open
	Requests    atomic.Uint64    // requests answered (including errors)
	ByClass     [6]atomic.Uint64 // responses by status class: index 1 = 1xx ... 5 = 5xx
	BytesIn     atomic.Uint64    // request bytes consumed
	BytesOut    atomic.Uint64    // response bytes handed to the socket layer
	TimedOut    atomic.Uint64    // connections closed by a timeout
	Rejected    atomic.Uint64    // connections refused by the descriptor budget, limits.connections, while stopping, or beyond a client address's share of TLS handshakes
	ParseErrors atomic.Uint64    // requests answered with a codec error
	H2Conns     atomic.Uint64    // connections that chose HTTP/2 (ALPN h2 or the h2c preface)
	H2Requests  atomic.Uint64    // HTTP/2 streams answered (included in Requests)
	H3Conns     atomic.Uint64    // QUIC connections whose requests this loop answers (HTTP/3)
	H3Requests  atomic.Uint64    // HTTP/3 requests answered (included in Requests)
	NoPreface   atomic.Uint64    // connections closed unanswered on a listener without h1 because they did not open with the HTTP/2 preface
	BadProxyHdr atomic.Uint64    // connections closed unanswered on a proxy_protocol listener: no valid PROXY header
	Screened    atomic.Uint64    // connections closed at accept by a listener's deny list or per-address limit
	ResetFloods atomic.Uint64    // HTTP/2 connections closed (or refused) because their address or loop spent its reset budget
	OverShare   atomic.Uint64    // HTTP/2 streams of forwarding routes answered 503: their address held its share of a pressed descriptor budget
}
