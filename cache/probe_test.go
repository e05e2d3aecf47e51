package cache

import (
	"bytes"
	"testing"
)

// A sidecar is read while the file is loaded, so the load's own caller
// can already serve it; sidecars over the load's SyncMax, and on-the-fly
// compression of codings without one, are left to a worker and published
// together with the sidecars read first.
func TestSidecarsReadWithTheLoad(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	v := c.NewView()
	dir := t.TempDir()
	body := textBody(20000)
	p := writeFile(t, dir, "app.js", body, mtime0)
	gz := []byte("pretend gzip bytes")
	writeFile(t, dir, "app.js.gz", gz, mtime0)
	e, err := v.Load(&Request{Key: []byte(p), ContentType: "text/javascript", Profile: allEncodings, SyncMax: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if r := e.Select([]byte("gzip")); r.Encoding != Gzip || !bytes.Equal(r.Body, gz) {
		t.Fatalf("first Select(gzip) = %v %q, want the sidecar at once", r.Encoding, r.Body)
	}
	waitIdle(t, c)
	if got := e.Encodings(); got != EncodingSet(0).With(Gzip).With(Zstd).With(Brotli) {
		t.Fatalf("Encodings = %b, want the sidecar and two compressed codings", got)
	}
	if !bytes.Equal(e.Rep(Gzip).Body, gz) {
		t.Fatal("the gzip sidecar was replaced")
	}
	if s := c.Stats(); s.Sidecars != 1 || s.Compressions != [numEncodings]uint64{0, 0, 1, 1} {
		t.Fatalf("sidecars %d compressions %v", s.Sidecars, s.Compressions)
	}
	if s := c.Stats(); s.Bytes != e.charge.Load() {
		t.Fatalf("charged %d, entry %d", s.Bytes, e.charge.Load())
	}

	// A sidecar larger than SyncMax is read by a worker (here next to a
	// file too large to hold, whose load reads no body).
	c2, _ := newTestCache(t, Options{MaxFileBytes: 32000})
	v2 := c2.NewView()
	p2 := writeFile(t, dir, "big.css", textBody(40000), mtime0)
	side := bytes.Repeat([]byte("z"), 3000)
	writeFile(t, dir, "big.css.br", side, mtime0)
	e2, err := v2.Load(&Request{Key: []byte(p2), ContentType: "text/css", Profile: &Profile{Encodings: []Encoding{Brotli}}, SyncMax: 2000})
	if err != nil || e2.Kind != KindLarge {
		t.Fatalf("Load = %v, %v", e2, err)
	}
	waitIdle(t, c2)
	if r := e2.Select([]byte("br")); r.Encoding != Brotli || !bytes.Equal(r.Body, side) {
		t.Fatal("a sidecar over SyncMax was not read by a worker")
	}
	if r := e2.Select(nil); r.Body != nil {
		t.Fatal("a large file's identity is in memory")
	}
}
