package hpack

import (
	"bytes"
	"runtime"
	"testing"
)

// An HPACK bomb is a block that names one large dynamic entry many times:
// a few kilobytes that decode to megabytes. Decode must cost no more than
// the list bound whatever the block expands to, and keep the table in
// step so that the connection can answer 431 and carry on.

const (
	bombMaxList = 16 << 10
	bombTable   = 64 << 10
	bombRefs    = 10000
)

// bombBlocks returns a block that adds a 4 KiB entry (literal or Huffman
// coded) and one that references it bombRefs times; joined, they are the
// one-block form of the bomb.
func bombBlocks(huffman bool) (add, refs []byte) {
	add = appendInt(nil, 0x40, 6, 0)
	add = appendString(add, []byte("x-bomb"), huffman)
	add = appendString(add, bytes.Repeat([]byte("a"), 4096), huffman)
	refs = bytes.Repeat([]byte{0x80 | 62}, bombRefs)
	return add, refs
}

func TestHPACKBomb(t *testing.T) {
	for _, c := range []struct {
		name    string
		huffman bool
		joined  bool
	}{
		{"literal entry, then references", false, false},
		{"huffman entry, then references", true, false},
		{"one block", false, true},
		{"one block, huffman", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			add, refs := bombBlocks(c.huffman)
			blocks := [][]byte{add, refs}
			if c.joined {
				blocks = [][]byte{append(append([]byte(nil), add...), refs...)}
			}
			var d Decoder
			var fs []Field
			var err error
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			d.Init(bombTable)
			for _, b := range blocks {
				fs, err = d.Decode(fs, b, bombMaxList)
			}
			runtime.ReadMemStats(&after)
			if err != ErrListTooLarge {
				t.Fatalf("err = %v; want ErrListTooLarge", err)
			}
			entry := uint64(len("x-bomb") + 4096 + 32)
			if want := int(bombMaxList / entry); len(fs) > want {
				t.Errorf("%d fields stored; at most %d fit", len(fs), want)
			}
			expanded := uint64(bombRefs) * entry
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("decoded list %d bytes; Decode allocated %d bytes, buffer capacity %d, fields %d", expanded, allocated, cap(d.buf), len(fs))
			if cap(d.buf) > bombMaxList+bombTable {
				t.Errorf("buffer grew to %d; bound %d", cap(d.buf), bombMaxList+bombTable)
			}
			if allocated > 4*(bombMaxList+bombTable) {
				t.Errorf("Decode allocated %d bytes for a list of %d; want O(maxList)", allocated, expanded)
			}
			// The table is in step: the entry is still there.
			fs, err = d.Decode(fs, []byte{0x80 | 62}, bombMaxList)
			if err != nil || len(fs) != 1 || string(fs[0].Name) != "x-bomb" || len(fs[0].Value) != 4096 {
				t.Fatalf("next block: %d fields, %v", len(fs), err)
			}
		})
	}
}

// TestBombOfLiterals checks the other way to expand a block past the
// bound: many large literals added to the table. Past the bound, each is
// materialized only to be added to the table, in space the table's size
// bounds, and the buffer stays within maxList plus that size.
func TestBombOfLiterals(t *testing.T) {
	const table = 4096
	var block []byte
	for i := 0; i < 200; i++ {
		block = appendInt(block, 0x40, 6, 0)
		block = appendString(block, []byte{'x', byte('a' + i%26)}, true)
		block = appendString(block, bytes.Repeat([]byte{'0' + byte(i%10)}, 4000), true)
		block = appendInt(block, 0x00, 4, 0) // and one that is too large for the table
		block = appendString(block, []byte("y"), false)
		block = appendString(block, bytes.Repeat([]byte("z"), 8000), true)
	}
	var d Decoder
	d.Init(table)
	fs, err := d.Decode(nil, block, bombMaxList)
	if err != ErrListTooLarge {
		t.Fatalf("err = %v", err)
	}
	if cap(d.buf) > bombMaxList+table {
		t.Errorf("buffer grew to %d for a block of %d; bound %d", cap(d.buf), len(block), bombMaxList+table)
	}
	if len(fs) > 4 {
		t.Errorf("%d fields stored", len(fs))
	}
	// The newest entry is the last literal with indexing.
	fs, err = d.Decode(fs, []byte{0x80 | 62}, bombMaxList)
	if err != nil || len(fs) != 1 || string(fs[0].Name) != "x"+string(rune('a'+199%26)) || fs[0].Value[0] != '9' {
		t.Fatalf("next block: %v, %v", fieldsOf(fs), err)
	}
}
