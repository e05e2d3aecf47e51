package h2

import (
	"encoding/binary"
	"testing"

	"gale/codec"
	"gale/h2/hpack"
)

// browserGET is the fields of a typical browser navigation.
var browserGET = []string{
	":method", "GET", ":scheme", "https", ":authority", "www.example.com", ":path", "/assets/app.js?v=1234",
	"sec-ch-ua", `"Chromium";v="130", "Not?A_Brand";v="99"`,
	"sec-ch-ua-mobile", "?0",
	"sec-ch-ua-platform", `"Linux"`,
	"user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36",
	"accept", "*/*",
	"sec-fetch-site", "same-origin",
	"sec-fetch-mode", "no-cors",
	"sec-fetch-dest", "script",
	"referer", "https://www.example.com/",
	"accept-encoding", "gzip, deflate, br, zstd",
	"accept-language", "en-US,en;q=0.9",
	"cookie", "session=0123456789abcdef",
	"cookie", "theme=dark",
}

// responder answers every request inline with a small response, as a cache
// hit does: the pre-encoded block and body are built once.
type responder struct {
	c     *Conn
	block []byte
	body  []byte
	n     int
}

func (r *responder) Request(s *Stream, req *codec.Request) {
	r.n++
	r.c.WriteHeaders(s, r.block, false)
	r.c.WriteData(s, r.body, true)
}
func (r *responder) Data(*Stream, []byte, bool) {}
func (r *responder) Reset(*Stream, ErrCode)     {}
func (r *responder) Writable(*Stream)           {}

// steadyGET returns a Conn answering with a responder, warmed up with a
// few browser GETs encoded by x/net (so that its HPACK table holds the
// fields), and the HEADERS frame of the next GET: after warm-up the block
// is all indexed fields, the same for every stream, whose id is patched in
// place by setStream.
func steadyGET(tb testing.TB) (*Conn, *responder, []byte) {
	cl := newClient(tb, &Config{MaxRequests: 1<<32 - 1})
	r := &responder{c: cl.c, body: []byte("console.log('hello');\n")}
	r.block = hpack.AppendStatus(nil, 200)
	r.block = hpack.AppendField(r.block, []byte("content-type"), []byte("text/javascript"))
	r.block = hpack.AppendField(r.block, []byte("content-length"), []byte("22"))
	r.block = hpack.AppendField(r.block, []byte("etag"), []byte(`"5e1f-17a"`))
	cl.c.h = r
	cl.fr.WriteWindowUpdate(0, 1<<31-1-65535) // room for millions of responses
	for id := uint32(1); id < 8; id += 2 {
		cl.headers(id, true, browserGET...)
		cl.flush()
		if cl.err != nil {
			tb.Fatal(cl.err)
		}
	}
	cl.headers(9, true, browserGET...)
	frame := append([]byte(nil), cl.wbuf.Bytes()...)
	cl.wbuf.Reset()
	cl.c.ResetOut()
	if r.n != 4 {
		tb.Fatalf("%d responses", r.n)
	}
	return cl.c, r, frame
}

func setStream(frame []byte, id uint32) { binary.BigEndian.PutUint32(frame[5:9], id) }

// BenchmarkRequestResponse: Feed of a browser GET's HEADERS frame, the
// Request callback, WriteHeaders and WriteData of a small response.
func BenchmarkRequestResponse(b *testing.B) {
	c, r, frame := steadyGET(b)
	id := uint32(9)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		setStream(frame, id)
		id += 2
		if _, err := c.Feed(frame); err != nil {
			b.Fatal(err)
		}
		c.ResetOut()
	}
	b.StopTimer()
	if r.n != b.N+4 {
		b.Fatalf("%d responses for %d requests", r.n-4, b.N)
	}
}

// BenchmarkStreamTable: lookups of 100 open streams.
func BenchmarkStreamTable(b *testing.B) {
	var t streamTable
	t.init(128)
	for i := 0; i < 100; i++ {
		t.put(uint32(2*i+1), i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if t.get(uint32(2*(i%100)+1)) < 0 {
			b.Fatal("missing")
		}
	}
}
