package h2conn

import (
	"gale/codec"
	"gale/h2"
	"gale/handlers"
)

// The request body of a stream whose handler reads it (a proxy or FastCGI
// route): DATA payloads are kept as they arrive and their credit is
// returned only as the handler consumes them, so the windows gale
// advertised are what bounds the memory, and a handler that stops
// consuming (an upstream that reads slowly) stops the client. Other
// streams' bodies are discarded at once (exchange.go).

// requestBody is one exchange's handlers.BodySource. It runs on the
// connection's loop only.
type requestBody struct {
	ex  *exchange
	in  []byte // payload received and not consumed, from off
	off int
	end bool // END_STREAM came after in

	trailers []codec.Header // the request's trailer fields, in trailerBuf
	tbuf     []byte
}

var (
	_ handlers.BodySource    = (*requestBody)(nil)
	_ handlers.TrailerSource = (*requestBody)(nil)
)

// reset prepares the source for a new stream, keeping a small buffer.
func (b *requestBody) reset() {
	if cap(b.in) > slotKeep {
		b.in = nil
	}
	b.in, b.off, b.end = b.in[:0], 0, false
	b.trailers, b.tbuf = nil, b.tbuf[:0]
}

// add keeps payload that arrived on the stream, and its end.
func (b *requestBody) add(p []byte, end bool) {
	if b.off == len(b.in) {
		b.in, b.off = b.in[:0], 0
	}
	b.in = append(b.in, p...)
	b.end = b.end || end
}

// Next implements handlers.BodySource: the payload kept so far. Its
// errors come as stream errors instead (a body over limits.body_bytes, or
// one that disagrees with its content-length, resets the stream, which
// ends the exchange).
func (b *requestBody) Next() ([]byte, bool, error) {
	return b.in[b.off:], b.end, nil
}

// Consume implements handlers.BodySource: n bytes were used, and their
// credit goes back to the client.
func (b *requestBody) Consume(n int) {
	n = min(n, len(b.in)-b.off)
	if n <= 0 {
		return
	}
	b.off += n
	h := b.ex.h
	h.core.Consumed(b.ex.s, n)
	if len(h.core.Out()) > 0 {
		h.flushLater() // WINDOW_UPDATE
	}
}

// Trailers implements handlers.TrailerSource.
func (b *requestBody) Trailers() []codec.Header { return b.trailers }

// keepTrailers copies a request's trailer fields out of the core's
// memory. The fields' memory is sized first, so that no append moves it.
func (b *requestBody) keepTrailers(fs []codec.Header) {
	n := 0
	for _, f := range fs {
		n += len(f.Name) + len(f.Value)
	}
	if cap(b.tbuf) < n {
		b.tbuf = make([]byte, 0, n)
	}
	buf := b.tbuf[:0]
	b.trailers = b.trailers[:0]
	for _, f := range fs {
		at := len(buf)
		buf = append(buf, f.Name...)
		buf = append(buf, f.Value...)
		b.trailers = append(b.trailers, codec.Header{Name: buf[at : at+len(f.Name)], Value: buf[at+len(f.Name):]})
	}
	b.tbuf = buf
}

var _ h2.TrailersHandler = (*Conn)(nil)

// Trailers implements h2.TrailersHandler: a request's trailer fields are
// kept for a handler that reads the body; others drop them.
func (h *Conn) Trailers(s *h2.Stream, fields []codec.Header) {
	if s.Slot >= len(h.ex) {
		return
	}
	if ex := h.ex[s.Slot]; ex != nil && ex.s == s && ex.keepBody {
		ex.body.keepTrailers(fields)
	}
}
