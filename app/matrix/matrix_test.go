package matrix

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestMatrix runs the cells of every protocol against one site, each
// protocol's cells in a row on two client connections that take turns,
// and checks both directions byte for byte (see doc.go).
func TestMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the protocol matrix: not in -short")
	}
	s := startSite(t, "")
	start := time.Now()
	total := 0
	for pi, p := range protos {
		cells := cellsFor(p, pi, newRng(pi))
		total += len(cells)
		t.Run(p.String(), func(t *testing.T) { runCells(t, s, p, cells) })
	}
	t.Logf("%d cells in %v; upstream connections: http1 %d, h2c %d, tls %d", total, time.Since(start).Round(time.Millisecond), s.up1.conns.Load(), s.up2.conns.Load(), s.up3.conns.Load())
}

// newClient returns a client of protocol p for s.
func newClient(s *site, p proto) client {
	switch p {
	case h1Plain:
		return &rawClient{addr: s.plain, auth: s.auth}
	case h1TLS:
		return &rawClient{addr: s.tls, cfg: s.tlsConfig("http/1.1"), auth: s.auth}
	case h2c:
		return newNetClient(s, p, s.plain)
	}
	return newNetClient(s, p, s.tls)
}

// maxFailures ends a protocol's run: past it, later failures are likely
// echoes of the first.
const maxFailures = 10

// runCells sends cells to s in order, turn about on two clients.
func runCells(t *testing.T, s *site, p proto, cells []cell) {
	runOn(t, p, cells, func() client { return newClient(s, p) })
}

// runOn sends cells in order, turn about on two clients from dial.
func runOn(t *testing.T, p proto, cells []cell, dial func() client) {
	clients := []client{dial(), dial()}
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()
	failures := 0
	for i := range cells {
		c := &cells[i]
		cl := clients[i%2]
		if err := check(cl, c); err != nil {
			t.Errorf("cell %d (client %d) %s: %v", i, i%2, c, err)
			cl.close()
			if failures++; failures == maxFailures {
				t.Fatalf("%d failures; stopping %s", failures, p)
			}
		}
	}
}

// check sends c on cl and compares what came back with c.want.
func check(cl client, c *cell) error {
	var body []byte
	if c.body >= 0 {
		body = make([]byte, c.body)
		rand.NewChaCha8(seed32(c.seed)).Read(body)
	}
	w := c.want(body)
	o, err := cl.do(c, body)
	if err != nil {
		return err
	}
	err = w.check(&o)
	if err != nil && w.alt != nil && w.alt.check(&o) == nil {
		return nil
	}
	return err
}

// check compares o with w.
func (w *want) check(o *outcome) error {
	if o.status != w.status {
		return fmt.Errorf("status %d, want %d (X-Got %q, %d body bytes)", o.status, w.status, o.got, o.body)
	}
	if w.got != "" && o.got != w.got {
		return fmt.Errorf("the application read %q, want %q", o.got, w.got)
	}
	if w.keep && o.closed {
		return errors.New("the response closes the connection")
	}
	if w.location != "" && o.location != w.location {
		return fmt.Errorf("Location %q, want %q", o.location, w.location)
	}
	if w.body != nil {
		if sum := sha256.Sum256(w.body); o.body != int64(len(w.body)) || !bytes.Equal(o.sum[:], sum[:]) {
			return fmt.Errorf("response body %d bytes sha256 %x, want %d bytes %x", o.body, o.sum[:8], len(w.body), sum[:8])
		}
	}
	return nil
}

// seed32 widens a cell's seed to a ChaCha8 seed.
func seed32(s uint64) (out [32]byte) {
	for i := range 4 {
		v := s * uint64(2*i+1)
		for j := range 8 {
			out[8*i+j] = byte(v >> (8 * j))
		}
	}
	return out
}

// newRng returns the fixed random source of the pi-th protocol's cells.
func newRng(pi int) *rand.Rand { return rand.New(rand.NewPCG(28, uint64(pi))) }

// TestMatrixReference sends the proxy routes' cells straight to their
// applications, with net/http's server as the reference: an HTTP/1.1
// cell from the raw client to the HTTP/1.1 application, an h2c one to
// the h2c application. It proves the clients' framing and the cells'
// expectations, so that a cell failing through gale is gale's.
func TestMatrixReference(t *testing.T) {
	s := startSite(t, "")
	for _, ref := range []struct {
		p    proto
		base string
		dial func() client
	}{
		{h1Plain, "up1", func() client { return &rawClient{addr: s.up1.addr, auth: s.auth} }},
		{h2c, "up2", func() client { return newNetClient(s, h2c, s.up2.addr) }},
	} {
		var cells []cell
		for _, r := range routes() {
			if r.base != ref.base || r.auth {
				continue
			}
			for _, c := range product(ref.p, r, newRng(int(ref.p))) {
				if full() || !c.large() {
					cells = append(cells, c)
				}
			}
		}
		t.Logf("%s: %d cells", ref.p, len(cells))
		t.Run(ref.p.String(), func(t *testing.T) { runOn(t, ref.p, cells, ref.dial) })
	}
}

// TestMatrixInterleaved runs a smaller sample of every protocol (40
// small cells and the large ones) at once on the one event loop: ten clients interleave their requests, routes
// queue for their FastCGI connections (max_conns 2), and the upstream
// connections are shared out between them. The bytes are checked as in
// TestMatrix.
func TestMatrixInterleaved(t *testing.T) {
	s := startSite(t, "")
	for pi, p := range protos {
		cells := cellsFor(p, pi, rand.New(rand.NewPCG(2028, uint64(pi))))
		if !full() {
			keep, small := cells[:0], 0
			for _, c := range cells {
				switch {
				case c.large():
					keep = append(keep, c)
				case small < 40:
					keep = append(keep, c)
					small++
				}
			}
			cells = keep
		}
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			runCells(t, s, p, cells)
		})
	}
}

// TestMatrixTight runs a sample with gale's buffers small (output bound,
// socket and read buffers), so that responses outrun their clients and
// the back-pressure paths (off-loop transfers, held and paced bodies,
// the h2c relay) are taken again and again.
func TestMatrixTight(t *testing.T) {
	if testing.Short() {
		t.Skip("the protocol matrix with tight buffers: not in -short")
	}
	s := startSite(t, "  max_buffered_output: 16KiB\n  socket_send_buffer: 16KiB\n  socket_recv_buffer: 16KiB\n  read_buffer: 16KiB")
	for pi, p := range protos {
		cells := cellsFor(p, pi, rand.New(rand.NewPCG(4096, uint64(pi))))
		if !full() {
			// A response that outruns its client moves on at the sweep's
			// pace at worst: 8 MiB ones take seconds each here.
			keep := cells[:0]
			for _, c := range cells {
				if c.respN < 1<<20 {
					keep = append(keep, c)
				}
			}
			cells = keep
		}
		t.Run(p.String(), func(t *testing.T) { runCells(t, s, p, cells) })
	}
}
