// Package hpack is HPACK, header compression for HTTP/2 (RFC 7541).
//
// This file holds only the agreed declarations, so that package h2 builds
// against them; the decoder and the encoding functions replace it.
package hpack

import "errors"

// Field is one decoded header field. Name and Value alias the Decoder's
// memory (or the static table): they are valid until the next Decode on the
// same Decoder.
type Field struct {
	Name, Value []byte
	Sensitive   bool // literal never indexed (RFC 7541 section 6.2.3)
}

var (
	// ErrCompression is any decoding error: a connection error of type
	// COMPRESSION_ERROR (RFC 9113 section 4.3).
	ErrCompression = errors.New("hpack: compression error")
	// ErrListTooLarge says the decoded list exceeded maxList; the decoder's
	// state stays consistent (see Decode).
	ErrListTooLarge = errors.New("hpack: header list too large")
)

// Decoder is one connection's HPACK decoder. It is not safe for concurrent
// use.
type Decoder struct{ max uint32 }

// Init sets the dynamic table limit advertised in
// SETTINGS_HEADER_TABLE_SIZE.
func (d *Decoder) Init(maxTable uint32) { d.max = maxTable }

// Decode decodes one complete header block into dst[:0]. This placeholder
// decodes nothing and returns ErrCompression.
func (d *Decoder) Decode(dst []Field, block []byte, maxList uint32) ([]Field, error) {
	return dst[:0], ErrCompression
}
