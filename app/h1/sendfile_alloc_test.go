//go:build !race

package h1

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/app/wire"
	"gale/cache"
	"gale/config"
	"gale/handlers"
)

// sockConn is a fakeConn whose descriptor is a real socket: what the
// engine writes itself (sendfile of a cached body) reaches it, what it
// hands to gnet is counted and dropped.
type sockConn struct {
	*fakeConn
	fd int
}

func (s *sockConn) Fd() int { return s.fd }

// loopbackPair returns the server end's descriptor (non-blocking, owned
// by the returned conn) of a TCP connection on 127.0.0.1 whose client end
// a goroutine drains, counting into read.
func loopbackPair(t *testing.T, read *atomic.Int64) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cl, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close(); srv.Close() })
	go func() {
		buf := make([]byte, 256<<10)
		for {
			n, err := cl.Read(buf)
			read.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	rc, err := srv.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	if err := rc.Control(func(f uintptr) {
		fd = int(f)
		_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4<<20)
	}); err != nil {
		t.Fatal(err)
	}
	return fd
}

// TestStaticBlobHitAllocs proves that a cached body sent from the loop
// with sendfile from its sealed memfd (over cache.BlobMin, under
// server.max_buffered_output) allocates nothing either, and that its
// bytes do reach the socket that way.
func TestStaticBlobHitAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	dir := t.TempDir()
	const size = cache.BlobMin + 32<<10
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "big.bin"), old, old); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte("listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /\n    static: {root: .}\n"), filepath.Join(dir, "gale.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := wire.NewFileCache(cfg, nil)
	defer files.Close()
	set, err := wire.Compile(cfg, handlers.WithCache(files))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Router.Close()
	s := newShared()
	s.Set.Store(set)
	var read atomic.Int64
	sc := &sockConn{fakeConn: &fakeConn{woke: make(chan struct{}, 1)}, fd: loopbackPair(t, &read)}
	cs := newTestConn(newTestLoop(s), sc)
	raw := []byte("GET /big.bin HTTP/1.1\r\nHost: a\r\n\r\n")
	serve := func() {
		sc.in = raw
		if a := cs.serve(); a != gnet.None {
			t.Fatalf("action %v", a)
		}
	}
	serve() // a miss: a cache worker loads the file, the exchange waits
	for cs.pending != nil {
		sc.awaitWake(t)
		cs.Traffic() // what the worker's Wake runs
	}
	if n := testing.AllocsPerRun(100, serve); n != 0 {
		t.Fatalf("%v allocations per request, want 0", n)
	}
	// The first bodies at least fit in the socket's buffer: not all of
	// them went to gnet.
	if sc.written >= 101*size {
		t.Fatalf("%d bytes handed to gnet: no body went out with sendfile", sc.written)
	}
	t.Logf("%d bytes to gnet, %d read from the socket", sc.written, read.Load())
}
