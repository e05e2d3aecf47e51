package h2

import (
	"testing"

	"gale/codec"
)

// FuzzFeed feeds arbitrary bytes after the preface and a SETTINGS frame to
// a Conn that answers every request inline, consumes every body and
// resets every tenth stream, split at a point the input chooses: no panic,
// the same result whole and split, and output bounded by the input (every
// frame the peer sends makes us queue a bounded amount).
func FuzzFeed(f *testing.F) {
	cl := newClient(f, nil)
	cl.get(1, "/one", "accept-encoding", "gzip")
	cl.headers(3, false, ":method", "POST", ":scheme", "http", ":authority", "h:8080", ":path", "/two", "content-length", "11")
	cl.fr.WriteData(3, false, []byte("hello "))
	cl.fr.WriteDataPadded(3, false, []byte("world"), make([]byte, 7))
	cl.headers(3, true, "x-trailer", "t")
	cl.fr.WritePing(false, [8]byte{1, 2, 3, 4, 5, 6, 7, 8})
	cl.fr.WriteWindowUpdate(0, 1000)
	cl.fr.WriteRSTStream(1, 8)
	seed := cl.wbuf.Bytes()[len(ClientPreface):]
	f.Add(seed, uint16(100))
	f.Add(seed[:40], uint16(7))
	f.Fuzz(func(t *testing.T, b []byte, split uint16) {
		if len(b) > 1<<16 {
			return
		}
		in := append([]byte(ClientPreface), b...)
		_, out1, err1 := feedFuzz(in, len(in))
		_, out2, err2 := feedFuzz(in, int(split)%(len(in)+1))
		if (err1 == nil) != (err2 == nil) || out1 != out2 {
			t.Fatalf("whole: %d bytes out, %v; split at %d: %d bytes out, %v", out1, err1, split, out2, err2)
		}
		if out1 > 64<<10+40*len(in) {
			t.Fatalf("%d bytes in, %d bytes out", len(in), out1)
		}
	})
}

// fuzzHandler answers like a small engine.
type fuzzHandler struct {
	c *Conn
	n int
}

func (h *fuzzHandler) Request(s *Stream, req *codec.Request) {
	h.n++
	switch {
	case h.n%10 == 0:
		h.c.Reset(s, Cancel)
	case !s.BodyFollows:
		respond(h.c, s, 200, "fuzz")
	}
}
func (h *fuzzHandler) Data(s *Stream, data []byte, end bool) {
	h.c.Consumed(s, len(data))
	if end {
		respond(h.c, s, 204, "")
	}
}
func (h *fuzzHandler) Reset(*Stream, ErrCode) {}
func (h *fuzzHandler) Writable(s *Stream)     {}

// feedFuzz feeds in to a new Conn in two parts (at split, the remainder
// carried over as an engine does) and returns the requests seen, the
// output size and the error.
func feedFuzz(in []byte, split int) (int, int, error) {
	var c Conn
	h := &fuzzHandler{c: &c}
	c.Init(nil, h)
	out := len(c.Out())
	c.ResetOut()
	var pend []byte
	var err error
	for _, part := range [][]byte{in[:split], in[split:]} {
		pend = append(pend, part...)
		var n int
		n, err = c.Feed(pend)
		pend = append(pend[:0], pend[n:]...)
		out += len(c.Out())
		c.ResetOut()
		if err != nil {
			break
		}
	}
	return h.n, out, err
}
