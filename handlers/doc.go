// Package handlers is the request contract between gale's protocol
// engines (HTTP/1.1, HTTP/2, HTTP/3) and what answers requests, the
// router and the local handlers (static, respond, redirect, header rules,
// access control).
//
// An exchange is one request and its response (Ctx): a handler sees only
// the exchange, never the connection, so the same handler serves every
// protocol. A handler answers at once by filling Ctx.Resp, or later
// through a Pending continuation the engine resumes on the exchange's
// loop (handler.go). A handler that answers later by writing the response
// itself (the proxy, FastCGI) uses three capabilities the engine sets in
// the Ctx:
//
//   - Ctx.Sink, a ResponseSink: the response head as status and fields,
//     de-framed body bytes, trailers; the engine renders the framing
//     (sink.go);
//   - Ctx.Body, a BodySource: the request body de-framed, with credit
//     given back as it is consumed (sink.go);
//   - Ctx.Exchange, an Exchange: the end of the exchange with its Result,
//     a wake safe from any goroutine, the ExchangeSettings that apply,
//     whether the connection closes after the exchange, and the loop's
//     state for upstreams (Local), looked up without a lock or an
//     allocation (exchange.go).
//
// What only some protocols have is an optional interface of the Exchange,
// found by type assertion as net/http's Hijacker is: RawInput (the raw
// bytes the client sent) and Upgrader (the 101 that turns the connection
// into a tunnel) and Duplicator (a duplicate of the socket for copies off
// the loop, and whether the sink frames chunks). Only the HTTP/1.1 engine
// implements them; HTTP/2 and HTTP/3 implement what they have and nothing
// more.
//
// Every method of these interfaces runs on the exchange's event loop
// unless its comment says otherwise. Request bytes are valid only during
// the call that delivered them.
package handlers
