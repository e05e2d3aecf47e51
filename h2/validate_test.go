package h2

import (
	"math/rand/v2"
	"testing"
)

// TestValidValue checks the word-at-a-time value check against the byte
// table for every byte at every position of a word, and random values.
func TestValidValue(t *testing.T) {
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 19; pos++ {
			v := []byte("abcdefghijklmnopqrs")
			v[pos] = byte(c)
			if validValue(v) != all(v, bValue) {
				t.Fatalf("byte %#x at %d", c, pos)
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100000; i++ {
		v := make([]byte, r.IntN(40))
		for j := range v {
			v[j] = byte(0x20 + r.IntN(0x5f))
			if r.IntN(20) == 0 {
				v[j] = byte(r.IntN(256))
			}
		}
		if validValue(v) != all(v, bValue) {
			t.Fatalf("%q", v)
		}
	}
}
