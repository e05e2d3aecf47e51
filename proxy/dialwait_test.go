package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fullBacklog is a listener on 127.0.0.1 whose accept queue is full, so
// that connecting to it hangs (the kernel drops SYNs and the client
// retransmits) until serve starts accepting.
type fullBacklog struct {
	ln     net.Listener
	filler net.Conn
	once   sync.Once
}

func newFullBacklog(t *testing.T) *fullBacklog {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil { // one connection fills the queue
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "backlog")
	ln, err := net.FileListener(f)
	if err != nil {
		t.Fatal(err)
	}
	b := &fullBacklog{ln: ln}
	if b.filler, err = net.Dial("tcp", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); f.Close(); b.filler.Close() })
	// The dial returns before the listener has the filler's ACK: wait
	// until the filler is in the accept queue (for a listening socket,
	// TCP_INFO's unacked is the queue's length), or the next connection
	// might still get in.
	eventually(t, 5*time.Second, "the accept queue to fill", func() bool {
		info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		return err == nil && info.Unacked >= 1
	})
	return b
}

func (b *fullBacklog) addr() string { return b.ln.Addr().String() }

// connecting reports whether a connection to the listener waits in
// SYN_SENT (its SYN dropped, to be sent again), from /proc/net/tcp.
func (b *fullBacklog) connecting() bool {
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return false
	}
	port := fmt.Sprintf(":%04X", b.ln.Addr().(*net.TCPAddr).Port)
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[2], port) && f[3] == "02" {
			return true
		}
	}
	return false
}

// serve starts accepting (the filler first) with h.
func (b *fullBacklog) serve(h http.HandlerFunc) {
	b.once.Do(func() { go http.Serve(b.ln, h) })
}

// countBody answers with the number of body bytes received, after
// checking they follow pattern.
func countBody(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	if bad := checkPattern(body, 0); bad >= 0 {
		http.Error(w, "wrong byte at "+strconv.FormatInt(bad, 10), 400)
		return
	}
	io.WriteString(w, strconv.Itoa(len(body)))
}

// upload sends a POST of size pattern bytes (chunked or with a length)
// followed by extra bytes, and reports on sent once the last byte was
// written (gale reads what arrives at once, gnet cannot pause).
func upload(t *testing.T, addr string, size int, chunked bool, extra int) (net.Conn, <-chan error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	sent := make(chan error, 1)
	go func() {
		body := make([]byte, size)
		pattern(body, 0)
		var err error
		if chunked {
			_, err = io.WriteString(c, "POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
			for off := 0; off < size && err == nil; off += 64 << 10 {
				piece := body[off:min(off+64<<10, size)]
				_, err = fmt.Fprintf(c, "%x\r\n%s\r\n", len(piece), piece)
			}
			if err == nil {
				_, err = io.WriteString(c, "0\r\n\r\n")
			}
		} else {
			_, err = fmt.Fprintf(c, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n", size)
			if err == nil {
				_, err = c.Write(body)
			}
		}
		if err == nil && extra > 0 {
			_, err = c.Write(make([]byte, extra))
		}
		sent <- err
	}()
	return c, sent
}

// TestUploadWhileDialing sends uploads larger than MaxPendingInput while
// gale is still connecting to the upstream: the body waits, and goes up
// once the upstream accepts.
func TestUploadWhileDialing(t *testing.T) {
	if testing.Short() {
		t.Skip("uploads waiting for slow connects: not in -short")
	}
	for _, c := range []struct {
		size    int
		chunked bool
	}{{2 << 20, false}, {8 << 20, false}, {2 << 20, true}, {8 << 20, true}} {
		name := fmt.Sprintf("%d MiB", c.size>>20)
		if c.chunked {
			name += " chunked"
		}
		t.Run(name, func(t *testing.T) {
			up := newFullBacklog(t)
			g := startGale(t, proxyRoute(up.addr())+"      timeouts: {connect: 20s}\n")
			conn, sent := upload(t, g.addr, c.size, c.chunked, 0)
			if err := <-sent; err != nil {
				t.Fatalf("upload: %v", err)
			}
			eventually(t, 5*time.Second, "the dial to wait", up.connecting)
			up.serve(countBody)
			conn.SetReadDeadline(time.Now().Add(15 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no response: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(body) != strconv.Itoa(c.size) {
				t.Errorf("status %d body %q, want 200 %d", resp.StatusCode, body, c.size)
			}
		})
	}
}

// TestUploadDialTimeout sends uploads larger than MaxPendingInput to an
// upstream that never accepts: the answer is a 504 once the connect
// timeout passed, not a reset.
func TestUploadDialTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out connect timeouts: not in -short")
	}
	for _, size := range []int{2 << 20, 8 << 20} {
		t.Run(fmt.Sprintf("%d MiB", size>>20), func(t *testing.T) {
			up := newFullBacklog(t)
			g := startGale(t, proxyRoute(up.addr())+"      timeouts: {connect: 1s}\n")
			conn, sent := upload(t, g.addr, size, false, 0)
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no response: %v", err)
			}
			io.ReadAll(resp.Body)
			if resp.StatusCode != 504 || !resp.Close {
				t.Errorf("status %d close %v, want 504 and close", resp.StatusCode, resp.Close)
			}
			if err := <-sent; err != nil {
				t.Errorf("upload: %v (the connection must linger while the body is discarded)", err)
			}
		})
	}
}

// TestPipelinedFloodWhileDialing sends bytes beyond a request's declared
// body while the upstream is still being dialed: past MaxPendingInput of
// them the client is cut off, long before the connect timeout.
func TestPipelinedFloodWhileDialing(t *testing.T) {
	for _, c := range []struct {
		name  string
		size  int
		extra int
	}{{"small body", 1000, 2 << 20}, {"large body", 4 << 20, 2 << 20}} {
		t.Run(c.name, func(t *testing.T) {
			up := newFullBacklog(t)
			g := startGale(t, proxyRoute(up.addr())+"      timeouts: {connect: 30s}\n")
			conn, _ := upload(t, g.addr, c.size, false, c.extra)
			if !readToEnd(conn, 10*time.Second) {
				t.Fatal("the connection is still open")
			}
			if s := g.srv.ProxyStats(); s.Errors != 0 || s.Timeouts != 0 {
				t.Errorf("errors %d timeouts %d: the connect timeout should not have come", s.Errors, s.Timeouts)
			}
		})
	}
}

// TestChunkedFramingBound sends a chunked body whose framing dwarfs its
// payload (one byte per chunk, sizes padded with zeros), while the
// upstream is being dialed and while it is reading: past limits.body_bytes
// plus MaxPendingInput of raw bytes the answer is 413, then close.
func TestChunkedFramingBound(t *testing.T) {
	for _, dialing := range []bool{true, false} {
		name := "upstream reading"
		if dialing {
			name = "while dialing"
		}
		t.Run(name, func(t *testing.T) {
			var to string
			if dialing {
				to = newFullBacklog(t).addr()
			} else {
				to = newUpstream(t, countBody).hostport()
			}
			g := startGale(t, proxyRoute(to)+"      timeouts: {connect: 30s}\nserver: {event_loops: 1, limits: {body_bytes: 1MiB}}\n")
			conn := g.dial()
			go func() {
				io.WriteString(conn.c, "POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
				chunk := []byte("0000000000000001\r\nx\r\n")
				buf := make([]byte, 0, 64<<10)
				for len(buf)+len(chunk) <= cap(buf) {
					buf = append(buf, chunk...)
				}
				for sent := 0; sent < 4<<20; sent += len(buf) {
					if _, err := conn.c.Write(buf); err != nil {
						return
					}
				}
			}()
			resp, _ := conn.response("POST")
			if resp.StatusCode != 413 || !resp.Close {
				t.Errorf("status %d close %v, want 413 and close", resp.StatusCode, resp.Close)
			}
		})
	}
}
