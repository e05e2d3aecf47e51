//go:build !race

package h2

import (
	"testing"

	"gale/codec"
)

// These tests fail on any allocation in the per-request path. The race
// detector allocates, so they are not built with -race.

// TestFeedAllocs: Feed of a browser GET's HEADERS frame through to
// Handler.Request, which answers with WriteHeaders and WriteData.
func TestFeedAllocs(t *testing.T) {
	c, r, frame := steadyGET(t)
	id := uint32(9)
	if n := testing.AllocsPerRun(500, func() {
		setStream(frame, id)
		id += 2
		if _, err := c.Feed(frame); err != nil {
			t.Fatal(err)
		}
		c.ResetOut()
	}); n != 0 {
		t.Errorf("Feed of a GET answered inline: %v allocations; want 0", n)
	}
	if r.n < 500 || c.Streams() != 0 {
		t.Fatalf("%d responses, %d streams open", r.n, c.Streams())
	}
}

// TestResponseAllocs: WriteHeaders and WriteData of a small response on a
// stream answered outside Request, as after a cache miss or a proxied
// exchange.
func TestResponseAllocs(t *testing.T) {
	c, r, frame := steadyGET(t)
	var held *Stream
	c.h = &holder{responder: r, held: &held}
	id := uint32(9)
	if n := testing.AllocsPerRun(500, func() {
		setStream(frame, id)
		id += 2
		if _, err := c.Feed(frame); err != nil {
			t.Fatal(err)
		}
		c.WriteHeaders(held, r.block, false)
		c.WriteData(held, r.body, true)
		c.ResetOut()
	}); n != 0 {
		t.Errorf("WriteHeaders and WriteData: %v allocations; want 0", n)
	}
	if c.Streams() != 0 {
		t.Fatalf("%d streams open", c.Streams())
	}
}

// holder keeps the stream of each request for the test to answer.
type holder struct {
	*responder
	held **Stream
}

func (h *holder) Request(s *Stream, _ *codec.Request) { *h.held = s }
