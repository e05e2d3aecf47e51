package app

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Hostile HTTP/2 clients against the engine's resource bounds: open
// files, late cache loads, per-slot memory and the timeouts.

// h2Response is what a stream received.
type h2Response struct {
	status string
	body   []byte
	ended  bool
}

// h2Hostile runs h2Site with more YAML after it (server, cache sections)
// and files under site/ besides h2Server's.
func h2Hostile(t *testing.T, more string, files map[string]string) *tlsTestServer {
	t.Helper()
	all := map[string]string{"404.html": "not here\n", "small.txt": "0123456789"}
	for k, v := range files {
		all[k] = v
	}
	return startTLSServer(t, h2Site+more, all, nil)
}

// decodeHeaders makes the client's framer decode header blocks, so that
// reads return *http2.MetaHeadersFrame with the response's fields.
func (hc *h2Client) decodeHeaders() *h2Client {
	hc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	return hc
}

// block encodes a request header block.
func block(method, path string, extra ...[2]string) []byte {
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	fs := append([][2]string{{":method", method}, {":scheme", "http"}, {":authority", "localhost"}, {":path", path}}, extra...)
	for _, f := range fs {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return hb.Bytes()
}

// burst writes the frames fn makes in one write, so that gale reads them
// in one event.
func (hc *h2Client) burst(fn func(fr *http2.Framer)) {
	var buf bytes.Buffer
	fn(http2.NewFramer(&buf, nil))
	if _, err := hc.c.Write(buf.Bytes()); err != nil {
		hc.t.Fatal(err)
	}
}

// next returns a new stream id.
func (hc *h2Client) next() uint32 {
	id := hc.id
	hc.id += 2
	return id
}

// collect reads frames until every stream in want got a response head
// (heads) or ended (!heads), answering SETTINGS and, when credit is set,
// returning the window of every DATA frame. It fails on GOAWAY and
// RST_STREAM.
func (hc *h2Client) collect(heads, credit bool, want ...uint32) map[uint32]*h2Response {
	got := map[uint32]*h2Response{}
	for _, id := range want {
		got[id] = &h2Response{}
	}
	done := func() bool {
		for _, r := range got {
			if heads && r.status == "" || !heads && !r.ended {
				return false
			}
		}
		return true
	}
	for !done() {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			n := 0
			for _, r := range got {
				if r.status != "" {
					n++
				}
			}
			hc.t.Fatalf("reading: %v (%d of %d heads)", err, n, len(got))
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = hc.fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			if r := got[f.StreamID]; r != nil {
				r.status = f.PseudoValue("status")
				r.ended = r.ended || f.StreamEnded()
			}
		case *http2.DataFrame:
			if r := got[f.StreamID]; r != nil {
				r.body = append(r.body, f.Data()...)
				r.ended = r.ended || f.StreamEnded()
			}
			if n := uint32(len(f.Data())); credit && n > 0 {
				_ = hc.fr.WriteWindowUpdate(0, n)
				_ = hc.fr.WriteWindowUpdate(f.StreamID, n)
			}
		case *http2.GoAwayFrame, *http2.RSTStreamFrame:
			hc.t.Fatalf("unexpected %v", f)
		}
	}
	return got
}

// openFiles counts gale's (this process's) descriptors open on path.
func openFiles(t *testing.T, path string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && l == path {
			n++
		}
	}
	return n
}

// outputSettled waits until s's output counter has not moved for half a
// second (five samples 100 ms apart) and returns it. Gale announces no
// "stopped": clients that read nothing leave it nothing to do, and what
// the tests check is a bound on what it wrote, once it stopped writing.
// The sleep is the sampling interval; the 30 s are a failsafe against
// output that never stops.
func outputSettled(t *testing.T, s *Server) uint64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := uint64(0)
	for still := 0; still < 5; {
		if time.Now().After(deadline) {
			t.Fatalf("gale's output still grows after 30 s: %d bytes", last)
		}
		time.Sleep(100 * time.Millisecond)
		out := s.Stats().BytesOut
		if out == last {
			still++
		} else {
			still, last = 0, out
		}
	}
	return last
}

// awaitBudget waits until the descriptor budget holds used descriptors
// again (the connections closed and gave back what they held), polling
// the counter; it fails after a generous deadline.
func awaitBudget(t *testing.T, ts *tlsTestServer, used int64) {
	t.Helper()
	if !waitUntil(20*time.Second, func() bool { return ts.srv.sh.Budget.Snapshot().Used == used }) {
		t.Fatalf("the budget holds %d descriptors, want %d again", ts.srv.sh.Budget.Snapshot().Used, used)
	}
}

// TestH2StreamFilesCounted opens streams of a file too large for the
// cache on a connection whose windows stay shut, so that each stream
// keeps its file open: every such file is counted in the descriptor
// budget, and once the budget is spent further streams are answered 503
// instead of holding descriptors the budget does not know of (which would
// let accept meet EMFILE and end gnet's engine).
func TestH2StreamFilesCounted(t *testing.T) {
	ts := h2Hostile(t, "", map[string]string{"large.bin": strings.Repeat("L", 2<<20)})
	path := filepath.Join(ts.dir, "site", "large.bin")
	used := ts.srv.sh.Budget.Snapshot().Used
	hc := dialH2C(t, ts.plainAddr(), 0, 0).decodeHeaders()
	if f, err := hc.fr.ReadFrame(); err != nil || f.Header().Type != http2.FrameSettings {
		t.Fatalf("first frame %v, %v", f, err) // gale counted the connection before it answered
	}
	_ = hc.fr.WriteSettingsAck()
	b := ts.srv.sh.Budget.Snapshot()
	const room = 3
	ts.srv.sh.Budget.SetLimit(b.Used + room)
	defer ts.srv.sh.Budget.SetLimit(b.Limit)

	var ids []uint32
	hc.burst(func(fr *http2.Framer) {
		for i := 0; i < 10; i++ {
			id := hc.next()
			ids = append(ids, id)
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block("GET", "/large.bin"), EndStream: true, EndHeaders: true})
		}
	})
	got := hc.collect(true, false, ids...)
	ok, refused := 0, 0
	for _, id := range ids {
		switch got[id].status {
		case "200":
			ok++
		case "503":
			refused++
		default:
			t.Fatalf("stream %d: status %q", id, got[id].status)
		}
	}
	open := openFiles(t, path)
	t.Logf("%d streams 200, %d 503; %d descriptors open on the file, budget %+v", ok, refused, open, ts.srv.sh.Budget.Snapshot())
	if ok != room || refused != len(ids)-room {
		t.Fatalf("%d streams answered 200 and %d 503, want %d and %d", ok, refused, room, len(ids)-room)
	}
	if open != room {
		t.Fatalf("%d descriptors open on the file, want %d (all counted)", open, room)
	}
	hc.c.Close()
	awaitBudget(t, ts, used)
	if n := openFiles(t, path); n != 0 {
		t.Fatalf("%d descriptors still open on the file", n)
	}
}

// TestH2WriterFailureClosesFiles has streams of files too large for the
// cache finish (their last bytes queued for the writer goroutine, with
// the close of their files after them) while the client reads nothing:
// the writer's write times out, and every file the failed batch was to
// close is closed and given back to the budget.
func TestH2WriterFailureClosesFiles(t *testing.T) {
	ts := h2Hostile(t, `server:
  socket_send_buffer: 4KiB
  timeouts: {write: 1s}
cache: {max_file_bytes: 1KiB}
`, map[string]string{"big.bin": strings.Repeat("B", 2<<20), "part.bin": strings.Repeat("p", 8<<10)})
	path := filepath.Join(ts.dir, "site", "part.bin")
	used := ts.srv.sh.Budget.Snapshot().Used
	hc := dialH2C(t, ts.plainAddr(), 1<<30, 4<<10)
	hc.burst(func(fr *http2.Framer) {
		_ = fr.WriteWindowUpdate(0, 1<<30)
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: hc.next(), BlockFragment: block("GET", "/big.bin"), EndStream: true, EndHeaders: true})
		for i := 0; i < 20; i++ {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: hc.next(), BlockFragment: block("GET", "/part.bin"), EndStream: true, EndHeaders: true})
		}
	})
	// gale takes the connection and the streams' files...
	if !waitUntil(20*time.Second, func() bool { return ts.srv.sh.Budget.Snapshot().Used >= used+2 }) {
		t.Fatalf("gale holds %d descriptors, want the connection's and its files'", ts.srv.sh.Budget.Snapshot().Used-used)
	}
	// ...then, the client reading nothing, the writer's write times out
	// and gale closes the connection.
	awaitBudget(t, ts, used) // the connection, the writer and every file gave theirs back
	if n := openFiles(t, path); n != 0 {
		t.Fatalf("%d descriptors still open on part.bin after the writer failed", n)
	}
}

// TestH2LateLoadResult resets a stream while its file loads: the result
// that arrives after the reset must not answer the next stream that takes
// the same slot, which asks for another file.
func TestH2LateLoadResult(t *testing.T) {
	a, b := strings.Repeat("a", 512<<10), strings.Repeat("b", 512<<10)
	ts := h2Hostile(t, "", map[string]string{"a.bin": a, "b.bin": b})
	hc := dialH2C(t, ts.plainAddr(), 1<<20, 0).decodeHeaders()
	// Stream 1 (slot 0) waits for a.bin's load, stream 3 (slot 1) joins
	// the same load after it, and stream 1 is reset before the load ends:
	// when stream 3 is answered, the load has reported to both.
	s1, s3 := hc.next(), hc.next()
	hc.burst(func(fr *http2.Framer) {
		_ = fr.WriteWindowUpdate(0, 1<<30)
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s1, BlockFragment: block("GET", "/a.bin"), EndStream: true, EndHeaders: true})
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s3, BlockFragment: block("GET", "/a.bin"), EndStream: true, EndHeaders: true})
		_ = fr.WriteRSTStream(s1, http2.ErrCodeCancel)
	})
	if r := hc.collect(false, true, s3)[s3]; r.status != "200" || string(r.body) != a {
		t.Fatalf("stream %d: %q, %d bytes", s3, r.status, len(r.body))
	}
	// Slots 1 and 0 are free, 1 on top: stream 5 takes it and holds it
	// while its body is due, so stream 7 takes slot 0 and waits for b.bin.
	s5, s7 := hc.next(), hc.next()
	hc.burst(func(fr *http2.Framer) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s5, BlockFragment: block("POST", "/hello"), EndHeaders: true})
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s7, BlockFragment: block("GET", "/b.bin"), EndStream: true, EndHeaders: true})
		_ = fr.WriteData(s5, true, []byte("x"))
	})
	got := hc.collect(false, true, s5, s7)
	if r := got[s7]; r.status != "200" || string(r.body) != b {
		t.Fatalf("stream %d asked for b.bin: %q, %d bytes starting %q", s7, r.status, len(r.body), r.body[:min(8, len(r.body))])
	}
}

// TestH2IdleSlotsKeepLittle fills every stream slot of a connection with
// requests whose header blocks are large (each has a body, so that its
// request is copied while the body arrives): once they are answered, the
// idle connection keeps little of that memory.
func TestH2IdleSlotsKeepLittle(t *testing.T) {
	ts := h2Hostile(t, "", nil)
	hc := dialH2C(t, ts.plainAddr(), 1<<20, 0).decodeHeaders()
	round := func(extra ...[2]string) {
		var ids []uint32
		hc.burst(func(fr *http2.Framer) {
			for i := 0; i < 128; i++ {
				id := hc.next()
				ids = append(ids, id)
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block("POST", "/hello", extra...), EndHeaders: true})
			}
		})
		hc.burst(func(fr *http2.Framer) {
			for _, id := range ids {
				_ = fr.WriteData(id, true, []byte("x"))
			}
		})
		_ = hc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for id, r := range hc.collect(false, true, ids...) {
			if r.status != "200" {
				t.Fatalf("stream %d: %q", id, r.status)
			}
		}
	}
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapInuse)
	}
	round() // every slot's exchange exists
	before := heap()
	v := strings.Repeat("v", 3<<10)
	round([2]string{"x-a", v + "a"}, [2]string{"x-b", v + "b"}, [2]string{"x-c", v + "c"}, [2]string{"x-d", v + "d"})
	grown := heap() - before
	t.Logf("the idle connection keeps %d KiB more after 128 requests of 12 KiB headers", grown>>10)
	if grown > 1<<20 { // the copies alone would be 1.5 MiB
		t.Fatalf("the idle connection keeps %d KiB more after large requests, want under 1 MiB", grown>>10)
	}
	runtime.KeepAlive(hc)
}

// TestH2PingsHoldNothing sends a PING every 50 ms: PINGs are not progress,
// so an idle connection still gets its GOAWAY after timeouts.idle, and a
// connection whose stream's body never comes still ends after
// timeouts.read_body (and timeouts.idle once the stream is answered).
func TestH2PingsHoldNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out idle and body timeouts: not in -short")
	}
	ts := h2Hostile(t, "server: {timeouts: {idle: 1s, read_body: 1s}}\n", nil)
	pinging := func(hc *h2Client) (stop func()) {
		quit := make(chan struct{})
		var ping bytes.Buffer
		_ = http2.NewFramer(&ping, nil).WritePing(false, [8]byte{1})
		go func() {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-quit:
					return
				case <-tick.C:
					if _, err := hc.c.Write(ping.Bytes()); err != nil {
						return // one write, so as not to interleave with the framer's
					}
				}
			}
		}()
		return func() { close(quit) }
	}
	// readUntil reads frames until a GOAWAY (goaway) or the end of the
	// connection; the client's deadline is the failsafe.
	readUntil := func(t *testing.T, hc *h2Client, goaway bool) {
		_ = hc.c.SetReadDeadline(time.Now().Add(15 * time.Second))
		for {
			f, err := hc.fr.ReadFrame()
			if err != nil {
				if !goaway && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err)) {
					return
				}
				t.Fatalf("reading: %v", err)
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					_ = hc.fr.WriteSettingsAck()
				}
			case *http2.GoAwayFrame:
				if goaway {
					return
				}
			}
		}
	}
	t.Run("idle", func(t *testing.T) {
		hc := dialH2C(t, ts.plainAddr(), 1<<20, 0)
		defer pinging(hc)()
		start := time.Now()
		readUntil(t, hc, true)
		t.Logf("GOAWAY after %v", time.Since(start).Round(time.Millisecond))
	})
	t.Run("body", func(t *testing.T) {
		hc := dialH2C(t, ts.plainAddr(), 1<<20, 0)
		_ = hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: hc.next(), BlockFragment: block("POST", "/hello"), EndHeaders: true})
		defer pinging(hc)()
		start := time.Now()
		readUntil(t, hc, false)
		t.Logf("closed after %v", time.Since(start).Round(time.Millisecond))
	})
}

// isReset reports whether err is the connection reset a close with unread
// bytes makes.
func isReset(err error) bool { return strings.Contains(err.Error(), "connection reset") }

// TestH2UnreadResponsesBounded sends thousands of tiny HEAD requests
// (their fields indexed in the HPACK table, a few bytes each; a response
// without a body ends its stream at once, so the concurrency limit does
// not hold them back) and reads nothing: the responses gale queues for
// the client stay within server.max_buffered_output, as HTTP/1.1's do,
// however many requests arrive.
func TestH2UnreadResponsesBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of unread responses: not in -short")
	}
	ts := h2Hostile(t, "server: {socket_send_buffer: 4KiB, max_buffered_output: 64KiB}\n", nil)
	hc := dialH2C(t, ts.plainAddr(), 1<<20, 4<<10)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb) // one encoder: later blocks refer to its table
	const n = 9000
	for sent := 0; sent < n; {
		hc.burst(func(fr *http2.Framer) {
			for i := 0; i < 500; i++ {
				hb.Reset()
				for _, f := range [][2]string{{":method", "HEAD"}, {":scheme", "http"}, {":authority", "localhost"}, {":path", "/hello"}} {
					_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
				}
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: hc.next(), BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
			}
		})
		sent += 500
	}
	// gale answers what it reads and stops: wait until its output stopped
	// growing.
	last := outputSettled(t, ts.srv)
	st := ts.srv.Stats()
	t.Logf("%d requests answered, %d KiB queued for a client that reads nothing", st.H2Requests, last>>10)
	if limit := uint64(64<<10 + 64<<10); last > limit {
		t.Fatalf("%d KiB queued for a client that reads nothing, want at most %d KiB", last>>10, limit>>10)
	}
	// Once the client reads, the input gale held is served.
	for ended := 0; ended < n; {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading after %d responses: %v", ended, err)
		}
		switch f := f.(type) {
		case *http2.HeadersFrame:
			if f.StreamEnded() {
				ended++
			}
		case *http2.GoAwayFrame, *http2.RSTStreamFrame:
			t.Fatalf("unexpected %v after %d responses", f, ended)
		}
	}
}

// TestH2BodyTimeoutPerStream opens streams whose request bodies never
// come beside one whose body trickles a byte every 100 ms: the trickle
// keeps its own stream alive but not the others, which are answered 408
// after timeouts.read_body (each holds a copy of its request meanwhile).
func TestH2BodyTimeoutPerStream(t *testing.T) {
	ts := h2Hostile(t, "server: {timeouts: {read_body: 1s}}\n", nil)
	hc := dialH2C(t, ts.plainAddr(), 1<<20, 0).decodeHeaders()
	trickle := hc.next()
	var stale []uint32
	hc.burst(func(fr *http2.Framer) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: trickle, BlockFragment: block("POST", "/hello"), EndHeaders: true})
		for i := 0; i < 3; i++ {
			id := hc.next()
			stale = append(stale, id)
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block("POST", "/hello"), EndHeaders: true})
		}
	})
	quit := make(chan struct{})
	defer close(quit)
	var data bytes.Buffer
	_ = http2.NewFramer(&data, nil).WriteData(trickle, false, []byte("x"))
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				if _, err := hc.c.Write(data.Bytes()); err != nil {
					return // one write, so as not to interleave with the framer's
				}
			}
		}
	}()
	_ = hc.c.SetReadDeadline(time.Now().Add(15 * time.Second)) // the failsafe
	got := map[uint32]string{}
	for len(got) < len(stale) {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading (answered %v): %v", got, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = hc.fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID == trickle {
				t.Fatalf("the trickling stream was answered %s", f.PseudoValue("status"))
			}
			got[f.StreamID] = f.PseudoValue("status")
		case *http2.GoAwayFrame:
			t.Fatalf("unexpected %v", f)
		}
	}
	for _, id := range stale {
		if got[id] != "408" {
			t.Fatalf("stream %d: %q, want 408", id, got[id])
		}
	}
}

// TestH2HeldBodiesBounded asks for 128 distinct cached files at once on a
// connection whose windows stay shut, while the cache holds only 8 MiB:
// the bodies the streams hold are bounded per connection (an evicted
// entry's bytes live on while a stream holds them), and every stream is
// answered with its own file once the client opens its windows.
func TestH2HeldBodiesBounded(t *testing.T) {
	const n, size = 128, 512 << 10
	files := map[string]string{}
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("f%03d.bin", i)] = strings.Repeat(string(rune('a'+i%26)), size)
	}
	ts := h2Hostile(t, "cache: {max_bytes: 8MiB, max_file_bytes: 1MiB}\n", files)
	files = nil
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapInuse)
	}
	before := heap()
	hc := dialH2C(t, ts.plainAddr(), 0, 0).decodeHeaders()
	ids := map[uint32]int{}
	for i := 0; i < n; i++ { // one at a time: each load ends before the next
		id := hc.next()
		ids[id] = i
		hc.burst(func(fr *http2.Framer) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block("GET", fmt.Sprintf("/f%03d.bin", i)), EndStream: true, EndHeaders: true})
		})
		eventually(t, 10*time.Second, "the load", func() bool { return ts.srv.files.Stats().Loads >= uint64(i+1) })
	}
	hc.burst(func(fr *http2.Framer) { _ = fr.WritePing(false, [8]byte{2}) })
	heads := map[uint32]string{}
	for { // the PING's answer comes after every head gale sent
		f, err := hc.fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := f.(*http2.MetaHeadersFrame); ok {
			heads[h.StreamID] = h.PseudoValue("status")
		}
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() {
			break
		}
	}
	grown := heap() - before
	t.Logf("heap grew %d MiB with %d streams of distinct %d KiB files held (cache %d MiB)", grown>>20, n, size>>10, ts.srv.files.Stats().Bytes>>20)
	if grown > 24<<20 {
		t.Fatalf("heap grew %d MiB, want under 24 MiB (the cache's 8 MiB and a bounded share per connection)", grown>>20)
	}
	hc.burst(func(fr *http2.Framer) {
		_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
		_ = fr.WriteWindowUpdate(0, 1<<30)
	})
	var want []uint32
	for id := range ids {
		want = append(want, id)
	}
	for id, r := range hc.collect(false, true, want...) {
		i := ids[id]
		if r.status == "" {
			r.status = heads[id] // it came before the PING's answer
		}
		if r.status != "200" || len(r.body) != size || r.body[0] != byte('a'+i%26) || r.body[size-1] != byte('a'+i%26) {
			t.Fatalf("stream %d (f%03d.bin): %q, %d bytes", id, i, r.status, len(r.body))
		}
	}
}
