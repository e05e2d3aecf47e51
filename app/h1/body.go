package h1

import (
	"gale/app/wire"
	"gale/codec"
	"gale/handlers"
)

// requestBody is the HTTP/1.1 connection's handlers.BodySource: the request
// body de-framed from the connection's inbound bytes by codec.BodyReader
// (Content-Length, or chunked coding with its extensions and trailer
// fields dropped). Framing bytes are consumed as they are framed; payload
// bytes stay in the inbound buffer, at its front, until the handler
// consumes them, so a handler that forwards them copies nothing. start
// prepares it for each request; it is used on the connection's loop
// only.
//
// The source reads nothing until the engine has consumed the request's
// head (arm): before that the front of the inbound buffer is the head
// (and whatever was pipelined before it), not the body, and a handler
// that pulls the body from within Serve gets "more to come" and is
// resumed once the body can be read. No handler can take head bytes for
// body bytes, whenever it asks.
type requestBody struct {
	cs    *Conn
	br    codec.BodyReader
	ready int   // payload bytes at the front of the inbound buffer, framed but not consumed
	ended bool  // the body ends with those bytes
	armed bool  // the request's head is consumed: the inbound buffer starts with the body
	raw   int64 // body bytes consumed from the inbound buffer, framing included
	bound int64 // most bytes raw may reach: a Content-Length body its length, a chunked one limits.body_bytes of payload plus wire.MaxPendingInput of framing
}

var _ handlers.BodySource = (*requestBody)(nil)

// errFraming refuses a chunked body whose framing took it past its raw
// bound (limits.body_bytes of payload plus wire.MaxPendingInput).
var errFraming = &codec.Error{Status: 413, Reason: "too much chunked framing"}

// start prepares the source for req's body, bounded by limits.body_bytes
// (the codec refuses a longer one with 413).
func (b *requestBody) start(req *codec.Request, set *wire.Settings) {
	limit := set.Limits.BodyBytes
	b.br.Init(req, limit)
	b.ready, b.raw = 0, 0
	b.ended = !req.HasBody()
	b.armed = false
	switch {
	case req.Chunked:
		b.bound = limit + wire.MaxPendingInput
	case req.ContentLength > 0:
		b.bound = min(req.ContentLength, limit)
	default:
		b.bound = 0
	}
}

// arm tells the source that the request's head has left the inbound
// buffer, so that what follows is the body.
func (b *requestBody) arm() { b.armed = true }

// Next frames what arrived up to the next payload bytes. Past
// limits.body_bytes of payload (the codec's count), or past RawBound
// with the framing, it fails with a *codec.Error 413.
func (b *requestBody) Next() ([]byte, bool, error) {
	if !b.armed {
		return nil, b.ended, nil
	}
	if b.raw > b.bound {
		return nil, false, errFraming
	}
	for b.ready == 0 && !b.ended {
		in := b.cs.Inbound()
		if len(in) == 0 {
			break
		}
		n, payload, done, err := b.br.Next(in)
		if err != nil {
			return nil, false, err
		}
		// The framing before the payload goes now; the payload waits.
		if framing := n - len(payload); framing > 0 { // (gnet's Discard(0) drops everything)
			b.cs.Consume(framing)
			b.raw += int64(framing)
			if b.raw > b.bound {
				return nil, false, errFraming
			}
		}
		b.ready, b.ended = len(payload), done
		if n == 0 {
			break
		}
	}
	if b.ready == 0 {
		return nil, b.ended, nil
	}
	return b.cs.Inbound()[:b.ready:b.ready], b.ended, nil
}

// Consume drops n payload bytes that Next returned.
func (b *requestBody) Consume(n int) {
	n = min(n, b.ready)
	if n <= 0 {
		return
	}
	b.cs.Consume(n)
	b.ready -= n
	b.raw += int64(n)
}

// Raw is how many bytes of the body, framing included, were consumed.
func (b *requestBody) Raw() int64 { return b.raw }

// RawBound is the most bytes of the client's inbound buffer the body may
// take, framing included: a handler that holds input while it forwards
// the body counts this much of it as the body's.
func (b *requestBody) RawBound() int64 { return b.bound }
