package h1

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/app/wire"
)

// fakeConn is the part of gnet.Conn that serving a request uses, over an
// in-memory inbound buffer; everything written is counted and dropped.
type fakeConn struct {
	gnet.Conn // nil: any other method panics
	in        []byte
	written   int
	maxIov    int           // the most buffers one Writev was given
	woke      chan struct{} // if set, told of each Wake (cap 1: wakes coalesce, as the loop's do)
	keep      []byte        // if not nil, Write appends here too (give it room: growing allocates)
}

func (f *fakeConn) Peek(n int) ([]byte, error) { return f.in, nil }
func (f *fakeConn) Discard(n int) (int, error) {
	if n <= 0 || n > len(f.in) {
		n = len(f.in)
	}
	f.in = f.in[n:]
	return n, nil
}
func (f *fakeConn) Write(b []byte) (int, error) {
	f.written += len(b)
	if f.keep != nil {
		f.keep = append(f.keep, b...)
	}
	return len(b), nil
}
func (f *fakeConn) Writev(bs [][]byte) (int, error) {
	f.maxIov = max(f.maxIov, len(bs))
	n := 0
	for _, b := range bs {
		n += len(b)
	}
	f.written += n
	return n, nil
}
func (f *fakeConn) OutboundBuffered() int { return 0 }
func (f *fakeConn) InboundBuffered() int  { return len(f.in) }
func (f *fakeConn) Wake(gnet.AsyncCallback) error {
	if f.woke != nil {
		select {
		case f.woke <- struct{}{}:
		default:
		}
	}
	return nil
}

// awaitWake waits for a Wake (set woke first), as the loop would before
// running the connection's Traffic; 5 s is a failsafe.
func (f *fakeConn) awaitWake(tb testing.TB) {
	tb.Helper()
	select {
	case <-f.woke:
	case <-time.After(5 * time.Second):
		tb.Fatal("no Wake within 5 s")
	}
}

func (f *fakeConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (f *fakeConn) Context() any              { return nil }
func (f *fakeConn) EventLoop() gnet.EventLoop { return nil }
func (f *fakeConn) SetContext(any)            {}
func (f *fakeConn) Fd() int                   { return -1 }

// newShared returns the process-wide state a server would give its
// loops, for tests that drive a connection through fakeConn: it logs
// nowhere and has no settings yet.
func newShared() *wire.Shared {
	return &wire.Shared{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// newTestLoop returns the HTTP/1.1 state of a loop without gnet, reading
// sh.
func newTestLoop(sh *wire.Shared) *Loop {
	wl := &wire.Loop{}
	wl.Init(sh, nil)
	return &Loop{Loop: wl}
}

// newTestConn returns the HTTP/1.1 engine of gnet connection c on loop l.
func newTestConn(l *Loop, c gnet.Conn) *Conn {
	wc := &wire.Conn{}
	wc.Init(l.Loop, c, time.Now().UnixNano())
	cs := &Conn{}
	cs.Open(wc, l)
	return cs
}
