package h2

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"gale/codec"
	"gale/h2/hpack"

	"golang.org/x/net/http2"
)

// TestStreamTable checks the open-addressing table against a map through
// random puts and deletes, wrapping around the array.
func TestStreamTable(t *testing.T) {
	var tab streamTable
	tab.init(16)
	want := map[uint32]int{}
	r := rand.New(rand.NewPCG(1, 2))
	next := uint32(1)
	for i := 0; i < 200000; i++ {
		if len(want) < 16 && r.IntN(2) == 0 {
			id := next + 2*uint32(r.IntN(3))
			next = id + 2
			if _, ok := want[id]; !ok {
				tab.put(id, i%16)
				want[id] = i % 16
			}
		} else {
			for id := range want {
				tab.del(id)
				delete(want, id)
				break
			}
		}
		for id, slot := range want {
			if got := tab.get(id); got != slot {
				t.Fatalf("step %d: get(%d) = %d, want %d", i, id, got, slot)
			}
		}
		if tab.get(next+100) != -1 {
			t.Fatalf("step %d: absent id found", i)
		}
	}
}

// TestAppendDataHeader: the engine writes the payload itself; a response
// ended this way while the request body still flows is reset with NO_ERROR
// only on the next call, after the payload.
func TestAppendDataHeader(t *testing.T) {
	cl := newClient(t, nil)
	var s *Stream
	cl.h.onRequest = func(st *Stream, req *codec.Request) { s = st }
	cl.headers(1, false, ":method", "POST", ":scheme", "https", ":authority", "a", ":path", "/")
	cl.flush()
	cl.frames()
	cl.c.WriteHeaders(s, []byte{0x88}, false)
	if !cl.c.AppendDataHeader(s, 5, true) {
		t.Fatal("AppendDataHeader refused")
	}
	out := append(append([]byte(nil), cl.c.Out()...), "hello"...)
	if !bytes.HasSuffix(cl.c.Out(), []byte{0, 0, 5, 0, 1, 0, 0, 0, 1}) {
		t.Fatalf("Out does not end with the DATA header: %x", cl.c.Out())
	}
	cl.c.ResetOut()
	cl.in.Write(out)
	cl.fr.WriteData(1, false, []byte("body")) // crosses our END_STREAM
	cl.flush()
	fs := cl.frames()
	if got := kinds(fs); len(got) != 3 || got[0] != "HEADERS" || got[1] != "DATA" || got[2] != "RST_STREAM" || fs[2].code != http2.ErrCodeNo {
		t.Fatalf("frames %v", got)
	}
	if string(fs[1].data) != "hello" || cl.c.Streams() != 0 || cl.h.count("data") != 0 || cl.err != nil {
		t.Fatalf("data %q, streams %d, events %v, err %v", fs[1].data, cl.c.Streams(), cl.h.events, cl.err)
	}
	if cl.c.AppendDataHeader(s, 1, false) {
		t.Error("AppendDataHeader on a closed stream")
	}
}

// TestInformationalAndTrailers: 100 Continue, the final head, a body and
// response trailers; request trailers reach a TrailersHandler.
func TestInformationalAndTrailers(t *testing.T) {
	cl := newClient(t, nil)
	var s *Stream
	cl.h.onRequest = func(st *Stream, req *codec.Request) {
		s = st
		cl.c.WriteHeaders(st, hpack.AppendStatus(nil, 100), false)
	}
	cl.headers(1, false, ":method", "POST", ":scheme", "https", ":authority", "a", ":path", "/", "expect", "100-continue")
	cl.fr.WriteData(1, false, []byte("abc"))
	cl.headers(1, true, "x-checksum", "42")
	cl.flush()
	big := hpack.AppendStatus(nil, 200)
	big = hpack.AppendField(big, []byte("x-big"), bytes.Repeat([]byte("v"), 40000))
	cl.c.WriteHeaders(s, big, false)
	cl.c.WriteData(s, []byte("ok"), false)
	cl.c.WriteHeaders(s, hpack.AppendField(nil, []byte("grpc-status"), []byte("0")), true)
	fs := cl.frames()
	hs := find(fs, http2.FrameHeaders)
	if len(hs) != 3 || hs[0].fields[":status"] != "100" || hs[1].fields[":status"] != "200" || len(hs[1].fields["x-big"]) != 40000 ||
		hs[2].fields["grpc-status"] != "0" || hs[2].flags&http2.FlagHeadersEndStream == 0 {
		t.Fatalf("headers %v", kinds(fs))
	}
	var tr, end bool
	for _, e := range cl.h.events {
		tr = tr || e.kind == "trailers" && e.fields[0] == "x-checksum: 42"
		end = end || e.kind == "data" && e.end
	}
	if !tr || !end || cl.c.Streams() != 0 {
		t.Fatalf("events %v", cl.h.events)
	}
}

// TestWritableOnSettings: a larger SETTINGS_INITIAL_WINDOW_SIZE wakes a
// stream blocked on its window (RFC 9113 section 6.9.2).
func TestWritableOnSettings(t *testing.T) {
	cl := newClient(t, nil, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 10})
	body := []byte("0123456789abcdefghij")
	off := 0
	cl.h.onRequest = func(s *Stream, req *codec.Request) {
		cl.c.WriteHeaders(s, []byte{0x88}, false)
		off += cl.c.WriteData(s, body, true)
	}
	cl.h.onWrite = func(s *Stream) { off += cl.c.WriteData(s, body[off:], true) }
	cl.get(1, "/")
	cl.flush()
	if off != 10 || cl.c.Streams() != 1 {
		t.Fatalf("wrote %d", off)
	}
	cl.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 100})
	cl.flush()
	if off != len(body) || cl.c.Streams() != 0 || cl.h.count("writable") != 1 {
		t.Fatalf("wrote %d, events %v", off, cl.h.events)
	}
}

// TestPeerResetAndGoAway: RST_STREAM from the peer reaches the Handler;
// after the peer's GOAWAY no new stream is accepted and Closed follows the
// last one.
func TestPeerResetAndGoAway(t *testing.T) {
	cl := newClient(t, nil)
	var open []*Stream
	cl.h.onRequest = func(s *Stream, req *codec.Request) { open = append(open, s) }
	cl.get(1, "/")
	cl.get(3, "/")
	cl.fr.WriteRSTStream(1, http2.ErrCodeCancel)
	cl.fr.WriteGoAway(3, http2.ErrCodeNo, nil)
	cl.get(5, "/")
	cl.flush()
	if cl.err != nil || len(open) != 2 || cl.h.count("reset") != 1 || cl.c.Streams() != 1 || cl.c.Closed() {
		t.Fatalf("err %v, requests %d, events %v", cl.err, len(open), cl.h.events)
	}
	respond(cl.c, open[1], 200, "x")
	if !cl.c.Closed() {
		t.Fatal("not closed after the last stream")
	}
}

// TestEngineReset: Conn.Reset sends RST_STREAM without calling
// Handler.Reset, and later DATA on the stream is ignored.
func TestEngineReset(t *testing.T) {
	cl := newClient(t, nil)
	cl.h.onRequest = func(s *Stream, req *codec.Request) { cl.c.Reset(s, Cancel) }
	cl.headers(1, false, ":method", "POST", ":scheme", "https", ":authority", "a", ":path", "/")
	cl.fr.WriteData(1, false, []byte("late"))
	cl.flush()
	fs := cl.frames()
	rs := find(fs, http2.FrameRSTStream)
	if cl.err != nil || len(rs) != 1 || rs[0].code != http2.ErrCodeCancel || cl.h.count("reset") != 0 || cl.h.count("data") != 0 {
		t.Fatalf("err %v, frames %v, events %v", cl.err, kinds(fs), cl.h.events)
	}
}

// TestConnErrorResetsStreams: a connection error resets every open stream
// through the Handler and ignores what follows.
func TestConnErrorResetsStreams(t *testing.T) {
	cl := newClient(t, nil)
	cl.get(1, "/")
	cl.get(3, "/")
	cl.raw(http2.FrameData, 0, 0, nil)
	cl.get(5, "/")
	cl.flush()
	if cl.err == nil || cl.h.count("reset") != 2 || cl.h.count("request") != 2 || goAway(t, cl.frames()).last != 3 {
		t.Fatalf("err %v, events %v", cl.err, cl.h.events)
	}
	if n, err := cl.c.Feed([]byte("more")); n != 4 || err == nil {
		t.Fatalf("after the error: %d %v", n, err)
	}
}
