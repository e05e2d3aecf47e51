package tlsrec

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestFramerHandsOneRecord feeds a stream of records in random pieces
// into reads of random sizes: no read crosses the end of a record, and
// the bytes come out as they went in.
func TestFramerHandsOneRecord(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var stream []byte
	var ends []int // offsets where records end
	for range 200 {
		n := rng.IntN(3000)
		if rng.IntN(10) == 0 {
			n = 0
		}
		stream = append(stream, 23, 3, 3, byte(n>>8), byte(n))
		for range n {
			stream = append(stream, byte(rng.Uint32()))
		}
		ends = append(ends, len(stream))
	}
	var f Framer
	var out []byte
	for in := stream; len(in) > 0; {
		piece := in[:min(len(in), 1+rng.IntN(5000))]
		for len(piece) > 0 {
			p := make([]byte, 1+rng.IntN(4000))
			n := f.Hand(p, piece)
			if n == 0 {
				t.Fatal("a read handed nothing")
			}
			start := len(out)
			out = append(out, p[:n]...)
			for _, e := range ends {
				if e > start && e < len(out) {
					t.Fatalf("a read of %d..%d crosses the record end at %d", start, len(out), e)
				}
			}
			piece, in = piece[n:], in[n:]
		}
	}
	if !bytes.Equal(out, stream) {
		t.Fatal("the bytes changed")
	}
}
