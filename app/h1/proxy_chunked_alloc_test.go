//go:build !race

package h1

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// chunkedResponse is a chunked upstream response of size bytes in chunks
// of chunk bytes, with an extension on every chunk and a trailer field.
func chunkedResponse(size, chunk int) []byte {
	var b strings.Builder
	b.WriteString("HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\n" +
		"Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n")
	for left := size; left > 0; left -= chunk {
		n := min(left, chunk)
		fmt.Fprintf(&b, "%x;e=1\r\n%s\r\n", n, strings.Repeat("x", n))
	}
	b.WriteString("0\r\nX-T: v\r\n\r\n")
	return []byte(b.String())
}

// TestProxyChunkedAllocs is TestProxyAllocs for a chunked upstream
// response, which the sink frames again: small chunks copied next to the
// head, large ones written in place, never more than 8 buffers to one
// writev (golang.org/x/sys/unix.Writev allocates past 8, where the fake
// connection would not).
func TestProxyChunkedAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, c := range []struct{ size, chunk int }{{128, 128}, {1 << 10, 100}, {64 << 10, 8 << 10}, {200 << 10, 20 << 10}} {
		t.Run(fmt.Sprint(c.size, "/", c.chunk), func(t *testing.T) {
			f := newProxyFixture(t, "  - path: /\n    proxy: {to: [\"127.0.0.1:9\"]}\n")
			f.req = []byte("GET /c HTTP/1.1\r\nHost: a\r\n\r\n")
			f.resp = chunkedResponse(c.size, c.chunk)
			f.exchange(t)
			if n := testing.AllocsPerRun(200, func() { f.exchange(t) }); n != 0 {
				t.Fatalf("%v allocations per proxied request, want 0", n)
			}
			if f.cl.maxIov > 8 {
				t.Errorf("%d buffers to one writev, want at most 8", f.cl.maxIov)
			}
		})
	}
}

// BenchmarkProxyExchangeChunked is BenchmarkProxyExchange with a chunked
// upstream response of 128 bytes in one chunk.
func BenchmarkProxyExchangeChunked(b *testing.B) {
	benchChunked(b, 128, 128)
}

// BenchmarkProxyExchangeChunked64K relays 64 KiB in 8 KiB chunks.
func BenchmarkProxyExchangeChunked64K(b *testing.B) {
	benchChunked(b, 64<<10, 8<<10)
}

func benchChunked(b *testing.B, size, chunk int) {
	f := newProxyFixture(b, "  - path: /\n    proxy: {to: [\"127.0.0.1:9\"]}\n")
	f.req = []byte("GET /c HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n")
	f.resp = chunkedResponse(size, chunk)
	f.exchange(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(f.req) + len(f.resp)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.exchange(b)
	}
}
