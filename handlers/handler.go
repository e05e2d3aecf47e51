package handlers

import (
	"gale/clientcert"
	"net/netip"
	"os"

	"gale/cache"
	"gale/codec"
)

// Handler serves requests for one route. Serve runs on the event loop that
// owns the connection: it must not block (no network I/O, no reads of large
// files) and must finish the response before it returns, or say that it
// finishes later by setting Response.Pending.
// Handlers are shared by all loops and must be safe for concurrent use;
// per-request state lives in the Ctx.
type Handler interface {
	Serve(c *Ctx)
}

// Ctx is one exchange (an HTTP/1.1 request, an HTTP/2 stream) on its way
// through the router and a handler. It is owned by the exchange's event
// loop and reused for a later exchange: nothing in it may be kept after
// Serve returns, or, when Serve left a Pending, after the exchange ended.
// Req and every byte slice derived from it alias memory of the engine's
// (an inbound buffer, a decoded header block, a copy it keeps for a
// pending exchange). A Ctx is not safe for concurrent use.
type Ctx struct {
	Req    *codec.Request // the parsed request head
	Remote netip.AddrPort // the client's address: the peer's, or behind server.trusted_proxies the one X-Forwarded-For names (Router.Serve)
	Peer   netip.AddrPort // the address the connection came from (a PROXY header's client); Router.Serve sets it

	peerTrusted bool // Peer is one of server.trusted_proxies (realip.go)
	TLS         bool // the request arrived over TLS (set by the server for the connection's life)

	// Cert is the certificate the TLS client presented on the
	// exchange's connection (tls.client_auth), shared by its exchanges
	// and immutable; nil when it presented none. The engine sets it.
	Cert *clientcert.Info

	Resp  Response // filled by the handler
	Route *Route   // the route that matched (set by the router; nil when none did)

	// Path is the request path in normal form (see normpath.go), set by
	// the router before it matches: what routes, header rules and
	// handlers read instead of Req.Path. It aliases Req.Path when that
	// was normal already, else the bytes the router appended to Scratch
	// before the handler ran.
	Path []byte

	// WirePath is the path as the upstream of a proxy route gets it, when
	// that differs from Path: the normal form with the client's encoded
	// slashes (as the route's encoded_slashes says) and path parameters
	// kept (see normpath.go); nil when it is Path. It lives in Scratch
	// (set by the router; a rewrite sets it again).
	WirePath []byte
	slashes  bool // WirePath holds an encoded slash

	// Rest is Path after the route's prefix, always starting with "/"
	// (set by the router). For a prefix without a trailing slash that
	// matched the whole path ("/a" for "/a") it is "/". It aliases Path
	// or static memory.
	Rest []byte

	// capPath and caps are the normal path the route's path_regex matched
	// and the indexes of its capture groups (regexp.FindSubmatchIndex),
	// for templates; nil when the route records no captures (set by the
	// router).
	capPath []byte
	caps    []int

	// Scratch is per-connection memory a handler may use to build header
	// values or bodies; it is reset (length 0, capacity kept) before each
	// request. Handlers append to it (never overwrite what is below its
	// length) and may put the appended slices in Resp: they stay valid
	// until the response has been rendered. The owner gives it enough
	// capacity (a few KiB) that steady-state requests do not grow it.
	Scratch []byte

	// Cache is the exchange's access to the event loop's file cache,
	// through which static routes look files up and wait for loads (see
	// CacheAccess). The protocol engine sets it; nil outside the server
	// (static routes then use a shared view under a lock).
	Cache CacheAccess

	// Sink is where a handler that answers later (the proxy) writes its
	// response, and Body is the request body it forwards (see sink.go).
	// The protocol engine sets both for the exchange; nil outside the
	// server.
	Sink ResponseSink
	Body BodySource

	// Exchange is what the engine offers a handler that answers later
	// besides Sink and Body: the end of the exchange, a wake, the
	// settings, the loop's state for upstreams, and by type assertion
	// what only some protocols have (see exchange.go). The engine sets
	// it for the exchange; nil outside the server.
	Exchange Exchange

	// fauth is the Pending of an exchange its route's authentication
	// service is asked about (forwardauth.go), kept here rather than
	// allocated for each request.
	fauth fauthWait
}

// Pending is the one way a handler answers after Serve returned: the
// continuation of an exchange that waits for something off the loop. The
// reverse proxy waits for an upstream; a static route waits for a file the
// cache reads off the loop. A handler that sets Response.Pending has
// answered nothing yet (the rest of Response is ignored).
//
// The engine keeps the exchange, and everything Serve left in its Ctx
// (Req, Path, Rest, Route, Scratch), valid until the exchange ends: it
// copies the request out of memory the next request would overwrite (see
// Ctx.KeepRequest). It resumes the continuation on the exchange's loop
// each time the exchange is woken (the wake of a cache load's Done
// callback, of an upstream, of room for output) and, on HTTP/1.1, when the
// client sent bytes the engine did not take. Meanwhile HTTP/1.1 parses
// nothing further, so pipelined responses keep their order, and HTTP/2
// serves its other streams.
//
// A continuation ends in one of two ways: Resume returns Answered with the
// response in Ctx.Resp, which the engine then writes as if Serve had just
// returned it (a static route once its file is loaded); or the handler
// writes the response itself through Ctx.Sink and reports its end to the
// engine (the proxy).
//
// All methods run on the exchange's event loop.
type Pending interface {
	// Resume runs when the exchange was woken or its client sent bytes
	// the engine did not take, and reports what became of the exchange.
	Resume(c *Ctx) Progress

	// Closed runs once when the exchange ended (the client went away, a
	// timeout, a failed write, a reset stream) before the continuation
	// ended. The exchange must not be touched afterwards.
	Closed()
}

// Progress is what Pending.Resume reports.
type Progress uint8

const (
	// Waiting: the exchange still waits; resume it on its next event.
	Waiting Progress = iota
	// Answered: Ctx.Resp holds the response, to be written now as one
	// Serve returned (it may be Pending again: then the exchange waits
	// for that continuation).
	Answered
	// CloseNow: the connection must be closed now.
	CloseNow
)

// Response is what a handler answers: always the full response to a GET
// (or to the request's method), whatever the method. For HEAD the app
// renders the same head, Content-Length included, and drops the body;
// handlers never special-case HEAD.
//
// The writer renders Status, Date, Server, Headers in order,
// Content-Length (len(Body), or FileSize when File is set) and Connection.
// Header slices and Body must stay valid until the response is rendered:
// static memory, config memory, cached entries or Ctx.Scratch.
//
// File, when not nil, is the body: FileSize bytes read from offset 0, and
// Body is nil. Ownership of File passes to the app when the handler
// returns: the app closes it once the body has been sent or the
// connection failed (it reads small files into the output on the loop and
// streams large ones off the loop). A handler that replaces a response
// holding a File closes it first (Ctx.Error does).
type Response struct {
	Status   int            // 0 is never left by a handler (unless Pending is set)
	Headers  []codec.Header // storage reused between requests
	Body     []byte         // the full body (nil for none); nil when File is set
	File     *os.File       // the body as an open regular file (nil for none); closed by the app
	FileSize int64          // bytes of File to send, from offset 0
	Close    bool           // close the connection after this response
	Pending  Pending        // non-nil: the handler answers later (see Pending); the other fields are ignored

	// Static file responses; see static_body.go.
	FileOffset  int64         // where File's body starts (a byte range)
	FileVersion cache.Version // the version of File the response's validators name: every read of File checks it (cache.Version.ReadAt)
	Parts       []BodyPart    // the body in pieces (multipart/byteranges); when set, Body is nil and File, if set, is what the pieces' regions are read from
	Head        []byte        // a head rendered ahead of time that replaces the rendering of Status and Headers (see AppendHead); Status is still set
	HPACK       []byte        // with Head: the same response as an HTTP/2 header block (cache.Rep.HPACK: ":status" and every field but Date, which the HTTP/2 engine appends); nil otherwise
	Entry       *cache.Entry  // the cached file that Body, Parts or Head alias; the app pins it while the response is sent off the loop
	Blob        *cache.Blob   // Body's bytes in a sealed memfd, from BlobOff (cache.Rep.Blob), for an engine that sends with sendfile(2); nil for none
	BlobOff     int64         // where Body starts in Blob
}

// Reset clears r for reuse, keeping header storage. It does not close
// File: whoever owns it closes it before Reset.
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
	r.Headers = delHeader(r.Headers, name)
}

// Get returns the value of the first field named name (ASCII
// case-insensitive), or nil. The result aliases whatever the field does.
func (r *Response) Get(name []byte) []byte {
	for i := range r.Headers {
		if codec.EqualFoldBytes(r.Headers[i].Name, name) {
			return r.Headers[i].Value
		}
	}
	return nil
}

// Error replaces c.Resp with the fixed error response for status (keeping
// Close): codec.ErrorBody, which never echoes request input, as JSON when
// codec.AcceptsJSONOnly(Accept), its Content-Type and
// "X-Content-Type-Options: nosniff". A File already set is closed. It does
// not allocate once Resp.Headers has room for two fields.
func (c *Ctx) Error(status int) {
	if c.Resp.File != nil {
		_ = c.Resp.File.Close()
	}
	closeConn := c.Resp.Close
	asJSON := false
	if c.Req != nil {
		asJSON = codec.AcceptsJSONOnly(c.Req.Header("Accept"))
	}
	c.Resp.SetError(status, asJSON, nil)
	c.Resp.Close = closeConn
}

// SetError makes r, reset, the fixed answer for status: server as its
// Server field when not empty, then codec.ErrorBody's Content-Type and
// "X-Content-Type-Options: nosniff", and codec.ErrorBody as its body (a
// JSON one when asJSON). It does not allocate once r.Headers has room
// for three fields.
func (r *Response) SetError(status int, asJSON bool, server []byte) {
	r.Reset()
	r.Status = status
	if len(server) > 0 {
		r.Add(codec.NameServer, server)
	}
	r.Add(codec.NameContentType, codec.ErrorContentType(asJSON))
	r.Add(codec.NameNosniff, codec.ValueNosniff)
	r.Body = codec.ErrorBody(status, asJSON)
}

// scratchSince returns what was appended to c.Scratch since mark, capped so
// that appends through the result never overwrite later scratch bytes.
func (c *Ctx) scratchSince(mark int) []byte {
	n := len(c.Scratch)
	return c.Scratch[mark:n:n]
}

// delHeader removes every field named name (ASCII case-insensitive) from
// hs in place and returns the shortened slice.
func delHeader(hs []codec.Header, name []byte) []codec.Header {
	h := hs[:0]
	for _, f := range hs {
		if !codec.EqualFoldBytes(f.Name, name) {
			h = append(h, f)
		}
	}
	clear(hs[len(h):])
	return h
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(c *Ctx)

// Serve calls f(c).
func (f HandlerFunc) Serve(c *Ctx) { f(c) }
