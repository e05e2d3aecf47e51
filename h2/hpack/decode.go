package hpack

import (
	"errors"
	"math"
)

// Decoder is one connection's HPACK decoder (RFC 7541 section 3): the
// dynamic table the peer's encoder fills, and the buffer decoded fields
// are written into. The zero Decoder behaves as after Init(0). It is not
// safe for concurrent use, and after Decode returned ErrCompression its
// table no longer matches the peer's: only Init makes it usable again.
type Decoder struct {
	table dynamicTable
	limit uint32 // the largest maximum size a size update may set: the SETTINGS_HEADER_TABLE_SIZE we advertised
	buf   []byte // names and values of the current block's fields, reused from block to block
	grow  int    // the largest capacity buf may grow to in the current block: its bound plus the table's limit
	cause error  // why the last Decode failed, for tests: ErrCompression itself is returned
}

// Causes of ErrCompression, kept in Decoder.cause.
var (
	errTruncated       = errors.New("hpack: block ends inside a representation")
	errIntOverflow     = errors.New("hpack: integer longer than 63 bits")
	errIndexZero       = errors.New("hpack: index 0")
	errIndex           = errors.New("hpack: index beyond the static and dynamic tables")
	errStringLength    = errors.New("hpack: string longer than the rest of the block")
	errHuffman         = errors.New("hpack: invalid Huffman code or padding")
	errSizeUpdateLate  = errors.New("hpack: dynamic table size update after a field")
	errSizeUpdateLimit = errors.New("hpack: dynamic table size update above SETTINGS_HEADER_TABLE_SIZE")
)

// Init prepares d for a new connection whose SETTINGS_HEADER_TABLE_SIZE
// is maxTable (RFC 9113 section 6.5.2): the dynamic table starts empty
// with that maximum size, and a dynamic table size update above it is a
// decoding error (RFC 7541 section 4.2). Call it once before the first
// Decode; calling it again for another connection keeps d's memory unless
// it exceeds what maxTable needs.
func (d *Decoder) Init(maxTable uint32) {
	d.limit = maxTable
	d.table.reset(maxTable)
	d.buf = d.buf[:0]
	d.cause = nil
}

// Decode decodes the complete header block block (a HEADERS frame's
// fragment with every CONTINUATION fragment joined by the caller, RFC 9113
// section 4.3) into dst[:0] and returns the fields in their order.
//
// Names and values are written into d's own buffer, reused from block to
// block, or alias the static table (see Field): once the buffer has grown
// to fit a connection's blocks, Decode allocates nothing. Strings are
// Huffman-decoded (RFC 7541 section 5.2), and the dynamic table is updated
// as the block's representations say (sections 6.1 to 6.3).
//
// maxList bounds the decoded list: the sum of the fields' sizes as RFC
// 7541 section 4.1 measures them (Field.Size). From the first field that
// does not fit, Decode stores no more fields, but it decodes the block to
// its end so that the dynamic table stays in step with the peer's encoder,
// and then returns the fields that fitted and ErrListTooLarge. So the
// buffer never exceeds maxList plus the dynamic table's maximum size, and
// a block that names one large entry many times costs nothing to skip.
//
// A dynamic table size update (section 6.3) is allowed, any number of
// times, only before the block's first field, and never above the size
// given to Init. Any decoding error returns ErrCompression with the fields
// decoded so far; the connection must then end with COMPRESSION_ERROR.
func (d *Decoder) Decode(dst []Field, block []byte, maxList uint32) ([]Field, error) {
	d.buf = d.buf[:0]
	d.grow = int(min(uint64(maxList)+uint64(d.limit), math.MaxInt))
	d.cause = nil
	s := blockState{in: block, max: uint64(maxList)}
	dst = dst[:0]
	for leading := true; len(s.in) > 0; {
		var err error
		if s.in[0]&0xe0 == 0x20 {
			err = d.sizeUpdate(&s, leading)
		} else {
			leading = false
			dst, err = d.field(dst, &s)
		}
		if err != nil {
			d.cause = err
			return dst, ErrCompression
		}
	}
	if s.over {
		return dst, ErrListTooLarge
	}
	return dst, nil
}

// blockState is the progress through one header block.
type blockState struct {
	in   []byte // the rest of the block
	size uint64 // sum of the stored fields' sizes
	max  uint64 // the bound on size
	over bool   // a field did not fit: no more are stored
}

// fits reports whether a field of size n may still be stored, and marks
// the list full when it may not.
func (s *blockState) fits(n uint64) bool {
	if !s.over && s.size+n <= s.max {
		s.size += n
		return true
	}
	s.over = true
	return false
}

// sizeUpdate decodes a dynamic table size update (RFC 7541 section 6.3).
func (d *Decoder) sizeUpdate(s *blockState, leading bool) error {
	if !leading {
		return errSizeUpdateLate
	}
	v, rest, err := readInt(s.in, 5)
	if err != nil {
		return err
	}
	if v > uint64(d.limit) {
		return errSizeUpdateLimit
	}
	s.in = rest
	d.table.setMaxSize(uint32(v))
	return nil
}

// field decodes one field representation: indexed (RFC 7541 section 6.1)
// or literal (section 6.2), and appends it to dst when it fits.
func (d *Decoder) field(dst []Field, s *blockState) ([]Field, error) {
	b := s.in[0]
	switch {
	case b&0x80 != 0:
		return d.indexed(dst, s)
	case b&0xc0 == 0x40:
		return d.literal(dst, s, 6, true, false)
	case b&0xf0 == 0x10:
		return d.literal(dst, s, 4, false, true)
	default: // 0000xxxx
		return d.literal(dst, s, 4, false, false)
	}
}

// indexed decodes an indexed header field (RFC 7541 section 6.1).
func (d *Decoder) indexed(dst []Field, s *blockState) ([]Field, error) {
	i, rest, err := readInt(s.in, 7)
	if err != nil {
		return dst, err
	}
	if err := d.checkIndex(i); err != nil {
		return dst, err
	}
	s.in = rest
	if i <= staticLen {
		f := staticFields[i]
		if s.fits(f.Size()) {
			dst = append(dst, f)
		}
		return dst, nil
	}
	e := d.table.at(int(i - staticLen))
	if !s.fits(uint64(e.nameLen) + uint64(e.valueLen) + entryOverhead) {
		return dst, nil
	}
	d.reserve(e.nameLen + e.valueLen)
	a := len(d.buf)
	d.buf = d.table.appendName(d.buf, e)
	m := len(d.buf)
	d.buf = d.table.appendValue(d.buf, e)
	return append(dst, Field{Name: d.buf[a:m:m], Value: d.buf[m:len(d.buf):len(d.buf)]}), nil
}

// checkIndex reports whether i names an entry of the static or dynamic
// table (RFC 7541 section 2.3.3).
func (d *Decoder) checkIndex(i uint64) error {
	if i == 0 {
		return errIndexZero
	}
	if i > staticLen+uint64(d.table.len()) {
		return errIndex
	}
	return nil
}

// literal decodes a literal header field (RFC 7541 section 6.2) whose
// name index has a prefix of prefix bits: with incremental indexing
// (section 6.2.1) when indexing, never indexed (section 6.2.3) when
// sensitive, else without indexing (section 6.2.2).
func (d *Decoder) literal(dst []Field, s *blockState, prefix uint8, indexing, sensitive bool) ([]Field, error) {
	l, err := d.readLiteral(s, prefix)
	if err != nil {
		return dst, err
	}
	store, err := l.decide(s)
	if err != nil {
		return dst, err
	}
	if !store && !indexing {
		return dst, nil // validated, not needed
	}
	if !store && l.size > d.table.maxSize {
		d.table.clear() // an entry too large for the table empties it (section 4.4)
		return dst, nil
	}
	mark := len(d.buf)
	name, value, err := d.materialize(&l)
	if err != nil {
		return dst, err
	}
	if indexing {
		d.table.add(name, value)
	}
	if !store {
		d.buf = d.buf[:mark]
		return dst, nil
	}
	if !l.exact {
		s.size += uint64(len(name)) + uint64(len(value)) + entryOverhead
	}
	return append(dst, Field{Name: name, Value: value, Sensitive: sensitive}), nil
}

// literalField is a literal representation read from the block, before
// its strings are decoded.
type literalField struct {
	name     []byte // the static name when nameIdx is static, else nil
	nameIdx  uint64 // 0 for a literal name
	nameEnt  entry  // the dynamic entry when nameIdx is dynamic
	rawName  rawString
	rawValue rawString
	nameLen  int    // the decoded name's length, or a bound on it until exact
	valueLen int    // the same for the value
	exact    bool   // nameLen and valueLen are exact, and Huffman code was validated
	size     uint64 // nameLen+valueLen+32 once exact
}

// readLiteral reads a literal's name index or name and its value from the
// block, without decoding them.
func (d *Decoder) readLiteral(s *blockState, prefix uint8) (literalField, error) {
	var l literalField
	i, p, err := readInt(s.in, prefix)
	if err != nil {
		return l, err
	}
	l.nameIdx = i
	switch {
	case i == 0:
		if l.rawName, p, err = readString(p); err != nil {
			return l, err
		}
		l.nameLen = l.rawName.maxLen()
	case i <= staticLen:
		l.name = staticFields[i].Name
		l.nameLen = len(l.name)
	default:
		if err := d.checkIndex(i); err != nil {
			return l, err
		}
		l.nameEnt = d.table.at(int(i - staticLen))
		l.nameLen = l.nameEnt.nameLen
	}
	if l.rawValue, p, err = readString(p); err != nil {
		return l, err
	}
	l.valueLen = l.rawValue.maxLen()
	s.in = p
	return l, nil
}

// decide reports whether l is stored in the list. When the bounds on its
// length do not settle it, or it will not be stored, it measures l's
// strings exactly, which validates their Huffman code, so that a field
// that is skipped is still checked and one that is only added to the
// dynamic table is materialized only when the table can hold it.
func (l *literalField) decide(s *blockState) (bool, error) {
	bound := uint64(l.nameLen) + uint64(l.valueLen) + entryOverhead
	if !s.over && s.size+bound <= s.max {
		return true, nil // the caller adds the exact size once decoded
	}
	if err := l.measure(); err != nil {
		return false, err
	}
	return s.fits(l.size), nil
}

// measure replaces the bounds on l's lengths by the exact lengths.
func (l *literalField) measure() error {
	var ok bool
	if l.nameIdx == 0 {
		if l.nameLen, ok = l.rawName.decodedLen(); !ok {
			return errHuffman
		}
	}
	if l.valueLen, ok = l.rawValue.decodedLen(); !ok {
		return errHuffman
	}
	l.exact = true
	l.size = uint64(l.nameLen) + uint64(l.valueLen) + entryOverhead
	return nil
}

// materialize writes l's name (unless it is static) and value into d.buf
// and returns them with their capacity clipped.
func (d *Decoder) materialize(l *literalField) (name, value []byte, err error) {
	d.reserve(l.nameLen + l.valueLen)
	a := len(d.buf)
	switch {
	case l.nameIdx == 0:
		var ok bool
		if d.buf, ok = l.rawName.appendTo(d.buf); !ok {
			return nil, nil, errHuffman
		}
		name = d.buf[a:len(d.buf):len(d.buf)]
	case l.name != nil:
		name = l.name
	default:
		d.buf = d.table.appendName(d.buf, l.nameEnt)
		name = d.buf[a:len(d.buf):len(d.buf)]
	}
	m := len(d.buf)
	var ok bool
	if d.buf, ok = l.rawValue.appendTo(d.buf); !ok {
		return nil, nil, errHuffman
	}
	return name, d.buf[m:len(d.buf):len(d.buf)], nil
}

// reserve grows d.buf, when needed, so that n more bytes fit without
// moving it, so that the fields of a block share one array. It doubles,
// but not past d.grow unless the n bytes need it: stored fields hold at
// most the list bound, and a field only added to the table at most the
// table's maximum size, so d.buf never needs more than d.grow.
func (d *Decoder) reserve(n int) {
	if cap(d.buf)-len(d.buf) >= n {
		return
	}
	buf := make([]byte, len(d.buf), max(min(2*cap(d.buf), d.grow), len(d.buf)+n, min(512, d.grow)))
	copy(buf, d.buf)
	d.buf = buf
}

// rawString is a string literal (RFC 7541 section 5.2) as it appears in
// the block.
type rawString struct {
	b       []byte
	huffman bool
}

// readString reads a string literal from the start of p.
func readString(p []byte) (rawString, []byte, error) {
	if len(p) == 0 {
		return rawString{}, p, errTruncated
	}
	h := p[0]&0x80 != 0
	n, p, err := readInt(p, 7)
	if err != nil {
		return rawString{}, p, err
	}
	if n > uint64(len(p)) {
		return rawString{}, p, errStringLength
	}
	return rawString{b: p[:n:n], huffman: h}, p[n:], nil
}

// maxLen bounds the string's decoded length.
func (r rawString) maxLen() int {
	if r.huffman {
		return huffmanMaxLen(len(r.b))
	}
	return len(r.b)
}

// decodedLen returns the string's decoded length, and false for invalid
// Huffman code.
func (r rawString) decodedLen() (int, bool) {
	if r.huffman {
		return huffmanLen(r.b)
	}
	return len(r.b), true
}

// appendTo appends the decoded string to dst, and reports false for
// invalid Huffman code.
func (r rawString) appendTo(dst []byte) ([]byte, bool) {
	if r.huffman {
		return huffmanAppend(dst, r.b)
	}
	return append(dst, r.b...), true
}

// readInt reads an integer with a prefix of n bits (RFC 7541 section 5.1)
// from the start of p and returns it with the rest of p. Like x/net's
// decoder, it accepts at most nine continuation octets: a value that
// needs more than 63 bits is an error, and any value beyond what its use
// allows (an index, a string's length, a table size) is rejected there.
func readInt(p []byte, n uint8) (uint64, []byte, error) {
	if len(p) == 0 {
		return 0, p, errTruncated
	}
	mask := uint64(1)<<n - 1
	v := uint64(p[0]) & mask
	if v < mask {
		return v, p[1:], nil
	}
	for i, shift := 1, uint(0); i < len(p); i++ {
		b := p[i]
		v += uint64(b&0x7f) << shift
		if b&0x80 == 0 {
			return v, p[i+1:], nil
		}
		if shift += 7; shift >= 63 {
			return 0, p, errIntOverflow
		}
	}
	return 0, p, errTruncated
}
