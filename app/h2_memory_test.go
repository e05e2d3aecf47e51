package app

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Client is a raw HTTP/2 client connection for the tests that need to
// control windows and reading: x/net's framer over a TCP connection.
type h2Client struct {
	t  *testing.T
	c  net.Conn
	fr *http2.Framer
	id uint32

	stash map[uint32]*streamResult // streams awaitStream saw while it waited for another
}

// dialH2C opens an h2c connection with prior knowledge whose stream
// windows start at window; recvBuf, when not zero, sets SO_RCVBUF first.
func dialH2C(t *testing.T, addr string, window uint32, recvBuf int) *h2Client {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second}
	if recvBuf > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) {
				_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, recvBuf)
			})
		}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	hc := &h2Client{t: t, c: c, fr: http2.NewFramer(c, c), id: 1}
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := hc.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window}); err != nil {
		t.Fatal(err)
	}
	return hc
}

// get opens a stream for GET path and returns its id.
func (hc *h2Client) get(path string) uint32 {
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "localhost"}, {":path", path}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	id := hc.id
	hc.id += 2
	if err := hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		hc.t.Fatal(err)
	}
	return id
}

// awaitHeaders reads frames (answering SETTINGS) until n response heads
// arrived, and returns the DATA bytes seen meanwhile.
func (hc *h2Client) awaitHeaders(n int) int {
	data := 0
	for n > 0 {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			hc.t.Fatalf("reading: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = hc.fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			n--
		case *http2.DataFrame:
			data += len(f.Data())
		case *http2.GoAwayFrame, *http2.RSTStreamFrame:
			hc.t.Fatalf("unexpected %v", f)
		}
	}
	return data
}

// TestH2SlowReadersMemory opens many streams of a 64 MiB file on
// connections whose windows stay at zero, and on connections that open
// their windows wide but never read the socket: gale must hold neither the
// file nor the unsent frames in memory (the heap stays within a small
// multiple of max_buffered_output per connection).
func TestH2SlowReadersMemory(t *testing.T) {
	ts := h2Server(t, nil)
	const size = 64 << 20
	big := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	if err := os.WriteFile(filepath.Join(ts.dir, "site", "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	big = nil
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	const conns, streams = 10, 10
	var clients []*h2Client
	for i := 0; i < conns; i++ { // windows at zero: heads only
		hc := dialH2C(t, ts.plainAddr(), 0, 0)
		for j := 0; j < streams; j++ {
			hc.get("/big.bin")
		}
		if d := hc.awaitHeaders(streams); d != 0 {
			t.Fatalf("%d DATA bytes through a zero window", d)
		}
		clients = append(clients, hc)
	}
	for i := 0; i < conns; i++ { // windows wide open, socket never read
		hc := dialH2C(t, ts.plainAddr(), 1<<30, 4<<10)
		if err := hc.fr.WriteWindowUpdate(0, 1<<30); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < streams; j++ {
			hc.get("/big.bin")
		}
		clients = append(clients, hc)
	}
	// The open-window connections take what their sockets hold and stop:
	// wait until gale's output has stopped growing.
	last := outputSettled(t, ts.srv)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap grew by %d KiB with %d streams of a %d MiB file on %d connections (%d MiB written)",
		grown>>10, 2*conns*streams, size>>20, 2*conns, last>>20)
	if limit := int64(2*conns) * (2 << 20); grown > limit {
		t.Fatalf("heap grew by %d MiB, want under %d MiB", grown>>20, limit>>20)
	}
	if last > uint64(2*conns)*(16<<20) {
		t.Fatalf("%d MiB went out to clients that read nothing", last>>20)
	}
	for _, hc := range clients {
		hc.c.Close()
	}
}

// TestH2GracefulStop stops the server while a stream downloads: the
// client gets GOAWAY naming the stream as processed, the download
// finishes, the connection closes, and Stop returns within its deadline.
func TestH2GracefulStop(t *testing.T) {
	ts := h2Server(t, map[string]string{"mid.bin": string(bytes.Repeat([]byte("x"), 4<<20))})
	hc := dialH2C(t, ts.plainAddr(), 64<<10, 0)
	id := hc.get("/mid.bin")
	hc.awaitHeaders(1)
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stopped <- ts.srv.Stop(ctx)
	}()
	got, goaway := 0, false
	for {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			break // the server closed the connection
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			if f.ErrCode != http2.ErrCodeNo || f.LastStreamID != id {
				t.Fatalf("GOAWAY %v, last stream %d", f.ErrCode, f.LastStreamID)
			}
			goaway = true
		case *http2.DataFrame:
			got += len(f.Data())
			if n := uint32(len(f.Data())); n > 0 {
				_ = hc.fr.WriteWindowUpdate(0, n)
				_ = hc.fr.WriteWindowUpdate(id, n)
			}
		}
	}
	if !goaway || got != 4<<20 {
		t.Fatalf("GOAWAY %v, %d of %d body bytes", goaway, got, 4<<20)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
}
