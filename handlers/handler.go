package handlers

import (
	"net/netip"

	"gale/codec"
)

// Handler serves requests for one route. Serve runs on the event loop that
// owns the connection: it must not block (no network I/O, no reads of large
// files) and must finish the response before it returns.
// Handlers are shared by all loops and must be safe for concurrent use;
// per-request state lives in the Ctx.
type Handler interface {
	Serve(c *Ctx)
}

// Ctx is one request on its way through the router and a handler. It is
// owned by the connection's event loop and reused for the connection's next
// request: nothing in it may be kept after Serve returns. Req and every
// byte slice derived from it alias the connection's inbound buffer.
type Ctx struct {
	Req    *codec.Request // the parsed request head
	Remote netip.AddrPort // the client's address
	Resp   Response       // filled by the handler
	Route  *Route         // the route that matched (set by the router)

	// Rest is the request path after the route's prefix, still
	// percent-encoded, always starting with "/" (set by the router).
	Rest []byte

	// Scratch is per-connection memory a handler may use to build header
	// values or bodies; it is reset (length 0, capacity kept) before each
	// request. Slices of it may be put in Resp: they stay valid until the
	// response has been rendered.
	Scratch []byte
}

// Response is what a handler answers. The writer renders Status, Date,
// Server, Headers in order, Content-Length from Body (or ContentLength for
// HEAD) and Connection. Header slices and Body must stay valid until the
// response is rendered: static memory, config memory, cached entries or
// Ctx.Scratch.
type Response struct {
	Status  int            // 0 is never left by a handler
	Headers []codec.Header // storage reused between requests
	Body    []byte         // the full body (nil for none)
	Close   bool           // close the connection after this response
}

// Reset clears r for reuse, keeping header storage.
func (r *Response) Reset() {
	h := r.Headers[:0]
	*r = Response{Headers: h}
}

// Add appends a header field.
func (r *Response) Add(name, value []byte) {
	r.Headers = append(r.Headers, codec.Header{Name: name, Value: value})
}

// Set replaces every field named name (ASCII case-insensitive) with one
// field, or appends it.
func (r *Response) Set(name, value []byte) {
	r.Del(name)
	r.Add(name, value)
}

// Del removes every field named name (ASCII case-insensitive).
func (r *Response) Del(name []byte) {
	h := r.Headers[:0]
	for _, f := range r.Headers {
		if !equalFoldBytes(f.Name, name) {
			h = append(h, f)
		}
	}
	clear(r.Headers[len(h):])
	r.Headers = h
}

func equalFoldBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
