package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// benchFiles writes n small CSS files and returns their paths.
func benchFiles(b *testing.B, n int) []string {
	dir := b.TempDir()
	paths := make([]string, n)
	for i := range paths {
		paths[i] = writeFile(b, dir, fmt.Sprintf("file-%03d.css", i), textBody(4096), mtime0)
	}
	return paths
}

// benchCache loads paths into a cache on the real clock (revalidation
// rarely due).
func benchCache(b *testing.B, paths []string) *Cache {
	c := New(Options{Revalidate: 1 << 40})
	b.Cleanup(c.Close)
	v := c.NewView()
	for _, p := range paths {
		load(b, v, p, "text/css", allEncodings)
	}
	waitIdle(b, c)
	return c
}

func BenchmarkLookupHit(b *testing.B) {
	paths := benchFiles(b, 64)
	v := benchCache(b, paths).NewView()
	keys := make([][]byte, len(paths))
	for i, p := range paths {
		keys[i] = []byte(p)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok := v.Lookup(keys[i&63]); !ok {
			b.Fatal("miss")
		}
	}
}

// BenchmarkLookupSelectHit is the whole cached-response lookup: find the
// entry, negotiate a browser's Accept-Encoding, take the head and body.
func BenchmarkLookupSelectHit(b *testing.B) {
	paths := benchFiles(b, 64)
	v := benchCache(b, paths).NewView()
	keys := make([][]byte, len(paths))
	for i, p := range paths {
		keys[i] = []byte(p)
	}
	ae := []byte("gzip, deflate, br, zstd")
	var n int
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		e, _ := v.Lookup(keys[i&63])
		r := e.Select(ae)
		n += len(r.Head) + len(r.Body)
	}
	_ = n
}

// BenchmarkLookupHitParallel: one view per goroutine, as per event loop.
func BenchmarkLookupHitParallel(b *testing.B) {
	paths := benchFiles(b, 64)
	c := benchCache(b, paths)
	keys := make([][]byte, len(paths))
	for i, p := range paths {
		keys[i] = []byte(p)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		v := c.NewView()
		for i := 0; pb.Next(); i++ {
			if _, ok := v.Lookup(keys[i&63]); !ok {
				panic("miss")
			}
		}
	})
}

// BenchmarkBaselineRWMutexMapParallel is the shared-map alternative to
// views: one map behind a sync.RWMutex, read-locked per lookup.
func BenchmarkBaselineRWMutexMapParallel(b *testing.B) {
	paths := benchFiles(b, 64)
	c := benchCache(b, paths)
	var mu sync.RWMutex
	m := make(map[string]*Entry)
	keys := make([][]byte, len(paths))
	for i, p := range paths {
		keys[i] = []byte(p)
		e, _ := c.NewView().Lookup(keys[i])
		m[p] = e
	}
	var hits atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			mu.RLock()
			e := m[string(keys[i&63])]
			mu.RUnlock()
			if e == nil {
				panic("miss")
			}
		}
		hits.Add(1)
	})
}

// BenchmarkBaselineSyncMapParallel: sync.Map with a string key (boxed).
func BenchmarkBaselineSyncMapParallel(b *testing.B) {
	paths := benchFiles(b, 64)
	c := benchCache(b, paths)
	var m sync.Map
	keys := make([][]byte, len(paths))
	for i, p := range paths {
		keys[i] = []byte(p)
		e, _ := c.NewView().Lookup(keys[i])
		m.Store(p, e)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			if _, ok := m.Load(string(keys[i&63])); !ok {
				panic("miss")
			}
		}
	})
}

// BenchmarkBaselineOpenRead is what serving without the cache costs per
// request: open, fstat, read 4 KiB, close.
func BenchmarkBaselineOpenRead(b *testing.B) {
	paths := benchFiles(b, 64)
	buf := make([]byte, 8192)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		f, err := os.Open(paths[i&63])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Stat(); err != nil {
			b.Fatal(err)
		}
		if _, err := f.Read(buf); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkRevalidateStat is the cost of a due revalidation (one stat).
func BenchmarkRevalidateStat(b *testing.B) {
	paths := benchFiles(b, 1)
	c := New(Options{Revalidate: -1})
	b.Cleanup(c.Close)
	v := c.NewView()
	load(b, v, paths[0], "text/css", nil)
	key := []byte(paths[0])
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, ok := v.Lookup(key); !ok {
			b.Fatal("miss")
		}
	}
}

func BenchmarkNegotiate(b *testing.B) {
	prefs := []Encoding{Zstd, Brotli, Gzip}
	all := EncodingSet(0).With(Gzip).With(Zstd).With(Brotli)
	v := []byte("gzip, deflate, br, zstd")
	b.ReportAllocs()
	for b.Loop() {
		Negotiate(v, prefs, all)
	}
}

// BenchmarkCompress measures one version's compression work on a worker
// (all three codings) for a 256 KiB text file.
func BenchmarkCompress(b *testing.B) {
	body := textBody(256 << 10)
	for _, enc := range []Encoding{Gzip, Zstd, Brotli} {
		b.Run(enc.String(), func(b *testing.B) {
			w := &worker{}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			var out []byte
			for b.Loop() {
				out = w.compress(enc, body)
			}
			b.ReportMetric(float64(len(out))/float64(len(body)), "ratio")
		})
	}
}

var _ = filepath.Join
