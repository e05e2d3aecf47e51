// Package proxy is gale's reverse proxy: upstreams with active and passive
// health, load balancing, per-event-loop keep-alive pools, and the
// exchange that forwards one request and streams its response back.
//
// # Shape
//
// A Handler serves one proxy route (handlers.Handler). Its Serve runs on
// the client connection's event loop; it renders the upstream request head
// at once (the request's bytes alias the client's inbound buffer), takes a
// pooled connection of the chosen upstream on the same loop or dials a new
// one, and answers later: the exchange is the request's continuation
// (handlers.Response.Pending), as a static route's wait for a file load
// is. From then on the client connection parses nothing further and
// resumes the exchange on its events (Pending.Resume), which writes the
// response to the client's sink as it arrives and reports completion
// through the exchange's handlers.Exchange (Ctx.Exchange: End). The
// engine's Exchange also leads to the proxy's state of the loop
// (LoopOf, through Exchange.Local), so no engine names this package.
//
// Upstream connections are the upstream core's (package upstream): they
// belong to the loop of the client that first needed them, for their whole
// life, kept in that loop's pool of the upstream's address (shared with
// every route naming it), dialed with a timeout in a goroutine and
// enrolled into the loop with an *upstream.Conn as their gnet context. The
// exchange is the connection's upstream.User while it uses it, and its
// upstream.Waiter while it waits for one under max_conns. A Loop holds one
// loop's exchanges and the core's state of the loop; nothing in it is
// shared between loops. Upstream health and the address's bound over all
// loops are the only state the loops share, kept in atomics.
//
// A route's upstreams are one immutable set behind an atomic pointer,
// loaded once per request: the fixed ones, and those the route's
// discovery goroutine found for its dns+a:// and dns+srv:// entries
// (discover.go), which publishes a whole new set when the records change.
// The hashing policies rank the set's upstreams by rendezvous hashing of
// their addresses (upstream.Rendezvous), so every process agrees.
//
// # Forwarding (RFC 9110 section 7.6, RFC 9112)
//
// Hop-by-hop fields (Connection, Keep-Alive, Proxy-Connection, TE,
// Trailer, Transfer-Encoding, Upgrade, Proxy-Authenticate,
// Proxy-Authorization) and every field the Connection field names are
// removed first; then X-Forwarded-For, X-Forwarded-Proto and
// X-Forwarded-Host are set (a client's own are kept, and X-Forwarded-For
// appended to, only when it is a trusted proxy; Forwarded from untrusted
// clients is dropped) and "Via: 1.1 gale" added (RFC 9110 section 7.6.3);
// then the route's request header rules apply. The
// upstream always gets HTTP/1.1; bodies are forwarded as they arrive with
// their own framing (Content-Length or chunked). "Expect: 100-continue" is
// forwarded, and the upstream's 100 Continue (like every 1xx) is relayed to
// HTTP/1.1 clients.
//
// Responses are relayed as they arrive through the exchange's response
// sink (handlers.ResponseSink, Ctx.Sink): the proxy hands it the status,
// the end-to-end fields, the body's length (the upstream's Content-Length,
// or -1 for a chunked or close-delimited body) and the body de-framed,
// and the client's protocol engine frames it (for HTTP/1.1: by length, in
// gale's own chunks, or for an HTTP/1.0 client delimited by the close).
// The upstream's chunk extensions and trailer fields never reach the
// client. A body that ends with the upstream's close makes the client
// connection close after it. Responses to HEAD and 204/304 responses have
// no body. A 101 answer to an Upgrade request turns both connections into
// a tunnel, served off the loop until either side closes; tunnels and
// the off-loop copies below exist on HTTP/1.1 only: the proxy asks the
// exchange for handlers.Upgrader and handlers.Duplicator, which only the
// HTTP/1.1 engine implements. Without them an Upgrade is not forwarded,
// and a body that outruns the client is paced through the sink.
//
// # Back-pressure
//
// gnet reads every readable socket into memory and cannot stop reading
// one, so a fast upstream and a slow client would pile the whole response
// up in the client's output buffer. Once that buffer holds more than
// server.max_buffered_output, the upstream connection is taken out of
// gnet (its descriptor duplicated, the gnet connection closed, so the
// kernel's receive window throttles the upstream), and once the client's
// buffered output drained, a goroutine copies the rest of the body between
// the two sockets (splice(2) for Content-Length bodies, and
// close-delimited ones the client reads to the close; otherwise in the
// framing the sink chose) and wakes the client connection when done. A connection whose
// body ended cleanly is enrolled back into the loop's pool.
//
// That hand-off needs the whole request sent, since the loop must go on
// reading the client for the rest of its body. Before that (and during
// interim 1xx responses) a client that falls behind makes the exchange
// hold: the upstream's bytes wait in its connection's inbound buffer, up
// to MaxHeldResponse, and relaying resumes once the client caught up;
// past the bound both connections close. Request bodies wait within their
// own bound while the upstream is dialed or slow to read them, apart from
// bytes beyond the request (MaxPendingInput). backpressure.go has the
// details.
//
// # Failures
//
// A refused or timed-out connect, a reset, a garbage or truncated response
// head answer 502 (504 for the connect and response-header timeouts) as
// long as nothing of the response was sent; after that the client
// connection is closed, so a truncated body is never taken for a complete
// one. Requests that reached no upstream (a failed connect) are retried on
// another upstream, and requests safe to repeat (idempotent, without a
// body) that were written to a pooled connection the upstream had just
// closed are retried on a fresh connection, up to the route's retries.
package proxy
