package h2conn

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// offsetPattern returns n bytes in which every 8-byte word holds its own
// offset (and seed), so that a region sent twice, late or out of place
// shows.
func offsetPattern(n int, seed uint64) []byte {
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.BigEndian.PutUint64(b[i:], uint64(i)^seed<<56)
	}
	return b
}

// TestH2SpliceBatchAllocs sends batches of frame headers and file regions
// through the pipe to a real socket: no allocation per batch or frame.
func TestH2SpliceBatchAllocs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, offsetPattern(1<<20, 6), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &writer{nc: nc, wakeFn: func() {}, max: 1 << 30, timeout: 5 * time.Second}
	if w.pipe = openPipe(nc.(*net.TCPConn), nil, pipeFor(256<<10)); w.pipe == nil {
		t.Fatal("no pipe")
	}
	defer w.pipe.close(nil)
	hdr := make([]byte, 9)
	batch := make([]writeItem, 0, 64)
	for off := int64(0); off < 512<<10; off += 16 << 10 {
		batch = append(batch, writeItem{b: hdr}, writeItem{f: f, off: off, n: 16 << 10})
	}
	n := testing.AllocsPerRun(50, func() {
		if err := w.spliceBatch(batch); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("%.1f allocations per batch of %d frames, want 0", n, len(batch)/2)
	}
}
