package matrix

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// netClient speaks HTTP/2 (over TLS or h2c) with net/http, or HTTP/3
// with quic-go, over one connection.
type netClient struct {
	c     *http.Client
	base  string
	major int // the protocol version every response must have
	auth  string
	done  func() // closes the transport's connections
	site  *site
	proto proto
	addr  string // the server's host:port
}

// newNetClient returns the client of p for addr, one of s's listeners
// (or, for h2c, another server).
func newNetClient(s *site, p proto, addr string) *netClient {
	nc := &netClient{auth: s.auth, site: s, proto: p, addr: addr}
	nc.open()
	return nc
}

// open makes the client's transport, which dials on first use.
func (nc *netClient) open() {
	s, p := nc.site, nc.proto
	var rt http.RoundTripper
	switch p {
	case h2TLS:
		tr := &http.Transport{TLSClientConfig: s.tlsConfig(), DisableCompression: true, MaxConnsPerHost: 1}
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetHTTP2(true)
		rt, nc.base, nc.major, nc.done = tr, "https://"+nc.addr, 2, tr.CloseIdleConnections
	case h2c:
		tr := &http.Transport{DisableCompression: true, MaxConnsPerHost: 1}
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
		rt, nc.base, nc.major, nc.done = tr, "http://"+nc.addr, 2, tr.CloseIdleConnections
	case h3:
		tr := &http3.Transport{TLSClientConfig: s.tlsConfig(), DisableCompression: true}
		rt, nc.base, nc.major, nc.done = tr, "https://"+nc.addr, 3, func() { _ = tr.Close() }
	default:
		panic("matrix: no net/http client for " + p.String())
	}
	nc.c = &http.Client{Transport: rt, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// close ends the client's connection; the next request dials anew.
func (nc *netClient) close() {
	if nc.c != nil {
		nc.done()
		nc.c = nil
	}
}

// do sends c with body: with its length declared (content-length) or
// not, read by the transport whole or in random pieces.
func (nc *netClient) do(c *cell, body []byte) (outcome, error) {
	var rd io.Reader
	switch {
	case c.body < 0:
	case c.body == 0 && !c.unknown:
		rd = http.NoBody // content-length: 0, and the stream ends with the head
	case c.arrival == trickle:
		rd = &pieces{b: body, rng: rand.New(rand.NewPCG(c.seed, 9))}
	default:
		rd = bytes.NewReader(body)
	}
	if c.unknown && rd != nil {
		rd = io.NopCloser(rd) // hides the length from the transport
	}
	if nc.c == nil {
		nc.open()
	}
	req, err := http.NewRequest(c.method(), nc.base+c.target(), rd)
	if err != nil {
		return outcome{}, err
	}
	switch {
	case c.body < 0 || c.unknown:
		req.ContentLength = -1
		if c.body < 0 {
			req.ContentLength = 0
		}
	default:
		req.ContentLength = int64(c.body)
	}
	req.Header.Set("Cookie", "secret=head-bytes")
	if c.body >= 0 {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	if c.route.auth && !c.noAuth {
		req.Header.Set("Authorization", nc.auth)
	}
	resp, err := nc.c.Do(req)
	if err != nil {
		return outcome{}, err
	}
	o, err := fill(outcome{}, resp)
	if err == nil && resp.ProtoMajor != nc.major {
		err = fmt.Errorf("response over %s, want HTTP/%d", resp.Proto, nc.major)
	}
	return o, err
}

// pieces hands out its bytes in random pieces.
type pieces struct {
	b   []byte
	rng *rand.Rand
}

func (p *pieces) Read(q []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(q), len(p.b), 1+p.rng.IntN(maxPiece(len(p.b))))
	copy(q, p.b[:n])
	p.b = p.b[n:]
	return n, nil
}
