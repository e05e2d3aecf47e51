package app

import (
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/panjf2000/gnet/v2"

	"gale/app/wire"
	"gale/config"
)

// fakeConn is the part of gnet.Conn that serving a request uses, over an
// in-memory inbound buffer; everything written is counted and dropped.
type fakeConn struct {
	gnet.Conn // nil: any other method panics
	in        []byte
	written   int
	maxIov    int // the most buffers one Writev was given
}

func (f *fakeConn) Peek(n int) ([]byte, error) { return f.in, nil }
func (f *fakeConn) Discard(n int) (int, error) {
	if n <= 0 || n > len(f.in) {
		n = len(f.in)
	}
	f.in = f.in[n:]
	return n, nil
}
func (f *fakeConn) Write(b []byte) (int, error) { f.written += len(b); return len(b), nil }
func (f *fakeConn) Writev(bs [][]byte) (int, error) {
	f.maxIov = max(f.maxIov, len(bs))
	n := 0
	for _, b := range bs {
		n += len(b)
	}
	f.written += n
	return n, nil
}
func (f *fakeConn) OutboundBuffered() int         { return 0 }
func (f *fakeConn) InboundBuffered() int          { return len(f.in) }
func (f *fakeConn) Wake(gnet.AsyncCallback) error { return nil }
func (f *fakeConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (f *fakeConn) Context() any              { return nil }
func (f *fakeConn) EventLoop() gnet.EventLoop { return nil }
func (f *fakeConn) SetContext(any)            {}
func (f *fakeConn) Fd() int                   { return -1 }

// bareServer returns a Server that is never run, for tests that drive a
// connection through fakeConn: it logs nowhere and has no settings yet.
// compiledServer is a bareServer running the config in yamlText (its
// relative paths against dir), compiled as a reload would; cfg is that
// config.
func compiledServer(t testing.TB, yamlText, dir string) (*Server, *config.Config) {
	t.Helper()
	cfg, err := config.Parse([]byte(yamlText), dir+"/gale.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set, err := wire.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := bareServer()
	s.sh.Set.Store(set)
	return s, cfg
}

func bareServer() *Server {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.sh.Log = s.log
	return s
}
