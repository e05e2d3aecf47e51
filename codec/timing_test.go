package codec

import (
	"bufio"
	"bytes"
	"net/http"
	"testing"
)

// BenchmarkParse and BenchmarkParseNetHTTP parse the same browser-like GET
// with 8 header fields.
func BenchmarkParse(b *testing.B) {
	buf := []byte(typicalGET)
	var r Request
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if _, err := Parse(buf, &r, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseNetHTTP(b *testing.B) {
	buf := []byte(typicalGET)
	rd := bytes.NewReader(buf)
	br := bufio.NewReader(rd)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		rd.Reset(buf)
		br.Reset(rd)
		if _, err := http.ReadRequest(br); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseByteByByte measures a head arriving one byte per read.
func BenchmarkParseByteByByte(b *testing.B) {
	buf := []byte(typicalGET)
	var r Request
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		r.Reset()
		for k := 1; k <= len(buf); k++ {
			if _, err := Parse(buf[:k], &r, nil); err != nil && err != ErrNeedMore {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkBodyChunked(b *testing.B) {
	var in []byte
	for i := 0; i < 64; i++ {
		in = append(in, "400\r\n"...)
		in = append(in, bytes.Repeat([]byte("x"), 1024)...)
		in = append(in, "\r\n"...)
	}
	in = append(in, "0\r\n\r\n"...)
	r := &Request{Chunked: true, ContentLength: -1}
	var br BodyReader
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		br.Init(r, 0)
		off := 0
		for {
			n, _, done, err := br.Next(in[off:])
			if err != nil {
				b.Fatal(err)
			}
			off += n
			if done {
				break
			}
		}
	}
}

func BenchmarkAppendResponseHead(b *testing.B) {
	h := &ResponseHead{
		Status:        200,
		Headers:       []Header{{[]byte("Content-Type"), []byte("text/html; charset=utf-8")}, {[]byte("ETag"), []byte(`"5e1f-17a"`)}},
		ContentLength: 1234,
		Server:        []byte("gale"),
	}
	dst := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendResponseHead(dst[:0], h)
	}
}
