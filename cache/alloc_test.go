//go:build !race

package cache

import (
	"testing"
)

// TestLookupHitAllocs proves the hit path allocates nothing: lookup,
// negotiation, and reading the representation.
func TestLookupHitAllocs(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	v := c.NewView()
	p := writeFile(t, t.TempDir(), "site.css", textBody(20000), mtime0)
	load(t, v, p, "text/css", allEncodings)
	waitIdle(t, c)
	key := []byte(p)
	ae := []byte("gzip, deflate, br, zstd")
	var sink int
	allocs := testing.AllocsPerRun(1000, func() {
		e, ok := v.Lookup(key)
		if !ok {
			t.Fatal("miss")
		}
		r := e.Select(ae)
		e.Pin()
		sink += len(r.Head) + len(r.Body)
		e.Release()
	})
	if allocs != 0 {
		t.Fatalf("hit path: %v allocations, want 0", allocs)
	}
	if sink == 0 {
		t.Fatal("no bytes")
	}
}

func TestNegotiateAllocs(t *testing.T) {
	prefs := []Encoding{Zstd, Brotli, Gzip}
	all := EncodingSet(0).With(Gzip).With(Zstd).With(Brotli)
	v := []byte("gzip;q=0.8, br;q=0.9, *;q=0.1, identity;q=0.5")
	allocs := testing.AllocsPerRun(1000, func() {
		if Negotiate(v, prefs, all) != Brotli {
			t.Fatal("wrong choice")
		}
	})
	if allocs != 0 {
		t.Fatalf("Negotiate: %v allocations", allocs)
	}
}

// VariantOf and AppendVariantETag, which a revalidation runs, allocate
// nothing.
func TestVariantOfAllocs(t *testing.T) {
	base := makeETag(mtime0.UnixNano(), 20000)
	tag := append([]byte("W/"), codedETag(base, Brotli)...)
	dst := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(1000, func() {
		if enc, ok := VariantOf(tag, base); !ok || enc != Brotli {
			t.Fatal("no match")
		}
		dst = AppendVariantETag(dst[:0], base, Zstd)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations; want 0", allocs)
	}
}
