// Package hpack implements HPACK, the header compression of HTTP/2
// (RFC 7541), over byte slices.
//
// The Decoder decodes complete header blocks into Fields whose names and
// values live in the Decoder's own buffer or in the static table, so that
// decoding a connection's blocks allocates nothing once its buffers have
// grown to fit. It bounds what one block may cost: the decoded header list
// is measured as RFC 7541 section 4.1 measures a table (name, value and 32
// octets per field), and past the caller's bound it stops storing fields
// while it keeps the dynamic table in step with the peer's encoder.
//
// Encoding is stateless, the way nginx encodes responses: the Append
// functions write static-table references and literals that are never
// added to the dynamic table (RFC 7541 section 6.2.2 and 6.2.3), so the
// peer's decoder keeps no state of ours, and a connection's first block
// announces a dynamic table of size zero (AppendTableSizeZero).
//
// Nothing here does I/O or keeps a reference to a caller's slice.
package hpack

import "errors"

// Errors returned by Decoder.Decode. Both are returned as the values
// themselves, never wrapped, so they may be compared with ==.
var (
	// ErrCompression reports a header block that cannot be decoded: a
	// truncated or overflowing integer (RFC 7541 section 5.1), a string
	// longer than what is left of the block or with invalid Huffman code
	// or padding (section 5.2), an index outside both tables (section
	// 2.3.3) or a dynamic table size update that is too large or comes
	// after the first field of a block (section 4.2). HTTP/2 treats it as
	// a connection error of type COMPRESSION_ERROR (RFC 9113 section
	// 4.3): the Decoder's dynamic table no longer matches the peer's.
	ErrCompression = errors.New("hpack: compression error")

	// ErrListTooLarge reports a header block whose decoded list exceeds
	// the bound given to Decode, measured as in RFC 7541 section 4.1.
	// The block was decoded to its end and the dynamic table is in step,
	// so the connection may carry on; the fields returned are those that
	// fitted.
	ErrListTooLarge = errors.New("hpack: decoded header list too large")
)

// Field is one decoded header field (RFC 7541 section 1.3). Name and Value
// alias memory of the Decoder that produced them, or of the static table:
// they are valid until the next call of Decode or Init on that Decoder and
// must not be modified. Their capacity is clipped, so an append to either
// copies instead of overwriting its neighbours.
type Field struct {
	Name, Value []byte
	Sensitive   bool // the field was a literal never indexed (RFC 7541 section 6.2.3): an intermediary must keep that representation
}

// Size is the field's size as RFC 7541 section 4.1 defines it: the lengths
// of name and value plus 32 octets of overhead. It is the measure of the
// bound given to Decode, and of SETTINGS_MAX_HEADER_LIST_SIZE (RFC 9113
// section 6.5.2).
func (f Field) Size() uint64 {
	return uint64(len(f.Name)) + uint64(len(f.Value)) + entryOverhead
}

// entryOverhead is the per-entry overhead of RFC 7541 section 4.1.
const entryOverhead = 32
