package app

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// The HTTP/2 writer (package h2conn, writer.go) on cleartext
// connections, over real sockets: whole downloads byte for byte, a reader
// that stops, and a file truncated under the download.

// writerSite serves files too large for the cache, so that their bodies
// go through the writer as file regions.
const writerSite = "cache: {max_file_bytes: 1KiB}\n"

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

// writeSite writes b as site/name of ts and returns its path.
func writeSite(t *testing.T, ts *tlsTestServer, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(ts.dir, "site", name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readData reads frames until stream id ended or at least stop of its
// body bytes arrived (stop 0: until it ended), and returns the body so
// far, whether it ended, and the read error if the connection ended
// first.
func (hc *h2Client) readData(id uint32, stop int) (body []byte, ended bool, err error) {
	for stop == 0 || len(body) < stop {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			return body, false, err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = hc.fr.WriteSettingsAck()
			}
		case *http2.DataFrame:
			if f.StreamID == id {
				body = append(body, f.Data()...)
				if f.StreamEnded() {
					return body, true, nil
				}
			}
		case *http2.GoAwayFrame, *http2.RSTStreamFrame:
			hc.t.Fatalf("unexpected %v", f)
		}
	}
	return body, false, nil
}

// startDownload opens a stream for path on a new h2c connection whose
// windows are open wide, with a small receive buffer, and reads its
// response head.
func startDownload(t *testing.T, ts *tlsTestServer, path string) (*h2Client, uint32) {
	t.Helper()
	hc := dialH2C(t, ts.plainAddr(), 1<<30, 64<<10)
	id := hc.next()
	hc.burst(func(fr *http2.Framer) {
		_ = fr.WriteWindowUpdate(0, 1<<30)
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block("GET", path), EndStream: true, EndHeaders: true})
	})
	hc.awaitHeaders(1)
	return hc, id
}

// writerDescriptors is what a connection streaming one file through the
// writer holds in the budget: the socket, its duplicate and the file,
const writerDescriptors = 3

// TestH2WriterDownload downloads files over h2c through the writer: one
// stream with x/net's framer (the writer's duplicate and the file held in
// the descriptor budget meanwhile), then two at once on one connection with
// net/http's h2c client, every byte checked.
func TestH2WriterDownload(t *testing.T) {
	t.Parallel()
	ts := h2Hostile(t, writerSite, nil)
	big := offsetPattern(48<<20+123, 1)
	writeSite(t, ts, "big.bin", big)
	used := ts.srv.sh.Budget.Snapshot().Used

	hc, id := startDownload(t, ts, "/big.bin")
	head, _, err := hc.readData(id, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n := ts.srv.sh.Budget.Snapshot().Used - used; n != writerDescriptors {
		t.Fatalf("the downloading connection holds %d descriptors in the budget, want %d", n, writerDescriptors)
	}
	rest, ended, err := hc.readData(id, 0)
	got := append(head, rest...)
	if err != nil || !ended || !bytes.Equal(got, big) {
		t.Fatalf("%d of %d bytes (equal %v), ended %v, %v", len(got), len(big), bytes.Equal(got, big), ended, err)
	}
	hc.c.Close()
	awaitBudget(t, ts, used)

	other := offsetPattern(20<<20+5, 2)
	writeSite(t, ts, "other.bin", other)
	cl := h2Clients(t, ts)["h2c"]
	var wg sync.WaitGroup
	for path, want := range map[string][]byte{"/big.bin": big, "/other.bin": other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := cl.c.Get(cl.base + path)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil || resp.ProtoMajor != 2 || !bytes.Equal(got, want) {
				t.Errorf("%s: %d of %d bytes (equal %v), %s, %v", path, len(got), len(want), bytes.Equal(got, want), resp.Proto, err)
			}
		}()
	}
	wg.Wait()
}

// TestH2WriterSlowReader stops reading mid-file: the writer's splice to
// the socket makes no progress, fails after timeouts.write, and the
// connection, its duplicate, the file and the pipe are all given back.
func TestH2WriterSlowReader(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out timeouts.write: not in -short")
	}
	t.Parallel()
	ts := h2Hostile(t, writerSite+"server: {timeouts: {write: 1s}}\n", nil)
	writeSite(t, ts, "big.bin", offsetPattern(64<<20, 3))
	used := ts.srv.sh.Budget.Snapshot().Used
	hc, id := startDownload(t, ts, "/big.bin")
	if _, _, err := hc.readData(id, 1<<20); err != nil {
		t.Fatal(err)
	}
	if n := ts.srv.sh.Budget.Snapshot().Used - used; n != writerDescriptors {
		t.Fatalf("the downloading connection holds %d descriptors in the budget, want %d", n, writerDescriptors)
	}
	start := time.Now()
	awaitBudget(t, ts, used) // the client reads no more
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Fatalf("the connection was given up %v after the client stopped reading, before timeouts.write", d)
	}
	_ = hc.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	body, ended, err := hc.readData(id, 0)
	if err == nil || ended || os.IsTimeout(err) {
		t.Fatalf("after the write timeout: %d more bytes, ended %v, %v; want the connection closed", len(body), ended, err)
	}
}

// TestH2WriterTruncated truncates the file while it is downloaded: the
// writer finds the end of the file before the end of a frame whose header
// is queued, and the connection fails rather than sending a short frame
// or ending the stream.
func TestH2WriterTruncated(t *testing.T) {
	t.Parallel()
	ts := h2Hostile(t, writerSite, nil)
	size := 64 << 20
	want := offsetPattern(size, 4)
	path := writeSite(t, ts, "big.bin", want)
	used := ts.srv.sh.Budget.Snapshot().Used
	hc, id := startDownload(t, ts, "/big.bin")
	head, _, err := hc.readData(id, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 2<<20); err != nil {
		t.Fatal(err)
	}
	_ = hc.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	rest, ended, err := hc.readData(id, 0)
	got := append(head, rest...)
	if ended || err == nil || os.IsTimeout(err) || len(got) >= size {
		t.Fatalf("truncated file: %d of %d bytes, ended %v, %v; want the connection to fail", len(got), size, ended, err)
	}
	if !bytes.Equal(got, want[:len(got)]) {
		t.Fatalf("the %d bytes sent before the connection failed are not the file's", len(got))
	}
	t.Logf("%d bytes, then %v", len(got), err)
	awaitBudget(t, ts, used)
}
