package handlers

import "gale/codec"

// ResponseSink is how a handler that answers later (see Pending) writes
// its response: a head of status and fields, body bytes, then an end. The
// protocol engine that carries the exchange implements it and chooses the
// framing: for HTTP/1.1, the status line, Content-Length, chunked coding
// or a close-delimited body, and the Connection field; for HTTP/2,
// HEADERS and DATA frames. The handler never renders any of it, so the
// same handler serves every protocol, and no field it relays can change
// how the engine frames what follows (DESIGN.md, "Rules an attacker
// tests").
//
// The fields handed over are end-to-end fields only: hop-by-hop fields
// (Connection and those it names, Keep-Alive, Transfer-Encoding, TE,
// Trailer, Upgrade, Proxy-*) and Content-Length are never among them; the
// engine renders framing from length and its own state. The engine adds
// Date when the fields carry none, and nothing else: Server is the
// producer's to give (the proxy keeps an upstream's, and names the
// server's own in the answers it makes itself).
//
// Calls follow this order: any number of WriteInterim, one WriteHead,
// WriteBody and Flush calls, then Finish or Abort (Abort may come at any
// point).
// Every method runs on the event loop that owns the exchange and is not
// safe for concurrent use. The bytes given to WriteBody must stay valid
// until the next Flush, Finish or Abort (an engine may write them in
// place rather than copy them); every other argument is read during the
// call only. A failing write may end the connection inside
// the call; the engine then tells the Pending through its Closed.
type ResponseSink interface {
	// WriteInterim sends an informational (1xx) response other than 101,
	// such as 100 Continue or 103 Early Hints. An engine whose client
	// cannot take one (an HTTP/1.0 client, RFC 9110 section 15.2) drops it.
	WriteInterim(status int, fields []codec.Header)

	// WriteHead sends the final response head. Head.Length is the number
	// of body bytes that follow, or -1 when unknown (streamed; HTTP/1.1
	// then uses chunked coding, or delimits the body by closing the
	// connection for a client that cannot take chunks). For a response
	// without a body (a response to HEAD, 204, 304) Length is the
	// representation's length, or -1, and no WriteBody follows: the
	// engine knows the request's method and drops what is written anyway.
	WriteHead(h Head)

	// Room is how many more body bytes the peer can take now: the
	// connection's output bound (server.max_buffered_output) less what
	// waits in it, and for HTTP/2 also the flow-control windows. A
	// producer writes while Room is positive and otherwise waits until it
	// is resumed (Pending.Resume, or its own sweep); a write may overshoot
	// by one piece. It is never negative.
	Room() int

	// WriteBody sends body bytes (de-framed: only payload) and takes all
	// of p.
	WriteBody(p []byte)

	// Flush hands what was written to the connection. An engine may
	// gather small writes until Flush, Finish or Abort so that one event's
	// output leaves in one write; a producer flushes before it returns to
	// the loop.
	Flush()

	// Finish ends the response after the last body byte: the last chunk
	// for a chunked HTTP/1.1 body, END_STREAM for HTTP/2. trailers are
	// trailer fields to send where the framing can carry them (nil for
	// none); HTTP/1.1 drops them for a body that is not chunked.
	Finish(trailers []codec.Header)

	// Abort ends a response that cannot be completed: HTTP/1.1 closes the
	// connection once what was written drained, so that a truncated body
	// is visible as such; HTTP/2 resets the stream. Before WriteHead it
	// only makes the connection close after whatever answers instead.
	Abort()
}

// Head is a final response head for ResponseSink.WriteHead. Its slices
// are read during the call only.
type Head struct {
	Status int            // 200..599 (a 101 that starts a tunnel exists on HTTP/1.1 only, and is the transport's)
	Fields []codec.Header // end-to-end fields, in order (see ResponseSink)
	Length int64          // body bytes that follow; -1 = unknown (streamed)

	// Reason is the reason phrase for an HTTP/1.1 status line (nil: the
	// registered one); other protocols have none and ignore it.
	Reason []byte

	// Close says the exchange leaves the connection unusable for another
	// request (the request body was not read through, or the body ends
	// where its source closed): HTTP/1.1 sends "Connection: close" and
	// closes the connection after the response (a body of unknown length
	// still goes chunked to an HTTP/1.1 client, so that its end is
	// marked). HTTP/2 ignores it.
	Close bool
}

// BodySource is the request body of an exchange, de-framed by the
// protocol engine (HTTP/1.1: Content-Length or chunked coding, through
// codec.BodyReader; HTTP/2: DATA frames), for a handler that forwards it.
// Like ResponseSink it runs on the exchange's loop only.
type BodySource interface {
	// Next returns the next payload bytes that have arrived, and whether
	// the body ended with them. It returns an empty p while more is still
	// to come (the handler then waits for Pending.Resume). Errors are
	// *codec.Error: bad framing (400) or a body over limits.body_bytes
	// (413); after one the engine closes the connection or resets the
	// stream. p aliases the engine's memory and is valid until Consume or
	// the end of the current event.
	Next() (p []byte, done bool, err error)

	// Consume gives back the first n bytes of what Next returned, which
	// the handler has used: credit for the peer (HTTP/2 WINDOW_UPDATE;
	// HTTP/1.1 drops them from the inbound buffer). The bytes Next returned
	// beyond n are returned again by the next Next.
	Consume(n int)
}

// Canceler is implemented by a ResponseSink whose protocol tells a
// response that was cancelled apart from one that failed (HTTP/2's
// RST_STREAM with CANCEL rather than INTERNAL_ERROR, RFC 9113 section
// 8.7): Cancel ends the response so, where Abort would.
type Canceler interface {
	Cancel()
}

// TrailerSource is implemented by a BodySource whose protocol carries a
// request's trailer fields to the handler (HTTP/2; HTTP/1.1 drops them
// when it de-frames a chunked body). Trailers returns them once Next
// reported the end of the body, nil when none came. The fields are the
// engine's memory, valid until the exchange ends.
type TrailerSource interface {
	Trailers() []codec.Header
}
