package h2

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"gale/codec"

	"golang.org/x/net/http2"
)

// TestGET: one GET answered from inside Request, as a cache hit is.
func TestGET(t *testing.T) {
	cl := newClient(t, nil)
	cl.h.onRequest = func(s *Stream, req *codec.Request) { respond(cl.c, s, 200, "hello") }
	cl.get(1, "/a/b?x=1&y=2", "user-agent", "test", "cookie", "a=1", "accept", "*/*", "cookie", "b=2")
	cl.flush()
	if cl.err != nil {
		t.Fatal(cl.err)
	}
	fs := cl.frames()
	if got := strings.Join(kinds(fs), " "); got != "SETTINGS WINDOW_UPDATE SETTINGS HEADERS DATA" {
		t.Fatalf("frames: %s", got)
	}
	s := fs[0].setting
	if s[http2.SettingMaxConcurrentStreams] != DefaultMaxConcurrentStreams || s[http2.SettingInitialWindowSize] != DefaultInitialStreamWindow || s[http2.SettingMaxHeaderListSize] != DefaultMaxHeaderListSize {
		t.Errorf("SETTINGS %v", s)
	}
	if fs[1].incr != DefaultInitialConnWindow-65535 || fs[2].flags&http2.FlagSettingsAck == 0 {
		t.Errorf("WINDOW_UPDATE %d, ACK %v", fs[1].incr, fs[2].flags)
	}
	if fs[3].fields[":status"] != "200" || fs[3].fields["content-type"] != "text/plain" || fs[3].flags&http2.FlagHeadersEndStream != 0 {
		t.Errorf("HEADERS %v %v", fs[3].fields, fs[3].flags)
	}
	if string(fs[4].data) != "hello" || fs[4].flags&http2.FlagDataEndStream == 0 {
		t.Errorf("DATA %q %v", fs[4].data, fs[4].flags)
	}
	e := cl.h.events[0]
	if e.method != "GET" || e.path != "/a/b" || e.query != "x=1&y=2" || e.host != "example.com" || e.body || e.length != -1 {
		t.Errorf("request %+v", e)
	}
	if got := strings.Join(e.fields, "|"); got != "user-agent: test|cookie: a=1; b=2|accept: */*" {
		t.Errorf("fields %s", got)
	}
	if cl.c.Streams() != 0 || cl.c.Closed() {
		t.Errorf("streams %d, closed %v", cl.c.Streams(), cl.c.Closed())
	}
}

// TestPOSTWindowUpdates: a body four times the stream window arrives as
// the engine consumes it, with batched WINDOW_UPDATE frames.
func TestPOSTWindowUpdates(t *testing.T) {
	cl := newClient(t, nil)
	cl.h.consume = true
	const size = 4 * DefaultInitialStreamWindow
	var got bytes.Buffer
	cl.h.onData = func(s *Stream, data []byte, end bool) {
		got.Write(data)
		if end {
			respond(cl.c, s, 201, "")
		}
	}
	cl.flush()
	window, connWindow := 65535, 65535
	for _, f := range cl.frames() {
		if f.typ == http2.FrameWindowUpdate {
			connWindow += int(f.incr)
		}
	}
	cl.headers(1, false, ":method", "POST", ":scheme", "https", ":authority", "a", ":path", "/up", "content-length", fmt.Sprint(size))
	body := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	sent, updates := 0, 0
	for sent < size {
		n := min(window, connWindow, 16384, size-sent)
		if n == 0 {
			cl.flush()
			for _, f := range cl.frames() {
				switch {
				case f.typ == http2.FrameWindowUpdate && f.id == 1:
					window += int(f.incr)
					updates++
				case f.typ == http2.FrameWindowUpdate && f.id == 0:
					connWindow += int(f.incr)
				case f.typ == http2.FrameSettings && f.flags == 0:
					window += int(f.setting[http2.SettingInitialWindowSize]) - 65535
				}
			}
			if min(window, connWindow) == 0 {
				t.Fatalf("stalled after %d bytes", sent)
			}
			continue
		}
		cl.fr.WriteData(1, sent+n == size, body[sent:sent+n])
		sent += n
		window -= n
		connWindow -= n
	}
	cl.flush()
	fs := cl.frames()
	if cl.err != nil || !bytes.Equal(got.Bytes(), body) {
		t.Fatalf("err %v, body %d bytes", cl.err, got.Len())
	}
	if hs := find(fs, http2.FrameHeaders); len(hs) != 1 || hs[0].fields[":status"] != "201" {
		t.Fatalf("response %v", kinds(fs))
	}
	// Batched: about one update per half window, not one per frame.
	if updates < 3 || updates > 2*size/DefaultInitialStreamWindow+1 {
		t.Errorf("%d stream WINDOW_UPDATE frames for %d bytes", updates, size)
	}
	if cl.c.Streams() != 0 {
		t.Errorf("streams %d", cl.c.Streams())
	}
}

// TestConcurrentStreams: 100 streams open at once, answered afterwards in
// reverse order.
func TestConcurrentStreams(t *testing.T) {
	cl := newClient(t, nil)
	var open []*Stream
	cl.h.onRequest = func(s *Stream, req *codec.Request) { open = append(open, s) }
	for i := 0; i < 100; i++ {
		cl.get(uint32(2*i+1), fmt.Sprintf("/%d", i))
	}
	cl.flush()
	if len(open) != 100 || cl.c.Streams() != 100 {
		t.Fatalf("%d requests, %d streams", len(open), cl.c.Streams())
	}
	slots := map[int]bool{}
	for i := len(open) - 1; i >= 0; i-- {
		s := open[i]
		if slots[s.Slot] || s.Slot >= DefaultMaxConcurrentStreams {
			t.Fatalf("slot %d reused or out of range", s.Slot)
		}
		slots[s.Slot] = true
		respond(cl.c, s, 200, fmt.Sprintf("body %d", s.ID))
	}
	fs := cl.frames()
	ds := find(fs, http2.FrameData)
	if len(ds) != 100 || len(find(fs, http2.FrameHeaders)) != 100 {
		t.Fatalf("frames %d", len(fs))
	}
	for _, d := range ds {
		if string(d.data) != fmt.Sprintf("body %d", d.id) {
			t.Errorf("stream %d: %q", d.id, d.data)
		}
	}
	if cl.c.Streams() != 0 {
		t.Errorf("streams %d", cl.c.Streams())
	}
}

// TestSmallClientWindow: a 16 KiB client window and a 1 MiB response
// written in a WriteData loop driven by Writable.
func TestSmallClientWindow(t *testing.T) {
	cl := newClient(t, nil, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 16384})
	const size = 1 << 20
	body := bytes.Repeat([]byte("x"), size)
	off := 0
	write := func(s *Stream) { off += cl.c.WriteData(s, body[off:], true) }
	cl.h.onRequest = func(s *Stream, req *codec.Request) {
		cl.c.WriteHeaders(s, []byte{0x88}, false)
		write(s)
	}
	cl.h.onWrite = write
	cl.get(1, "/big")
	cl.flush()
	got, frames := 0, 0
	for rounds := 0; ; rounds++ {
		fs := cl.frames()
		for _, f := range find(fs, http2.FrameData) {
			if len(f.data) > 16384 {
				t.Fatalf("DATA of %d bytes", len(f.data))
			}
			got += len(f.data)
			frames++
			if f.flags&http2.FlagDataEndStream != 0 {
				if got != size || off != size {
					t.Fatalf("END_STREAM after %d bytes (%d written)", got, off)
				}
				if cl.c.Streams() != 0 {
					t.Fatalf("streams %d", cl.c.Streams())
				}
				return
			}
			cl.fr.WriteWindowUpdate(1, uint32(len(f.data)))
			cl.fr.WriteWindowUpdate(0, uint32(len(f.data)))
		}
		if rounds > size/1024 {
			t.Fatalf("no end after %d bytes", got)
		}
		cl.flush()
		if cl.err != nil {
			t.Fatal(cl.err)
		}
	}
}

// session writes a short session of every kind of frame a client sends.
func session(cl *client) {
	cl.get(1, "/one", "accept-encoding", "gzip")
	cl.headers(3, false, ":method", "POST", ":scheme", "http", ":authority", "h:8080", ":path", "/two", "content-length", "11")
	cl.fr.WriteData(3, false, []byte("hello "))
	cl.fr.WriteDataPadded(3, false, []byte("world"), make([]byte, 7))
	cl.headers(3, true, "x-trailer", "t")
	cl.fr.WritePing(false, [8]byte{1, 2, 3, 4, 5, 6, 7, 8})
	cl.fr.WritePriority(5, http2.PriorityParam{StreamDep: 1, Weight: 10})
	big := cl.block(":method", "GET", ":scheme", "https", ":authority", "e", ":path", "/"+strings.Repeat("p", 20000))
	cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 5, BlockFragment: big[:10000], EndStream: true})
	cl.fr.WriteContinuation(5, false, big[10000:15000])
	cl.fr.WriteContinuation(5, true, big[15000:])
	cl.fr.WriteRSTStream(7, http2.ErrCodeCancel) // idle: connection error at the end
}

// TestByteAtATime feeds a whole session a byte at a time (Feed gets every
// byte not yet used, plus one more) and compares events and output with
// feeding it whole.
func TestByteAtATime(t *testing.T) {
	run := func(split bool) ([]event, []byte, error) {
		cl := newClient(t, nil)
		cl.h.onRequest = func(s *Stream, req *codec.Request) {
			if !s.BodyFollows {
				respond(cl.c, s, 200, "ok")
			}
		}
		cl.h.onData = func(s *Stream, data []byte, end bool) {
			if end {
				respond(cl.c, s, 204, "")
			}
		}
		cl.h.consume = true
		session(cl)
		b := cl.wbuf.Bytes()
		var out []byte
		var err error
		if !split {
			_, err = cl.c.Feed(b)
			out = append(out, cl.c.Out()...)
		} else {
			var pend []byte
			for i := 0; i < len(b) && err == nil; i++ {
				pend = append(pend, b[i])
				var n int
				n, err = cl.c.Feed(pend)
				pend = append(pend[:0], pend[n:]...)
				out = append(out, cl.c.Out()...)
				cl.c.ResetOut()
			}
		}
		return cl.h.events, out, err
	}
	ev1, out1, err1 := run(false)
	ev2, out2, err2 := run(true)
	if fmt.Sprint(ev1) != fmt.Sprint(ev2) || !bytes.Equal(out1, out2) || fmt.Sprint(err1) != fmt.Sprint(err2) {
		t.Fatalf("whole:\n%v\n%v\nsplit:\n%v\n%v", ev1, err1, ev2, err2)
	}
	if err1 == nil || len(ev1) < 5 {
		t.Fatalf("session: %v %v", ev1, err1)
	}
	// Stream 5's list is over MaxHeaderListSize with its :path lost:
	// answered 431 by the Conn, and reported as rejected.
	want := "request 1 /one|request 3 /two|data 3 hello |data 3 world|trailers 3|data 3 |rejected 0"
	var got []string
	for _, e := range ev1 {
		s := e.kind + " " + fmt.Sprint(e.id)
		if e.kind == "request" {
			s += " " + e.path[:min(len(e.path), 5)]
		}
		if e.kind == "data" {
			s += " " + e.data
		}
		got = append(got, s)
	}
	if g := strings.Join(got, "|"); g != want {
		t.Errorf("events\n got %s\nwant %s", g, want)
	}
}
