package proxy_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
)

// fastUpstream answers every request head with a fixed 128-byte response
// on kept-alive connections, allocating nothing per request.
func fastUpstream(b *testing.B) string {
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 128\r\n\r\n" + strings.Repeat("x", 128))
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
					for { // skip the head, allocating nothing
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

// roundTrips sends b.N requests one after another on one connection to
// addr and reads each 128-byte response.
func roundTrips(b *testing.B, addr string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	req := []byte("GET /proxy/s128.bin HTTP/1.1\r\nHost: bench\r\nUser-Agent: bench\r\n\r\n")
	body := make([]byte, 128)
	round := func() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		n := int64(-1)
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if len(line) == 2 {
				break
			}
			if len(line) > 16 && strings.EqualFold(string(line[:15]), "content-length:") {
				n = 128
			}
		}
		if n != 128 {
			b.Fatal("no Content-Length: 128")
		}
		if _, err := io.ReadFull(br, body); err != nil {
			b.Fatal(err)
		}
	}
	round()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		round()
	}
}

// BenchmarkRoundTripGale is one kept-alive client's request/response
// latency through gale (one event loop) to a fast upstream: client,
// proxy and upstream in this process, over loopback.
func BenchmarkRoundTripGale(b *testing.B) {
	up := fastUpstream(b)
	g := startGale(b, proxyRoute(up))
	roundTrips(b, g.addr)
}

// BenchmarkRoundTripHTTPUtil is the baseline: the same through
// net/http/httputil's ReverseProxy.
func BenchmarkRoundTripHTTPUtil(b *testing.B) {
	up := fastUpstream(b)
	u, _ := url.Parse("http://" + up)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 64}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: rp}
	go srv.Serve(ln)
	defer srv.Close()
	roundTrips(b, ln.Addr().String())
}
