package h1

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/app/wire"
	"gale/config"
	"gale/handlers"
)

// loadWaitConn is an in-memory gnet.Conn for driving one connection's state
// machine by hand: inbound bytes are set by the test, written bytes are
// kept, and each Wake is told on woke.
type loadWaitConn struct {
	gnet.Conn // nil: any other method panics
	in        []byte
	out       []byte
	woke      chan struct{} // told of each Wake (cap 1)
}

func (m *loadWaitConn) Peek(int) ([]byte, error) { return m.in, nil }
func (m *loadWaitConn) Discard(n int) (int, error) {
	if n < 0 || n > len(m.in) {
		n = len(m.in)
	}
	m.in = m.in[n:]
	return n, nil
}
func (m *loadWaitConn) Write(b []byte) (int, error) { m.out = append(m.out, b...); return len(b), nil }
func (m *loadWaitConn) Writev(bs [][]byte) (int, error) {
	n := 0
	for _, b := range bs {
		m.out = append(m.out, b...)
		n += len(b)
	}
	return n, nil
}
func (m *loadWaitConn) OutboundBuffered() int { return 0 }
func (m *loadWaitConn) InboundBuffered() int  { return len(m.in) }
func (m *loadWaitConn) Wake(gnet.AsyncCallback) error {
	select {
	case m.woke <- struct{}{}:
	default:
	}
	return nil
}
func (m *loadWaitConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40001}
}
func (m *loadWaitConn) Context() any              { return nil }
func (m *loadWaitConn) SetContext(any)            {}
func (m *loadWaitConn) EventLoop() gnet.EventLoop { return nil }
func (m *loadWaitConn) Fd() int                   { return -1 }

// A request whose file is read off the loop is kept by the connection as
// its pending exchange, nothing behind it is parsed, and it is served once
// the load's Done woke the connection; a graceful stop that began meanwhile closes the connection
// after that response instead of dropping the request.
func TestStaticWaitForLoad(t *testing.T) {
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	if err := os.MkdirAll(site, 0o755); err != nil {
		t.Fatal(err)
	}
	mid := strings.Repeat("m", 100<<10) // over the 64 KiB a miss reads on the loop
	for name, body := range map[string]string{"mid.txt": mid, "a.txt": "a"} {
		if err := os.WriteFile(filepath.Join(site, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		// Written an hour ago, as far as the cache can tell: a file
		// modified a moment ago is always read off the loop
		// (cache.Version.Racy), and a.txt must be read on it.
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(filepath.Join(site, name), old, old); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse([]byte("listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /\n    static: {root: ./site, compress: {encodings: []}}\n"), filepath.Join(dir, "gale.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, draining := range []bool{false, true} {
		files := wire.NewFileCache(cfg, nil)
		set, err := wire.Compile(cfg, handlers.WithCache(files))
		if err != nil {
			t.Fatal(err)
		}
		s := newShared()
		s.Set.Store(set)
		mc := &loadWaitConn{woke: make(chan struct{}, 1)}
		cs := newTestConn(newTestLoop(s), mc)
		req := "GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\nGET /mid.txt HTTP/1.1\r\nHost: x\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n"
		mc.in = []byte(req)
		if a := cs.serve(); a != gnet.None {
			t.Fatalf("action %v", a)
		}
		if cs.pending == nil {
			// The load finished before serve returned (a slow loop, as
			// under the race detector), and serve resumed it at once:
			// all three are answered, in order.
			got := string(mc.out)
			if i, j := strings.Index(got, "Content-Length: 1\r\n"), strings.Index(got, "Content-Length: 102400\r\n"); i < 0 || j < i ||
				strings.Count(got, "HTTP/1.1 200") != 3 || !strings.HasSuffix(got, "\r\n\r\na") || len(mc.in) != 0 {
				t.Fatalf("answered at once, but not in order: %d bytes left, %d responses", len(mc.in), strings.Count(got, "HTTP/1.1 200"))
			}
			set.Router.Close()
			files.Close()
			continue
		}
		last := len("GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n")
		if len(mc.in) != last || !strings.HasSuffix(string(mc.out), "\r\n\r\na") ||
			string(cs.ctx.Req.Target) != "/mid.txt" || cs.ctx.Req != &cs.kept {
			t.Fatalf("waiting: %d bytes left, wrote %.300q", len(mc.in), mc.out)
		}
		// More traffic before the load finished changes nothing.
		if !cs.st.wait.Ready() {
			out := len(mc.out)
			cs.Traffic()
			if len(mc.out) != out {
				t.Fatal("wrote while waiting")
			}
		}
		if draining {
			s.Draining.Store(true)
			cs.closeAfter = true // what loop.drain does to a busy connection
		}
		select {
		case <-mc.woke:
		case <-time.After(5 * time.Second): // a failsafe
			t.Fatal("the load did not wake the connection")
		}
		mc.out = nil
		cs.Traffic()
		got := string(mc.out)
		if !strings.Contains(got, "Content-Length: 102400\r\n") || !strings.Contains(got, mid) || cs.pending != nil {
			t.Fatalf("after the wake (draining %v): %.200q", draining, got)
		}
		if draining {
			if !strings.Contains(got, "Connection: close\r\n") || strings.Count(got, "HTTP/1.1 200") != 1 || !cs.closeAfter {
				t.Fatalf("draining: %.300q", got)
			}
		} else if strings.Count(got, "HTTP/1.1 200") != 2 || len(mc.in) != 0 {
			t.Fatalf("the request behind was not served: %d left", len(mc.in))
		}
		set.Router.Close()
		files.Close()
	}
}
