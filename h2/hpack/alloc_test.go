//go:build !race

package hpack

import "testing"

// These tests fail on any allocation in the hot paths. The race detector
// allocates, so they are not built with -race.

// TestDecodeAllocs decodes the browser requests, Huffman strings and
// dynamic-table references, on a Decoder reused for a new connection.
func TestDecodeAllocs(t *testing.T) {
	blocks := xnetEncode(t, browserRequests...)
	var d Decoder
	var fs []Field
	run := func() {
		d.Init(4096)
		for _, b := range blocks {
			var err error
			if fs, err = d.Decode(fs, b, 16<<10); err != nil {
				t.Fatal(err)
			}
		}
	}
	run() // warm-up: the buffer, the table's rings and fs grow to fit
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Errorf("Decode of two browser requests: %v allocations; want 0", n)
	}
	if err := sameFields(fs, browserRequests[1]); err != nil {
		t.Fatal(err)
	}
	// Errors and oversized lists do not allocate either.
	bad := dehex(t, "82 00 84 ffffffff 00")
	if n := testing.AllocsPerRun(200, func() {
		run()
		if _, err := d.Decode(fs, blocks[1], 100); err != ErrListTooLarge {
			t.Fatal(err)
		}
		if _, err := d.Decode(fs, bad, 100); err != ErrCompression {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Decode past the bound and of a bad block: %v allocations; want 0", n)
	}
}

func TestAppendAllocs(t *testing.T) {
	dst := make([]byte, 0, 4096)
	ct, html := []byte("content-type"), []byte("text/html; charset=utf-8")
	xn, xv := []byte("x-request-id"), []byte("4f2a9c1be07d4e55a1c3")
	if n := testing.AllocsPerRun(200, func() {
		b := AppendTableSizeZero(dst[:0])
		b = AppendStatus(b, 200)
		b = AppendStatus(b, 302)
		b = AppendStatus(b, 1000)
		b = AppendField(b, ct, html)
		b = AppendField(b, xn, xv)
		b = AppendFieldNeverIndexed(b, xn, xv)
		b = AppendFieldHuffman(b, ct, html)
		_ = AppendFieldHuffman(b, xn, xv)
	}); n != 0 {
		t.Errorf("Append*: %v allocations; want 0", n)
	}
	if n := testing.AllocsPerRun(200, func() {
		_ = StaticNameIndex(ct)
		_ = StaticNameIndex(xn)
	}); n != 0 {
		t.Errorf("StaticNameIndex: %v allocations; want 0", n)
	}
}
