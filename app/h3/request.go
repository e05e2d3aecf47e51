package h3

import (
	"net/http"
	"net/netip"
	"slices"

	"gale/codec"
	"gale/h2"
)

// The request, copied out of net/http's form into the exchange's own
// memory: quic-go's http3 package has decoded the header section (QPACK),
// checked the pseudo-header fields, refused connection-specific fields
// and field bytes outside RFC 9110's grammar, and bounded the section to
// server.http3.max_header_bytes. What the loops' handlers read is a
// codec.Request over ex.buf, held to the rules HTTP/2 requests are: a
// path of codec's target bytes with valid percent-encoding, a valid
// authority. Field names are lower case, as HTTP/3 sends them; the order
// of fields of different names is net/http's map order, the order of the
// values of one name is kept.

// fill copies r into ex.req and reports the status of a request that is
// not to be served (400), or 0.
func (ex *exchange) fill(r *http.Request) int {
	req := &ex.req
	n := len(r.Method) + len(r.RequestURI) + len(r.Host)
	for name, vals := range r.Header {
		for _, v := range vals {
			n += len(name) + len(v)
		}
	}
	// Room for everything first: the slices below alias b, which no
	// append may move.
	b := slices.Grow(ex.buf[:0], n)
	*req = codec.Request{Headers: req.Headers[:0], ContentLength: r.ContentLength, Version: codec.HTTP30}
	b, req.Method = appendPart(b, r.Method, false)
	b, req.Target = appendPart(b, r.RequestURI, false)
	b, req.Host = appendPart(b, r.Host, false)
	for name, vals := range r.Header {
		for _, v := range vals {
			var f codec.Header
			b, f.Name = appendPart(b, name, true)
			b, f.Value = appendPart(b, v, false)
			req.Headers = append(req.Headers, f)
		}
	}
	ex.buf = b
	req.Streamed = req.ContentLength < 0 && hasBody(r)
	if addr, ok := remoteOf(r); ok {
		ex.ctx.Remote = addr
	}
	ex.ctx.Peer = netip.AddrPort{}
	return ex.target()
}

// appendPart appends s to b (lower-cased when lower) and returns b and
// the appended bytes, capacity capped. b must have room for s.
func appendPart(b []byte, s string, lower bool) ([]byte, []byte) {
	at := len(b)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if lower && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b, b[at:len(b):len(b)]
}

// target sets the request's form, path and query from its target.
func (ex *exchange) target() int {
	req := &ex.req
	switch {
	case string(req.Method) == http.MethodConnect:
		req.Form = codec.AuthorityForm // answered 405: gale is not a forward proxy
		return 0
	case string(req.Method) == http.MethodOptions && string(req.Target) == "*":
		req.Form = codec.AsteriskForm
		return 0
	}
	if !h2.ValidOriginPath(req.Target) || !h2.ValidAuthority(req.Host) {
		return 400
	}
	req.Form = codec.OriginForm
	req.Path, req.Query = req.Target, nil
	for i, c := range req.Target {
		if c == '?' {
			req.Path, req.Query = req.Target[:i:i], req.Target[i+1:]
			break
		}
	}
	return 0
}

// hasBody reports whether a request body follows r's head.
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// remoteOf returns the client's address of r.
func remoteOf(r *http.Request) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}
