package hpack

import (
	"bytes"
	"strings"
	"testing"
)

func decodeHex(t *testing.T, d *Decoder, block string, maxList uint32) ([]Field, error) {
	t.Helper()
	return d.Decode(nil, dehex(t, block), maxList)
}

// TestDecodeErrors feeds each kind of malformed representation and checks
// that Decode returns ErrCompression itself, for the expected cause.
func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct {
		name, block string
		cause       error
	}{
		{"integer of ten continuation octets", "ff ffffffffffffffffff 7f", errIntOverflow},
		{"string length overflowing", "00 ff ffffffffffffffffff 01", errIntOverflow},
		{"size update overflowing", "3f ffffffffffffffffff 01", errIntOverflow},
		{"block ends inside an integer", "ff", errTruncated},
		{"block ends inside an index", "ff 80", errTruncated},
		{"block ends before the value", "40 01 61", errTruncated},
		{"block ends before a string", "00", errTruncated},
		{"index 0", "80", errIndexZero},
		{"index 62 with an empty table", "be", errIndex},
		{"index far beyond", "ff ffffffff0f", errIndex},
		{"name index 62 with an empty table", "0f 2f 00", errIndex},
		{"incremental name index 62", "7e 00", errIndex},
		{"never-indexed name index 62", "1f 2f 00", errIndex},
		{"string longer than the block", "40 05 61 62", errStringLength},
		{"value longer than the block", "40 01 61 02 62", errStringLength},
		{"string length near 2^63", "00 7f ffffffffffffffff7f", errStringLength},
		{"padding of eight ones", "00 81 ff 00", errHuffman},
		{"padding after a symbol beyond seven bits", "00 82 1fff 00", errHuffman},
		{"padding with a zero", "00 81 18 00", errHuffman},
		{"EOS in a string", "00 84 ffffffff 00", errHuffman},
		{"EOS then a symbol", "00 85 ffffffff 1f 00", errHuffman},
		{"huffman value invalid", "04 81 00", errHuffman},
		{"size update above the limit", "3fe21f", errSizeUpdateLimit},
		{"size update after a field", "82 20", errSizeUpdateLate},
		{"size update after a skipped field", "41 00 20", errSizeUpdateLate},
	} {
		t.Run(c.name, func(t *testing.T) {
			var d Decoder
			d.Init(4096)
			_, err := decodeHex(t, &d, c.block, 1<<16)
			if err != ErrCompression {
				t.Fatalf("err = %v; want ErrCompression", err)
			}
			if d.cause != c.cause {
				t.Errorf("cause = %v; want %v", d.cause, c.cause)
			}
		})
	}
}

// TestDecodeErrorsPastListBound checks that a field the list bound skips
// is validated all the same: its errors are still COMPRESSION_ERROR.
func TestDecodeErrorsPastListBound(t *testing.T) {
	for _, block := range []string{
		"82 00 81 ff 00",         // bad Huffman name
		"82 04 81 18",            // bad Huffman value, static name
		"82 40 01 61 81 ff",      // bad Huffman value, incremental
		"82 be",                  // index beyond the table
		"82 40 01 61 02 62",      // string too long
		"82 0f 2f 00",            // name index beyond the table
		"82 20",                  // size update after a field
		"82 00 84 ffffffff 00",   // EOS
		"82 ff ffffffffffffff7f", // overflow
	} {
		var d Decoder
		d.Init(4096)
		fs, err := decodeHex(t, &d, block, 1) // the first field does not fit
		if err != ErrCompression || len(fs) != 0 {
			t.Errorf("%s: %d fields, %v; want 0, ErrCompression", block, len(fs), err)
		}
	}
}

// TestHuffmanPadding checks the padding rules of RFC 7541 section 5.2
// with every symbol: its code with each valid padding decodes to it, and
// with padding of eight ones or more, or containing a zero, it does not.
func TestHuffmanPadding(t *testing.T) {
	for sym := 0; sym < 256; sym++ {
		c := huffmanCodes[sym]
		pad := (8 - uint(c.bits)%8) % 8
		enc := huffmanAppendEncoded(nil, []byte{byte(sym)})
		got, ok := huffmanAppend(nil, enc)
		if !ok || len(got) != 1 || got[0] != byte(sym) {
			t.Fatalf("symbol %d: %x decodes to %x, %v", sym, enc, got, ok)
		}
		if n, ok := huffmanLen(enc); !ok || n != 1 {
			t.Fatalf("symbol %d: huffmanLen = %d, %v", sym, n, ok)
		}
		if _, ok := huffmanAppend(nil, append(enc, 0xff)); ok {
			t.Errorf("symbol %d: padding of %d ones accepted", sym, pad+8)
		}
		if pad > 0 {
			bad := append([]byte(nil), enc...)
			bad[len(bad)-1] &^= 1 // a zero in the padding
			if _, ok := huffmanAppend(nil, bad); ok {
				t.Errorf("symbol %d: padding %x with a zero accepted", sym, bad)
			}
			if _, ok := huffmanLen(bad); ok {
				t.Errorf("symbol %d: huffmanLen accepted padding %x with a zero", sym, bad)
			}
		}
	}
	// A symbol cut short by more than seven bits is not padding either,
	// even when the bits read are all ones.
	long := huffmanAppendEncoded(nil, []byte{0}) // 13 bits: 1111111111000
	if _, ok := huffmanAppend(nil, long[:1]); ok {
		t.Errorf("eight bits of a 13-bit code accepted")
	}
}

// TestHuffmanEOS checks that EOS is rejected wherever it appears.
func TestHuffmanEOS(t *testing.T) {
	a := huffmanAppendEncoded(nil, []byte("a")) // 00011 111
	for _, s := range [][]byte{
		{0xff, 0xff, 0xff, 0xff},            // EOS and two ones
		{0xff, 0xff, 0xff, 0xfc},            // EOS and two zeros
		{a[0] &^ 7, 0xff, 0xff, 0xff, 0xff}, // 'a' (5 bits), then EOS from its sixth bit on
	} {
		if got, ok := huffmanAppend(nil, s); ok {
			t.Errorf("%x decodes to %q", s, got)
		}
		if _, ok := huffmanLen(s); ok {
			t.Errorf("huffmanLen accepted %x", s)
		}
	}
}

// TestHuffmanRoundTrip encodes every octet in every position and decodes
// it back.
func TestHuffmanRoundTrip(t *testing.T) {
	var s []byte
	for i := 0; i < 256; i++ {
		s = append(s, byte(i), byte(255-i), 'a', byte(i))
	}
	for n := 0; n <= len(s); n += 7 {
		enc := huffmanAppendEncoded(nil, s[:n])
		if len(enc) != huffmanEncodedLen(s[:n]) {
			t.Fatalf("%d octets: encoded to %d, huffmanEncodedLen %d", n, len(enc), huffmanEncodedLen(s[:n]))
		}
		got, ok := huffmanAppend(nil, enc)
		if !ok || !bytes.Equal(got, s[:n]) {
			t.Fatalf("%d octets: round trip %v", n, ok)
		}
		if l, ok := huffmanLen(enc); !ok || l != n || l > huffmanMaxLen(len(enc)) {
			t.Fatalf("%d octets: huffmanLen %d, %v; bound %d", n, l, ok, huffmanMaxLen(len(enc)))
		}
	}
}

// TestSizeUpdates checks dynamic table size updates (RFC 7541 section
// 4.2 and 6.3): any number at the start of a block, evicting as they go,
// and at most the size given to Init.
func TestSizeUpdates(t *testing.T) {
	var d Decoder
	d.Init(4096)
	// Two entries of 34 and 36 octets.
	if _, err := decodeHex(t, &d, "40 01 61 01 62 40 02 6363 02 6464", 1<<16); err != nil {
		t.Fatal(err)
	}
	if d.table.size != 70 {
		t.Fatalf("size %d; want 70", d.table.size)
	}
	// Shrink to 40 (evicts the older entry), then grow back to 4096, then
	// reference what is left: "cc: dd" is index 62.
	fs, err := decodeHex(t, &d, "3f09 3fe11f be", 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldsOf(fs); !equalHF(got, []hf{{"cc", "dd", false}}) {
		t.Fatalf("fields %v", got)
	}
	if d.table.len() != 1 || d.table.maxSize != 4096 {
		t.Fatalf("table %v, max %d", d.tableEntries(), d.table.maxSize)
	}
	// Size 0 empties the table; index 62 is then an error.
	if _, err := decodeHex(t, &d, "20", 1<<16); err != nil || d.table.len() != 0 {
		t.Fatalf("size 0: %v, %d entries", err, d.table.len())
	}
	if _, err := decodeHex(t, &d, "be", 1<<16); err != ErrCompression {
		t.Fatalf("index 62 after size 0: %v", err)
	}
	// With the maximum size at 0, an entry is decoded but not kept.
	d.Init(4096)
	fs, err = decodeHex(t, &d, "20 40 01 61 01 62", 1<<16)
	if err != nil || len(fs) != 1 || d.table.len() != 0 {
		t.Fatalf("insert at size 0: %v, %d fields, %d entries", err, len(fs), d.table.len())
	}
	// A Decoder initialised with 0 accepts a size update to 0 only.
	d.Init(0)
	if _, err := decodeHex(t, &d, "20", 1<<16); err != nil {
		t.Fatalf("update to 0 with limit 0: %v", err)
	}
	if _, err := decodeHex(t, &d, "21", 1<<16); err != ErrCompression {
		t.Fatalf("update to 1 with limit 0: %v", err)
	}
}

// TestInsertEvictsItsName checks the caution of RFC 7541 section 4.4: a
// new entry may take its name from an entry that its insertion evicts.
func TestInsertEvictsItsName(t *testing.T) {
	var d Decoder
	d.Init(80)
	if _, err := decodeHex(t, &d, "40 04 61616161 04 62626262", 1<<16); err != nil { // aaaa: bbbb, size 40
		t.Fatal(err)
	}
	for _, maxList := range []uint32{1 << 16, 1} { // stored, and only indexed
		d2 := d
		d2.table.slab = append([]byte(nil), d.table.slab...)
		d2.table.ents = append([]entry(nil), d.table.ents...)
		// Name index 62, value "0123456789": size 46 evicts aaaa first.
		fs, err := decodeHex(t, &d2, "7e 0a 30313233343536373839", maxList)
		want := []hf{{"aaaa", "0123456789", false}}
		if maxList == 1 {
			if err != ErrListTooLarge || len(fs) != 0 {
				t.Fatalf("maxList 1: %d fields, %v", len(fs), err)
			}
		} else if err != nil || !equalHF(fieldsOf(fs), want) {
			t.Fatalf("fields %v, %v", fieldsOf(fs), err)
		}
		if got := d2.tableEntries(); !equalHF(got, want) || d2.table.size != 46 {
			t.Fatalf("maxList %d: table %v, size %d", maxList, got, d2.table.size)
		}
	}
}

// TestEntryLargerThanTable checks that an entry larger than the table
// empties it (RFC 7541 section 4.4), whether or not it is stored.
func TestEntryLargerThanTable(t *testing.T) {
	for _, maxList := range []uint32{1 << 16, 1} {
		var d Decoder
		d.Init(64)
		if _, err := decodeHex(t, &d, "40 01 61 01 62", 1<<16); err != nil {
			t.Fatal(err)
		}
		big := "40 01 61 20 " + strings.Repeat("62", 32) // 1+32+32 = 65 > 64
		if _, err := decodeHex(t, &d, big, maxList); (err != nil) != (maxList == 1) {
			t.Fatalf("maxList %d: %v", maxList, err)
		}
		if d.table.len() != 0 || d.table.size != 0 {
			t.Errorf("maxList %d: table %v after an entry larger than it", maxList, d.tableEntries())
		}
	}
}

// TestListBound checks ErrListTooLarge: the fields that fit are returned,
// nothing after the first that does not, and the table stays in step.
func TestListBound(t *testing.T) {
	var d Decoder
	d.Init(4096)
	// :method GET (42), a: b (34, indexed), :path / (38), c: d (34, indexed).
	block := "82 40 01 61 01 62 84 40 01 63 01 64"
	fs, err := decodeHex(t, &d, block, 42+34+37)
	if err != ErrListTooLarge {
		t.Fatalf("err = %v", err)
	}
	if got := fieldsOf(fs); !equalHF(got, []hf{{":method", "GET", false}, {"a", "b", false}}) {
		t.Fatalf("fields %v", got)
	}
	if got := d.tableEntries(); !equalHF(got, []hf{{"c", "d", false}, {"a", "b", false}}) {
		t.Fatalf("table %v", got)
	}
	// The next block uses the entries added past the bound.
	fs, err = decodeHex(t, &d, "be bf", 1<<16)
	if err != nil || !equalHF(fieldsOf(fs), []hf{{"c", "d", false}, {"a", "b", false}}) {
		t.Fatalf("next block: %v, %v", fieldsOf(fs), err)
	}
	// A bound of exactly the list's size is not exceeded.
	fs, err = decodeHex(t, &d, block, 42+34+38+34)
	if err != nil || len(fs) != 4 {
		t.Fatalf("exact bound: %d fields, %v", len(fs), err)
	}
	// Huffman strings near the bound: the bound on their length is
	// exceeded but their decoded size fits.
	var e []byte
	e = appendInt(e, 0x40, 6, 0)
	e = appendString(e, []byte("custom-key"), true)
	e = appendString(e, []byte("custom-value"), true)
	fs, err = d.Decode(nil, e, 10+12+32)
	if err != nil || !equalHF(fieldsOf(fs), []hf{{"custom-key", "custom-value", false}}) {
		t.Fatalf("huffman at the bound: %v, %v", fieldsOf(fs), err)
	}
}

// TestFieldsClipped checks that a field's slices cannot be appended to
// over their neighbours.
func TestFieldsClipped(t *testing.T) {
	var d Decoder
	d.Init(4096)
	fs, err := decodeHex(t, &d, "40 01 61 01 62 be 82 00 01 63 01 64", 1<<16)
	if err != nil || len(fs) != 4 {
		t.Fatal(len(fs), err)
	}
	for _, f := range fs {
		if cap(f.Name) != len(f.Name) || cap(f.Value) != len(f.Value) {
			t.Errorf("%s: %s: capacity not clipped", f.Name, f.Value)
		}
	}
}

// TestRingWraps fills a small table with entries of many sizes, so that
// entries wrap around the slab's end, and reads each back through an
// index at once and, for the older ones, a few blocks later.
func TestRingWraps(t *testing.T) {
	var d Decoder
	d.Init(300)
	type kv struct{ name, value string }
	var model []kv // newest first
	modelSize := 0
	for i := 0; i < 500; i++ {
		name := strings.Repeat(string(rune('a'+i%26)), 1+i%7)
		value := strings.Repeat("v", (i*37)%90)
		block := appendInt(nil, 0x40, 6, 0)
		block = appendString(block, []byte(name), i%2 == 0)
		block = appendString(block, []byte(value), i%3 == 0)
		model = append([]kv{{name, value}}, model...)
		modelSize += len(name) + len(value) + 32
		for modelSize > 300 {
			last := model[len(model)-1]
			modelSize -= len(last.name) + len(last.value) + 32
			model = model[:len(model)-1]
		}
		for j := range model {
			block = appendInt(block, 0x80, 7, uint64(62+j))
		}
		fs, err := d.Decode(nil, block, 1<<16)
		if err != nil {
			t.Fatalf("block %d: %v (%v)", i, err, d.cause)
		}
		for j, m := range model {
			f := fs[1+j]
			if string(f.Name) != m.name || string(f.Value) != m.value {
				t.Fatalf("block %d: index %d = %s: %s; want %s: %s", i, 62+j, f.Name, f.Value, m.name, m.value)
			}
		}
		if d.table.size != uint64(modelSize) || len(d.table.slab) > 300 {
			t.Fatalf("block %d: size %d, slab %d; want %d", i, d.table.size, len(d.table.slab), modelSize)
		}
	}
}
