package proxy_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
)

// chunkedUpstream answers every request head with a fixed chunked
// response of size bytes in chunks of chunk bytes, on kept-alive
// connections, allocating nothing per request.
func chunkedUpstream(b *testing.B, size, chunk int) string {
	var sb strings.Builder
	sb.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	for left := size; left > 0; left -= chunk {
		n := min(left, chunk)
		fmt.Fprintf(&sb, "%x\r\n%s\r\n", n, strings.Repeat("x", n))
	}
	sb.WriteString("0\r\n\r\n")
	resp := []byte(sb.String())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) == 2 {
							break
						}
					}
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// chunkedRoundTrips sends b.N requests one after another on one
// connection to addr and reads each chunked response of size payload
// bytes, allocating nothing per request.
func chunkedRoundTrips(b *testing.B, addr string, size int) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReaderSize(c, 64<<10)
	req := []byte("GET /proxy/chunked HTTP/1.1\r\nHost: bench\r\nUser-Agent: bench\r\n\r\n")
	round := func() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		chunked := false
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if len(line) == 2 {
				break
			}
			if bytes.EqualFold(line, []byte("transfer-encoding: chunked\r\n")) {
				chunked = true
			}
		}
		if !chunked {
			b.Fatal("no Transfer-Encoding: chunked")
		}
		got := 0
		for {
			line, err := br.ReadSlice('\n')
			if err != nil || len(line) < 3 {
				b.Fatalf("chunk size line %q: %v", line, err)
			}
			n := 0
			for _, h := range line[:len(line)-2] {
				d := strings.IndexByte("0123456789abcdef", h|0x20)
				if d < 0 {
					b.Fatalf("chunk size line %q", line)
				}
				n = n*16 + d
			}
			if _, err := br.Discard(n + 2); err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				break // the CRLF discarded ends an empty trailer section
			}
			got += n
		}
		if got != size {
			b.Fatalf("%d payload bytes, want %d", got, size)
		}
	}
	round()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		round()
	}
}

// BenchmarkRoundTripGaleChunked is BenchmarkRoundTripGale with a
// chunked upstream response of 128 bytes in one chunk.
func BenchmarkRoundTripGaleChunked(b *testing.B) {
	up := chunkedUpstream(b, 128, 128)
	g := startGale(b, proxyRoute(up))
	chunkedRoundTrips(b, g.addr, 128)
}

// BenchmarkRoundTripGaleChunked64K relays a 64 KiB chunked response in
// 8 KiB chunks: the cost of framing the body again per chunk.
func BenchmarkRoundTripGaleChunked64K(b *testing.B) {
	up := chunkedUpstream(b, 64<<10, 8<<10)
	g := startGale(b, proxyRoute(up))
	chunkedRoundTrips(b, g.addr, 64<<10)
}
