package handlers

import (
	"gale/cache"
	"gale/codec"
	"gale/h2/hpack"
)

// A cached file's 200 response is kept twice, ready to send: as the
// HTTP/1.1 head (render) and as an HTTP/2 header block (renderHPACK).
// Both come from headFields, so they carry the same fields; the HTTP/2
// block differs only as RFC 9113 requires: ":status" instead of the
// status line, names in lower case (section 8.2.1), no connection-specific
// field (section 8.2.2), and no Date, which the HTTP/2 engine appends to
// each response since the block is shared by all of them.

// headFields returns the fields of a cached file's 200 response after
// Server, in the order they are sent: the representation's fields
// (Content-Length included), Cache-Control, then the route's response
// header rules. It runs when a representation is rendered, not per
// request.
func (h *staticHandler) headFields(r *cache.Rep) []codec.Header {
	fields := make([]codec.Header, 0, len(r.Fields)+4)
	fields = append(fields, r.Fields...)
	if h.cacheControl != nil {
		fields = append(fields, codec.Header{Name: hdrCacheControl, Value: h.cacheControl})
	}
	if h.respOps != nil {
		fields = h.respOps.apply(fields)
	}
	return fields
}

// renderHPACK is the route's cache.Profile.RenderHPACK: the HTTP/2 header
// block of a 200 response for representation r, without Date.
func (h *staticHandler) renderHPACK(dst []byte, _ *cache.Entry, r *cache.Rep) []byte {
	dst = hpack.AppendStatus(dst, 200)
	if len(h.server) > 0 {
		dst = hpack.AppendField(dst, nameServerH2, h.server)
	}
	dst, _ = AppendHPACKFields(dst, nil, h.headFields(r))
	return dst
}

var nameServerH2 = []byte("server")

// AppendHPACKFields encodes fs as HTTP/2 response fields with the
// stateless encoder (hpack.AppendField): names lower-cased through the
// caller's buffer name, connection-specific fields (RFC 9113 section
// 8.2.2) left out. It returns dst and name, grown; with buffers that have
// room it does not allocate. Both the cached blocks (renderHPACK) and the
// HTTP/2 engine's per-response heads encode fields through it.
func AppendHPACKFields(dst, name []byte, fs []codec.Header) ([]byte, []byte) {
	for _, f := range fs {
		if codec.ConnectionSpecific(f.Name) {
			continue
		}
		name = codec.AppendLower(name[:0], f.Name)
		dst = hpack.AppendField(dst, name, f.Value)
	}
	return dst, name
}
