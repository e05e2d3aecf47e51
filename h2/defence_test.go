package h2

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"gale/codec"
	"gale/h2/hpack"

	"golang.org/x/net/http2"
)

// Each attack is fed whole to a Conn; the tests measure what it cost: the
// frames the Conn handled before it stopped, the Handler calls, the size of
// Out, the heap. Every attack ends with GOAWAY ENHANCE_YOUR_CALM unless
// said otherwise.

// attack feeds the bytes the client wrote and returns the frames the Conn
// wrote.
func attack(t *testing.T, cl *client) []frame {
	t.Helper()
	cl.flush()
	out := cl.in.Len()
	fs := cl.frames()
	t.Logf("input %d bytes, %d frames handled, %d Handler calls, output %d bytes in %d frames",
		cl.fed, cl.c.nframes, len(cl.h.events), out, len(fs))
	return fs
}

// wantCalm checks that the attack ended in GOAWAY ENHANCE_YOUR_CALM after
// at most maxFrames frames, with at most maxOut bytes of output.
func wantCalm(t *testing.T, cl *client, fs []frame, maxFrames uint64, maxOut int) {
	t.Helper()
	g := goAway(t, fs)
	if g.code != http2.ErrCodeEnhanceYourCalm || cl.err == nil {
		t.Fatalf("GOAWAY %v, err %v", g.code, cl.err)
	}
	if cl.c.nframes > maxFrames {
		t.Errorf("%d frames handled; want at most %d", cl.c.nframes, maxFrames)
	}
	out := 0
	for _, f := range fs {
		out += FrameHeaderLen + len(f.data)
	}
	if rs := len(find(fs, http2.FrameRSTStream)); rs*13 > maxOut {
		t.Errorf("%d RST_STREAM frames", rs)
	}
	if len(fs)*FrameHeaderLen > maxOut+FrameHeaderLen*8 {
		t.Errorf("%d frames of output", len(fs))
	}
}

// resetBudget is the default reset budget: max(2*128, 100).
const resetBudget = 2 * DefaultMaxConcurrentStreams

// TestRapidReset (CVE-2023-44487): streams opened and reset at once, in
// a loop. The Handler sees no more requests than the reset budget.
func TestRapidReset(t *testing.T) {
	for _, spelling := range []string{"RST_STREAM CANCEL", "RST_STREAM NO_ERROR", "RST after a DATA frame"} {
		cl := newClient(t, nil)
		cl.flush()
		cl.frames()
		for i := 0; i < 20000; i++ {
			id := uint32(2*i + 1)
			switch spelling {
			case "RST_STREAM CANCEL":
				cl.get(id, "/")
				cl.fr.WriteRSTStream(id, http2.ErrCodeCancel)
			case "RST_STREAM NO_ERROR":
				cl.headers(id, false, get...)
				cl.fr.WriteRSTStream(id, http2.ErrCodeNo)
			default:
				cl.headers(id, false, get...)
				cl.fr.WriteData(id, false, []byte("x"))
				cl.fr.WriteRSTStream(id, http2.ErrCodeCancel)
			}
		}
		fs := attack(t, cl)
		wantCalm(t, cl, fs, 3*resetBudget+8, 1024)
		if n := cl.h.count("request"); n > resetBudget+1 {
			t.Errorf("%s: %d requests reached the Handler", spelling, n)
		}
	}
}

// TestRapidResetRefilled: streams that complete normally refill the
// budget, so a client that cancels one stream in five is never cut off.
func TestRapidResetRefilled(t *testing.T) {
	cl := newClient(t, nil)
	cl.h.onRequest = func(s *Stream, req *codec.Request) {
		if req.Path[1] == 'k' {
			respond(cl.c, s, 200, "")
		}
	}
	for i := 0; i < 5000; i++ {
		id := uint32(2*i + 1)
		if i%(resetCost+1) != 0 {
			cl.get(id, "/keep")
		} else {
			cl.get(id, "/cancel")
			cl.fr.WriteRSTStream(id, http2.ErrCodeCancel)
		}
	}
	cl.flush()
	if cl.err != nil || cl.h.count("request") != 5000 {
		t.Fatalf("err %v, %d requests", cl.err, cl.h.count("request"))
	}
	if n := cl.c.Resets(); n != 5000/(resetCost+1) {
		t.Errorf("Resets %d, want %d", n, 5000/(resetCost+1))
	}
}

// TestRapidResetCheapRefill: a client that finishes one cheap stream for
// every stream it resets does not refill the budget as fast as it drains
// it: it is cut off after a bounded number of resets.
func TestRapidResetCheapRefill(t *testing.T) {
	cl := newClient(t, nil)
	cl.h.onRequest = func(s *Stream, req *codec.Request) {
		if req.Path[1] == 'k' {
			respond(cl.c, s, 200, "")
		}
	}
	cl.flush()
	cl.frames()
	for i := 0; i < 10000; i++ {
		id := uint32(2*i + 1)
		if i%2 == 0 {
			cl.get(id, "/keep")
		} else {
			cl.get(id, "/cancel")
			cl.fr.WriteRSTStream(id, http2.ErrCodeCancel)
		}
	}
	fs := attack(t, cl)
	if g := goAway(t, fs); g.code != http2.ErrCodeEnhanceYourCalm {
		t.Fatalf("GOAWAY %v", g.code)
	}
	// resetCost*budget quarters, drained by 3 for each pair.
	if n, most := cl.c.Resets(), uint64(resetCost*resetBudget/(resetCost-1)+1); n > most {
		t.Errorf("%d resets before the connection was cut off; want at most %d", n, most)
	}
}

// TestMadeYouReset (CVE-2025-8671): frames that make the server reset a
// stream, in several spellings, each in a loop. The resets we send are
// bounded by the same budget.
func TestMadeYouReset(t *testing.T) {
	spellings := map[string]func(cl *client, id uint32){
		"WINDOW_UPDATE 0": func(cl *client, id uint32) {
			cl.headers(id, false, get...)
			cl.raw(http2.FrameWindowUpdate, 0, id, make([]byte, 4))
		},
		"window overflow": func(cl *client, id uint32) {
			cl.headers(id, false, get...)
			cl.fr.WriteWindowUpdate(id, 1<<31-1)
		},
		"malformed request": func(cl *client, id uint32) { cl.headers(id, true, with("Upper", "x")...) },
		"DATA on a closed stream": func(cl *client, id uint32) {
			cl.get(id, "/")
			cl.fr.WriteData(id, false, []byte("x"))
		},
		"content-length mismatch": func(cl *client, id uint32) {
			cl.headers(id, false, with("content-length", "1")...)
			cl.fr.WriteData(id, false, []byte("xx"))
		},
		"PRIORITY self-dependency": func(cl *client, id uint32) { cl.fr.WritePriority(id, http2.PriorityParam{StreamDep: id}) },
		"trailers without END_STREAM": func(cl *client, id uint32) {
			cl.headers(id, false, get...)
			cl.headers(id, false, "x", "y")
		},
	}
	for name, write := range spellings {
		cl := newClient(t, nil)
		completed := 0
		cl.h.onRequest = func(s *Stream, req *codec.Request) {
			if !s.BodyFollows {
				respond(cl.c, s, 200, "")
				completed++
			}
		}
		cl.flush()
		cl.frames()
		for i := 0; i < 10000; i++ {
			write(cl, uint32(2*i+1))
		}
		fs := attack(t, cl)
		// A stream that completed normally refills the budget by one.
		if rs := len(find(fs, http2.FrameRSTStream)); rs > resetBudget+1+completed {
			t.Errorf("%s: %d RST_STREAM frames sent, %d streams completed", name, rs, completed)
		}
		if g := goAway(t, fs); g.code != http2.ErrCodeEnhanceYourCalm {
			t.Errorf("%s: GOAWAY %v", name, g.code)
		}
	}
}

// TestRefusedStreamFlood: streams opened past MaxConcurrentStreams and
// never closed are refused, and the refusals are bounded too.
func TestRefusedStreamFlood(t *testing.T) {
	cl := newClient(t, nil)
	cl.flush()
	cl.frames()
	for i := 0; i < 10000; i++ {
		cl.headers(uint32(2*i+1), false, get...)
	}
	fs := attack(t, cl)
	wantCalm(t, cl, fs, DefaultMaxConcurrentStreams+resetBudget+8, 16<<10)
	if n := cl.h.count("request"); n != DefaultMaxConcurrentStreams {
		t.Errorf("%d requests", n)
	}
}

// TestControlFloods: frames without progress, each kind in a loop of
// 100000: the Conn stops after its idle budget, and its output (ACKs) is
// bounded by it.
func TestControlFloods(t *testing.T) {
	floods := map[string]func(cl *client){
		"SETTINGS":             func(cl *client) { cl.fr.WriteSettings() },
		"SETTINGS with values": func(cl *client) { cl.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1}) },
		"PING":                 func(cl *client) { cl.fr.WritePing(false, [8]byte{}) },
		"PING ACK":             func(cl *client) { cl.fr.WritePing(true, [8]byte{}) },
		"SETTINGS ACK":         func(cl *client) { cl.fr.WriteSettingsAck() },
		"empty DATA":           func(cl *client) { cl.fr.WriteData(1, false, nil) },
		"WINDOW_UPDATE conn":   func(cl *client) { cl.fr.WriteWindowUpdate(0, 1) },
		"WINDOW_UPDATE stream": func(cl *client) { cl.fr.WriteWindowUpdate(1, 1) },
		"PRIORITY":             func(cl *client) { cl.fr.WritePriority(3, http2.PriorityParam{StreamDep: 1}) },
		"unknown type":         func(cl *client) { cl.raw(0x42, 0, 0, nil) },
		"RST on closed stream": func(cl *client) { cl.fr.WriteRSTStream(1, http2.ErrCodeCancel) },
		"padded empty DATA":    func(cl *client) { cl.fr.WriteDataPadded(1, false, nil, make([]byte, 10)) },
	}
	for name, write := range floods {
		cl := newClient(t, nil)
		cl.h.consume = true
		cl.flush()
		cl.frames()
		cl.headers(1, false, get...)
		if name == "RST on closed stream" {
			cl.fr.WriteRSTStream(1, http2.ErrCodeCancel)
		}
		for i := 0; i < 100000; i++ {
			write(cl)
		}
		fs := attack(t, cl)
		wantCalm(t, cl, fs, idleBudget+8, (idleBudget+8)*17)
		if len(fs) > idleBudget+8 {
			t.Errorf("%s: %d frames of output", name, len(fs))
		}
	}
}

// TestControlBacklog: control frames the peer makes us queue while our
// output is not leaving are bounded by SetBacklog, well before the idle
// budget.
func TestControlBacklog(t *testing.T) {
	cl := newClient(t, nil)
	cl.flush()
	cl.frames()
	cl.c.SetBacklog(1 << 20) // a client that does not read
	for i := 0; i < 500; i++ {
		cl.fr.WritePing(false, [8]byte{byte(i)})
	}
	fs := attack(t, cl)
	wantCalm(t, cl, fs, maxControlOver+8, (maxControlOver+8)*17)
	// The same pings with the output drained are fine.
	cl = newClient(t, nil)
	for i := 0; i < 500; i++ {
		cl.fr.WritePing(false, [8]byte{byte(i)})
	}
	cl.flush()
	if cl.err != nil {
		t.Fatal(cl.err)
	}
}

// TestContinuationFlood (CVE-2024-27316): a header block that never ends,
// in large and in empty CONTINUATION frames. The gathered block stays
// within its bound and the Conn stops.
func TestContinuationFlood(t *testing.T) {
	for _, size := range []int{16384, 1000, 1, 0} {
		cl := newClient(t, nil)
		cl.flush()
		cl.frames()
		cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: cl.block(get...)})
		frag := bytes.Repeat([]byte{0x82}, size) // indexed :method GET
		n := 200000
		if size > 0 {
			n = min(100<<20/size/10, 200000)
		}
		for i := 0; i < n; i++ {
			cl.fr.WriteContinuation(1, false, frag)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		fs := attack(t, cl)
		runtime.ReadMemStats(&after)
		wantCalm(t, cl, fs, min(uint64(2*DefaultMaxHeaderListSize+blockSlack)/uint64(max(size, 1)), idleBudget)+8, 256)
		if c := cap(cl.c.hdrBuf); c > 2*(2*DefaultMaxHeaderListSize+blockSlack) {
			t.Errorf("size %d: header buffer grew to %d bytes", size, c)
		}
		if d := int64(after.TotalAlloc - before.TotalAlloc); d > 1<<20 {
			t.Errorf("size %d: %d bytes allocated", size, d)
		}
		if cl.h.count("request") != 0 {
			t.Errorf("size %d: a request reached the Handler", size)
		}
	}
}

// hpackBomb is a header block of a GET whose one literal (a 4000-byte
// value added to the dynamic table) is then referenced n times: a few
// bytes that decode to n*4 KB (RFC 7541 section 4.1 accounting).
func hpackBomb(n int) []byte {
	b := []byte{0x82, 0x87, 0x84, 0x41, 0x01, 'a'} // GET, https, /, :authority "a"
	v := bytes.Repeat([]byte("b"), 4000)
	b = append(b, 0x40, 0x01, 'x', 0x7f, 0x80|(4000-127)%128, (4000-127)/128)
	b = append(b, v...)
	for i := 0; i < n; i++ {
		b = append(b, 0x80|62) // the newest dynamic entry, "x: bbbb..."
	}
	return b
}

// TestHPACKBomb: the decoded list is bounded by MaxHeaderListSize; the
// request reaches the Handler with TooLarge set (the engine answers 431)
// and the connection goes on.
func TestHPACKBomb(t *testing.T) {
	cl := newClient(t, nil)
	var large, keepAlive bool
	cl.h.onRequest = func(s *Stream, req *codec.Request) {
		large = s.TooLarge
		n := 0
		for _, h := range req.Headers {
			n += len(h.Name) + len(h.Value) + 32
		}
		keepAlive = n <= DefaultMaxHeaderListSize && string(req.Method) == "GET" && string(req.Path) == "/"
		respond(cl.c, s, 431, "")
	}
	block := hpackBomb(16000) // 64 MB decoded
	frags := [][]byte{block[:16000], block[16000:]}
	cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: frags[0], EndStream: true})
	cl.fr.WriteContinuation(1, true, frags[1])
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cl.flush()
	runtime.ReadMemStats(&after)
	if cl.err != nil || !large || !keepAlive {
		t.Fatalf("err %v, TooLarge %v, request view within the limit %v", cl.err, large, keepAlive)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Errorf("%d bytes allocated to decode", d)
	}
	cl.get(3, "/next")
	cl.flush()
	if cl.err != nil || cl.h.count("request") != 2 {
		t.Fatalf("connection unusable after the bomb: %v", cl.err)
	}
}

// TestHeaderListTooLargePseudo: when even the pseudo-header fields do not
// fit, the Conn answers 431 itself.
func TestHeaderListTooLargePseudo(t *testing.T) {
	cl := newClient(t, &Config{MaxHeaderListSize: 100})
	cl.headers(1, true, ":method", "GET", ":scheme", "https", ":authority", "a", ":path", "/"+string(bytes.Repeat([]byte("p"), 200)))
	cl.flush()
	hs := find(cl.frames(), http2.FrameHeaders)
	if cl.err != nil || len(hs) != 1 || hs[0].fields[":status"] != "431" || cl.h.count("request") != 0 {
		t.Fatalf("err %v, headers %v", cl.err, hs)
	}
}

// TestBodyTooLarge: a body over MaxBodyBytes is answered 413 and reset;
// the engine is told by Handler.Reset.
func TestBodyTooLarge(t *testing.T) {
	cl := newClient(t, &Config{MaxBodyBytes: 1000})
	cl.h.consume = true
	cl.headers(1, false, ":method", "POST", ":scheme", "https", ":authority", "a", ":path", "/")
	cl.fr.WriteData(1, false, make([]byte, 600))
	cl.fr.WriteData(1, false, make([]byte, 600))
	cl.fr.WriteData(1, false, make([]byte, 600))
	cl.flush()
	fs := cl.frames()
	hs, rs := find(fs, http2.FrameHeaders), find(fs, http2.FrameRSTStream)
	if cl.err != nil || len(hs) != 1 || hs[0].fields[":status"] != "413" || len(rs) != 1 || rs[0].code != http2.ErrCodeNo {
		t.Fatalf("err %v, frames %v", cl.err, kinds(fs))
	}
	if cl.h.count("reset") != 1 || cl.h.count("data") != 1 || cl.c.Streams() != 0 {
		t.Fatalf("events %v", cl.h.events)
	}
}

// TestWindowUpdatesAckingSmallFrames: a client whose stream window lets
// only 100-byte DATA frames through, and that returns credit for every
// frame on the stream and on the connection (two WINDOW_UPDATEs per 100
// bytes, far more than 4 KiB of DATA refills), downloads a body of 20
// times the idle budget's frames without being cut off; the same updates
// with no DATA in between are a flood.
func TestWindowUpdatesAckingSmallFrames(t *testing.T) {
	const frame, total = 100, 2 * idleBudget * 10 * 100
	cl := newClient(t, nil, http2.Setting{ID: http2.SettingInitialWindowSize, Val: frame})
	var st *Stream
	cl.h.onRequest = func(s *Stream, _ *codec.Request) {
		st = s
		cl.c.WriteHeaders(s, hpack.AppendStatus(nil, 200), false)
	}
	cl.flush()
	cl.frames()
	cl.get(1, "/")
	cl.flush()
	body := bytes.Repeat([]byte("x"), frame)
	sent := 0
	for sent < total {
		n := cl.c.WriteData(st, body, sent+frame == total)
		if n != frame {
			t.Fatalf("WriteData took %d of %d bytes after %d", n, frame, sent)
		}
		sent += n
		for _, f := range cl.frames() {
			if f.typ == http2.FrameGoAway {
				t.Fatalf("GOAWAY %v after %d bytes", f.code, sent)
			}
		}
		if sent == total {
			break
		}
		cl.fr.WriteWindowUpdate(1, frame)
		cl.fr.WriteWindowUpdate(0, frame)
		cl.flush()
		if cl.err != nil {
			t.Fatalf("after %d bytes: %v", sent, cl.err)
		}
	}
	// Without DATA between them, the same updates run out the budget.
	for i := 0; i < 2*idleBudget; i++ {
		cl.fr.WriteWindowUpdate(0, 1)
	}
	cl.flush()
	if !errors.Is(cl.err, errIdleFlood) {
		t.Fatalf("a WINDOW_UPDATE flood after the download: %v", cl.err)
	}
}

// TestRejectedReported: requests the Conn refuses itself, which never
// reach Request, are reported to a RejectHandler with the status they
// stand for: malformed 400, past the concurrent streams 503.
func TestRejectedReported(t *testing.T) {
	cl := newClient(t, &Config{MaxConcurrentStreams: 1})
	cl.flush()
	cl.frames()
	cl.headers(1, true, with("Upper", "x")...)      // malformed
	cl.headers(3, true, with("connection", "x")...) // connection-specific
	cl.headers(5, false, get...)                    // open, holds the only slot
	cl.headers(7, true, get...)                     // refused
	cl.flush()
	var got []int64
	for _, e := range cl.h.events {
		if e.kind == "rejected" {
			got = append(got, e.length)
		}
	}
	if fmt.Sprint(got) != "[400 400 503]" || cl.h.count("request") != 1 {
		t.Fatalf("rejected %v, %d requests; want [400 400 503] and 1", got, cl.h.count("request"))
	}
}
