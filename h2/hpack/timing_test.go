package hpack

import (
	"testing"

	"golang.org/x/net/http2/hpack"
)

// Each decoding benchmark decodes the two browser requests on a Decoder
// reused for a new connection, paired with x/net's Decoder on the same
// blocks.

func BenchmarkDecode(b *testing.B) {
	blocks := xnetEncode(b, browserRequests...)
	var d Decoder
	var fs []Field
	b.ReportAllocs()
	b.SetBytes(int64(len(blocks[0]) + len(blocks[1])))
	for b.Loop() {
		d.Init(4096)
		for _, blk := range blocks {
			var err error
			if fs, err = d.Decode(fs, blk, 16<<10); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkDecodeXNet(b *testing.B) {
	blocks := xnetEncode(b, browserRequests...)
	b.ReportAllocs()
	b.SetBytes(int64(len(blocks[0]) + len(blocks[1])))
	for b.Loop() {
		d := hpack.NewDecoder(4096, nil)
		for _, blk := range blocks {
			if _, err := d.DecodeFull(blk); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkDecodeBomb decodes the one-block HPACK bomb of TestHPACKBomb:
// 10,000 references to a 4 KiB entry, 40 MB of list skipped.
func BenchmarkDecodeBomb(b *testing.B) {
	add, refs := bombBlocks(true)
	block := append(add, refs...)
	var d Decoder
	var fs []Field
	b.ReportAllocs()
	b.SetBytes(int64(len(block)))
	for b.Loop() {
		d.Init(bombTable)
		fs, _ = d.Decode(fs, block, bombMaxList)
	}
}

func BenchmarkHuffmanDecode(b *testing.B) {
	s := []byte("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")
	enc := huffmanAppendEncoded(nil, s)
	dst := make([]byte, 0, len(s))
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		dst, _ = huffmanAppend(dst[:0], enc)
	}
}

func BenchmarkHuffmanDecodeXNet(b *testing.B) {
	s := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	enc := hpack.AppendHuffmanString(nil, s)
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := hpack.HuffmanDecodeToString(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendResponse encodes a typical response head the stateless
// way, paired with x/net's Encoder (which indexes into its dynamic table).
func BenchmarkAppendResponse(b *testing.B) {
	fields := [][2][]byte{
		{[]byte("content-type"), []byte("text/html; charset=utf-8")},
		{[]byte("content-length"), []byte("12345")},
		{[]byte("date"), []byte("Tue, 01 Dec 2026 23:23:18 GMT")},
		{[]byte("last-modified"), []byte("Mon, 30 Nov 2026 10:00:00 GMT")},
		{[]byte("etag"), []byte(`"6a3f-5e1c2b"`)},
		{[]byte("server"), []byte("gale")},
		{[]byte("x-content-type-options"), []byte("nosniff")},
	}
	dst := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendStatus(dst[:0], 200)
		for _, f := range fields {
			dst = AppendField(dst, f[0], f[1])
		}
	}
	b.SetBytes(int64(len(dst)))
}

func BenchmarkAppendResponseHuffman(b *testing.B) {
	fields := [][2][]byte{
		{[]byte("content-type"), []byte("text/html; charset=utf-8")},
		{[]byte("content-length"), []byte("12345")},
		{[]byte("date"), []byte("Tue, 01 Dec 2026 23:23:18 GMT")},
		{[]byte("last-modified"), []byte("Mon, 30 Nov 2026 10:00:00 GMT")},
		{[]byte("etag"), []byte(`"6a3f-5e1c2b"`)},
		{[]byte("server"), []byte("gale")},
		{[]byte("x-content-type-options"), []byte("nosniff")},
	}
	dst := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendStatus(dst[:0], 200)
		for _, f := range fields {
			dst = AppendFieldHuffman(dst, f[0], f[1])
		}
	}
	b.SetBytes(int64(len(dst)))
}
