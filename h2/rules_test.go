package h2

import (
	"encoding/binary"
	"strings"
	"testing"

	"gale/codec"

	"golang.org/x/net/http2"
)

// outcome is what a hostile sequence must lead to: a connection error
// (GOAWAY with code) or a stream error (RST_STREAM on stream with code),
// the connection going on.
type outcome struct {
	conn   bool
	code   http2.ErrCode
	stream uint32
}

func connError(code http2.ErrCode) outcome { return outcome{conn: true, code: code} }
func rst(id uint32, code http2.ErrCode) outcome {
	return outcome{code: code, stream: id}
}

// check runs one case: the Conn answers every request with 200, the
// client writes its frames, and the outcome is checked from Out and Feed's
// error. A stream error must leave the connection usable: a GET on a fresh
// stream afterwards is answered.
func check(t *testing.T, name string, want outcome, write func(cl *client)) {
	t.Helper()
	cl := newClient(t, nil)
	cl.h.onRequest = func(s *Stream, req *codec.Request) {
		if !s.BodyFollows {
			respond(cl.c, s, 200, "ok")
		}
	}
	cl.h.consume = true
	cl.flush()
	cl.frames()
	write(cl)
	cl.flush()
	fs := cl.frames()
	if want.conn {
		g := goAway(t, fs)
		if g.code != want.code || cl.err == nil || !cl.c.Closed() {
			t.Errorf("%s: GOAWAY %v, Feed error %v; want %v", name, g.code, cl.err, want.code)
		}
		return
	}
	if cl.err != nil {
		t.Errorf("%s: connection error %v; want RST_STREAM %v", name, cl.err, want.code)
		return
	}
	found := false
	for _, f := range find(fs, http2.FrameRSTStream) {
		if f.id == want.stream && f.code == want.code {
			found = true
		}
	}
	if !found {
		t.Errorf("%s: frames %v; want RST_STREAM %d %v", name, kinds(fs), want.stream, want.code)
		return
	}
	cl.get(101, "/after")
	cl.flush()
	if hs := find(cl.frames(), http2.FrameHeaders); len(hs) != 1 || hs[0].id != 101 {
		t.Errorf("%s: no answer on a later stream", name)
	}
}

var get = []string{":method", "GET", ":scheme", "https", ":authority", "a.example", ":path", "/"}

func with(kv ...string) []string { return append(append([]string(nil), get...), kv...) }

// TestFrameRules: frame grammar, stream states and ordering (RFC 9113
// section 4-6).
func TestFrameRules(t *testing.T) {
	cases := []struct {
		name  string
		want  outcome
		write func(cl *client)
	}{
		{"DATA on stream 0", connError(http2.ErrCodeProtocol), func(cl *client) { cl.raw(http2.FrameData, 0, 0, []byte("x")) }},
		{"DATA on an idle stream", connError(http2.ErrCodeProtocol), func(cl *client) { cl.raw(http2.FrameData, 0, 1, []byte("x")) }},
		{"DATA on a closed stream", rst(1, http2.ErrCodeStreamClosed), func(cl *client) {
			cl.get(1, "/")
			cl.raw(http2.FrameData, 0, 1, []byte("x"))
		}},
		{"DATA beyond the connection window", connError(http2.ErrCodeFlowControl), func(cl *client) {
			cl.h.consume = false
			for id := uint32(1); id < 40; id += 2 {
				cl.headers(id, false, get...)
				for i := 0; i < 4; i++ {
					cl.fr.WriteData(id, false, make([]byte, 16000))
				}
			}
		}},
		{"DATA after END_STREAM", rst(1, http2.ErrCodeStreamClosed), func(cl *client) {
			cl.headers(1, false, get...)
			cl.fr.WriteData(1, true, []byte("a"))
			cl.fr.WriteData(1, true, []byte("b"))
		}},
		{"RST_STREAM on an idle stream", connError(http2.ErrCodeProtocol), func(cl *client) { cl.fr.WriteRSTStream(1, http2.ErrCodeCancel) }},
		{"WINDOW_UPDATE on an idle stream", connError(http2.ErrCodeProtocol), func(cl *client) { cl.fr.WriteWindowUpdate(3, 1) }},
		{"even stream", connError(http2.ErrCodeProtocol), func(cl *client) { cl.headers(2, true, get...) }},
		{"decreasing stream id", connError(http2.ErrCodeStreamClosed), func(cl *client) {
			cl.get(3, "/")
			cl.get(1, "/")
		}},
		{"HEADERS on an ended stream", connError(http2.ErrCodeStreamClosed), func(cl *client) {
			cl.get(1, "/")
			cl.get(3, "/")
			cl.get(1, "/")
		}},
		{"frame inside a header block", connError(http2.ErrCodeProtocol), func(cl *client) {
			cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: cl.block(get...)})
			cl.fr.WritePing(false, [8]byte{})
		}},
		{"CONTINUATION of another stream", connError(http2.ErrCodeProtocol), func(cl *client) {
			cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: cl.block(get...)})
			cl.fr.WriteContinuation(3, true, nil)
		}},
		{"CONTINUATION alone", connError(http2.ErrCodeProtocol), func(cl *client) { cl.fr.WriteContinuation(1, true, []byte{0x82}) }},
		{"PUSH_PROMISE", connError(http2.ErrCodeProtocol), func(cl *client) {
			cl.fr.WritePushPromise(http2.PushPromiseParam{StreamID: 1, PromiseID: 2, EndHeaders: true})
		}},
		{"frame too large", connError(http2.ErrCodeFrameSize), func(cl *client) { cl.raw(http2.FrameData, 0, 1, make([]byte, 16385)) }},
		{"SETTINGS with a bad length", connError(http2.ErrCodeFrameSize), func(cl *client) { cl.raw(http2.FrameSettings, 0, 0, make([]byte, 5)) }},
		{"SETTINGS ENABLE_PUSH 2", connError(http2.ErrCodeProtocol), func(cl *client) {
			cl.fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 2})
		}},
		{"SETTINGS INITIAL_WINDOW_SIZE 2^31", connError(http2.ErrCodeFlowControl), func(cl *client) {
			cl.raw(http2.FrameSettings, 0, 0, []byte{0, 4, 0x80, 0, 0, 0})
		}},
		{"SETTINGS MAX_FRAME_SIZE small", connError(http2.ErrCodeProtocol), func(cl *client) {
			cl.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 16383})
		}},
		{"SETTINGS MAX_FRAME_SIZE large", connError(http2.ErrCodeProtocol), func(cl *client) {
			cl.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 24})
		}},
		{"PING of 7 octets", connError(http2.ErrCodeFrameSize), func(cl *client) { cl.raw(http2.FramePing, 0, 0, make([]byte, 7)) }},
		{"PING on a stream", connError(http2.ErrCodeProtocol), func(cl *client) { cl.raw(http2.FramePing, 0, 1, make([]byte, 8)) }},
		{"RST_STREAM of 3 octets", connError(http2.ErrCodeFrameSize), func(cl *client) { cl.raw(http2.FrameRSTStream, 0, 1, make([]byte, 3)) }},
		{"WINDOW_UPDATE of 0 on the connection", connError(http2.ErrCodeProtocol), func(cl *client) {
			cl.raw(http2.FrameWindowUpdate, 0, 0, make([]byte, 4))
		}},
		{"WINDOW_UPDATE of 0 on a stream", rst(1, http2.ErrCodeProtocol), func(cl *client) {
			cl.headers(1, false, get...)
			cl.raw(http2.FrameWindowUpdate, 0, 1, make([]byte, 4))
		}},
		{"connection window overflow", connError(http2.ErrCodeFlowControl), func(cl *client) { cl.fr.WriteWindowUpdate(0, 1<<31-1) }},
		{"stream window overflow", rst(1, http2.ErrCodeFlowControl), func(cl *client) {
			cl.headers(1, false, get...)
			cl.fr.WriteWindowUpdate(1, 1<<31-1)
		}},
		{"INITIAL_WINDOW_SIZE overflows a stream", connError(http2.ErrCodeFlowControl), func(cl *client) {
			cl.headers(1, false, get...)
			cl.fr.WriteWindowUpdate(1, 1<<31-1-65535)
			cl.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 65536})
		}},
		{"PRIORITY self-dependency", rst(1, http2.ErrCodeProtocol), func(cl *client) { cl.fr.WritePriority(1, http2.PriorityParam{StreamDep: 1}) }},
		{"HEADERS self-dependency", rst(1, http2.ErrCodeProtocol), func(cl *client) {
			cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: cl.block(get...), EndStream: true, EndHeaders: true,
				Priority: http2.PriorityParam{StreamDep: 1, Weight: 1}})
		}},
		{"PRIORITY of 4 octets", rst(1, http2.ErrCodeFrameSize), func(cl *client) { cl.raw(http2.FramePriority, 0, 1, make([]byte, 4)) }},
		{"padding longer than the frame", connError(http2.ErrCodeProtocol), func(cl *client) {
			cl.headers(1, false, get...)
			cl.raw(http2.FrameData, http2.FlagDataPadded, 1, []byte{5, 'a'})
		}},
		{"DATA beyond the stream window", rst(1, http2.ErrCodeFlowControl), func(cl *client) {
			cl.h.consume = false // credit returned at once would open the window
			cl.headers(1, false, get...)
			for i := 0; i < 5; i++ {
				cl.fr.WriteData(1, false, make([]byte, 16384))
			}
		}},
		{"HPACK garbage", connError(http2.ErrCodeCompression), func(cl *client) {
			cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, EndHeaders: true})
		}},
		{"trailers without END_STREAM", rst(1, http2.ErrCodeProtocol), func(cl *client) {
			cl.headers(1, false, get...)
			cl.headers(1, false, "x", "y")
		}},
		{"HEADERS after END_STREAM", rst(1, http2.ErrCodeStreamClosed), func(cl *client) {
			cl.headers(1, false, get...)
			cl.fr.WriteData(1, true, nil)
			cl.headers(1, true, "x", "y")
		}},
		{"pseudo field in trailers", rst(1, http2.ErrCodeProtocol), func(cl *client) {
			cl.headers(1, false, get...)
			cl.headers(1, true, ":path", "/")
		}},
		{"content-length above DATA", rst(1, http2.ErrCodeProtocol), func(cl *client) {
			cl.headers(1, false, with("content-length", "5")...)
			cl.fr.WriteData(1, true, []byte("abc"))
		}},
		{"content-length below DATA", rst(1, http2.ErrCodeProtocol), func(cl *client) {
			cl.headers(1, false, with("content-length", "2")...)
			cl.fr.WriteData(1, false, []byte("abc"))
		}},
		{"content-length with END_STREAM", rst(1, http2.ErrCodeProtocol), func(cl *client) { cl.headers(1, true, with("content-length", "2")...) }},
	}
	for _, c := range cases {
		check(t, c.name, c.want, c.write)
	}
}

// TestRequestValidation: malformed requests (RFC 9113 section 8.2, 8.3)
// are stream errors and never reach the Handler.
func TestRequestValidation(t *testing.T) {
	bad := map[string][]string{
		"uppercase name":            with("User-Agent", "x"),
		"space in name":             with("a b", "x"),
		"colon in regular name":     with("a:b", "x"),
		"connection":                with("connection", "close"),
		"keep-alive":                with("keep-alive", "1"),
		"proxy-connection":          with("proxy-connection", "x"),
		"transfer-encoding":         with("transfer-encoding", "chunked"),
		"upgrade":                   with("upgrade", "h2c"),
		"te gzip":                   with("te", "gzip"),
		"te trailers, gzip":         with("te", "trailers, gzip"),
		"CR in value":               with("x", "a\rb"),
		"LF in value":               with("x", "a\nb"),
		"NUL in value":              with("x", "a\x00b"),
		"leading space":             with("x", " a"),
		"trailing tab":              with("x", "a\t"),
		"DEL in value":              with("x", "a\x7fb"),
		"pseudo after regular":      {":method", "GET", ":scheme", "https", ":authority", "a", "x", "y", ":path", "/"},
		"duplicate :path":           with(":path", "/b"),
		"duplicate :method":         {":method", "GET", ":method", "GET", ":scheme", "https", ":authority", "a", ":path", "/"},
		":status":                   {":status", "200", ":method", "GET", ":scheme", "https", ":authority", "a", ":path", "/"},
		":protocol":                 {":method", "GET", ":protocol", "websocket", ":scheme", "https", ":authority", "a", ":path", "/"},
		"unknown pseudo":            {":method", "GET", ":foo", "x", ":scheme", "https", ":authority", "a", ":path", "/"},
		"no :method":                {":scheme", "https", ":authority", "a", ":path", "/"},
		"no :scheme":                {":method", "GET", ":authority", "a", ":path", "/"},
		"no :path":                  {":method", "GET", ":scheme", "https", ":authority", "a"},
		"empty :path":               {":method", "GET", ":scheme", "https", ":authority", "a", ":path", ""},
		"relative :path":            {":method", "GET", ":scheme", "https", ":authority", "a", ":path", "a/b"},
		"* with GET":                {":method", "GET", ":scheme", "https", ":authority", "a", ":path", "*"},
		"# in :path":                {":method", "GET", ":scheme", "https", ":authority", "a", ":path", "/a#b"},
		"space in :path":            {":method", "GET", ":scheme", "https", ":authority", "a", ":path", "/a b"},
		"bad percent":               {":method", "GET", ":scheme", "https", ":authority", "a", ":path", "/a%zz"},
		"empty :method":             {":method", "", ":scheme", "https", ":authority", "a", ":path", "/"},
		"space in :method":          {":method", "G T", ":scheme", "https", ":authority", "a", ":path", "/"},
		"bad :scheme":               {":method", "GET", ":scheme", "ht tp", ":authority", "a", ":path", "/"},
		"no authority, no host":     {":method", "GET", ":scheme", "https", ":path", "/"},
		"userinfo in :authority":    {":method", "GET", ":scheme", "https", ":authority", "u@a", ":path", "/"},
		"bad port":                  {":method", "GET", ":scheme", "https", ":authority", "a:8x", ":path", "/"},
		"host differs":              with("host", "b.example"),
		"two hosts":                 {":method", "GET", ":scheme", "https", ":path", "/", "host", "a", "host", "a"},
		"bad content-length":        with("content-length", "1x"),
		"two content-lengths":       with("content-length", "1", "content-length", "1"),
		"CONNECT with :path":        {":method", "CONNECT", ":authority", "a:443", ":path", "/"},
		"CONNECT without authority": {":method", "CONNECT"},
	}
	for name, kv := range bad {
		check(t, name, rst(1, http2.ErrCodeProtocol), func(cl *client) { cl.headers(1, true, kv...) })
	}
	good := map[string]struct {
		kv   []string
		want string // method path host
	}{
		"OPTIONS *":        {[]string{":method", "OPTIONS", ":scheme", "https", ":authority", "a", ":path", "*"}, "OPTIONS * a"},
		"host only":        {[]string{":method", "GET", ":scheme", "http", ":path", "/x", "host", "h.example:81"}, "GET /x h.example:81"},
		"same host":        {with("host", "A.example"), "GET / a.example"},
		"IPv6":             {[]string{":method", "GET", ":scheme", "https", ":authority", "[::1]:8443", ":path", "/"}, "GET / [::1]:8443"},
		"te trailers":      {with("te", "trailers"), "GET / a.example"},
		"CONNECT":          {[]string{":method", "CONNECT", ":authority", "a.example:443"}, "CONNECT a.example:443 a.example:443"},
		"obs-text value":   {with("x", "caf\xc3\xa9"), "GET / a.example"},
		"empty value":      {with("x", ""), "GET / a.example"},
		"percent in query": {[]string{":method", "GET", ":scheme", "https", ":authority", "a", ":path", "/p?q=%41"}, "GET /p a"},
	}
	for name, c := range good {
		cl := newClient(t, nil)
		var form codec.TargetForm
		cl.h.onRequest = func(s *Stream, req *codec.Request) { form = req.Form }
		cl.headers(1, true, c.kv...)
		cl.flush()
		if cl.err != nil || len(cl.h.events) != 1 {
			t.Errorf("%s: %v %v", name, cl.err, kinds(cl.frames()))
			continue
		}
		e := cl.h.events[0]
		if got := e.method + " " + e.path + " " + e.host; got != c.want {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
		switch {
		case name == "CONNECT" && form != codec.AuthorityForm,
			name == "OPTIONS *" && form != codec.AsteriskForm:
			t.Errorf("%s: form %v", name, form)
		}
	}
}

// TestTooManyStreams: the streams past MaxConcurrentStreams are refused
// (RFC 9113 section 5.1.2) and the others are served.
func TestTooManyStreams(t *testing.T) {
	cl := newClient(t, &Config{MaxConcurrentStreams: 4})
	for i := 0; i < 6; i++ {
		cl.get(uint32(2*i+1), "/")
	}
	cl.flush()
	fs := cl.frames()
	rs := find(fs, http2.FrameRSTStream)
	if cl.err != nil || len(rs) != 2 || rs[0].id != 9 || rs[0].code != http2.ErrCodeRefusedStream || cl.h.count("request") != 4 {
		t.Fatalf("err %v, RST %v, requests %d", cl.err, rs, cl.h.count("request"))
	}
}

// TestGoAwayGraceful: after MaxRequests streams a GOAWAY with NO_ERROR
// names the last one; later streams are ignored, the open ones finish, and
// Closed follows.
func TestGoAwayGraceful(t *testing.T) {
	cl := newClient(t, &Config{MaxRequests: 2})
	var open []*Stream
	cl.h.onRequest = func(s *Stream, req *codec.Request) { open = append(open, s) }
	cl.get(1, "/")
	cl.get(3, "/")
	cl.get(5, "/")
	cl.flush()
	g := goAway(t, cl.frames())
	if g.code != http2.ErrCodeNo || g.last != 3 || len(open) != 2 || cl.c.Closed() {
		t.Fatalf("GOAWAY %v last %d, %d requests, closed %v", g.code, g.last, len(open), cl.c.Closed())
	}
	respond(cl.c, open[0], 200, "a")
	if cl.c.Closed() || cl.c.Idle() {
		t.Fatal("closed with a stream open")
	}
	respond(cl.c, open[1], 200, "b")
	if !cl.c.Closed() || !cl.c.Idle() || cl.c.Err() != nil {
		t.Fatalf("closed %v, err %v", cl.c.Closed(), cl.c.Err())
	}
}

// TestPingAndSettingsAck: PING is echoed, every SETTINGS acknowledged.
func TestPingAndSettingsAck(t *testing.T) {
	cl := newClient(t, nil)
	cl.fr.WritePing(false, [8]byte{9, 8, 7, 6, 5, 4, 3, 2})
	cl.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 32768})
	cl.fr.WritePing(true, [8]byte{})
	cl.flush()
	fs := cl.frames()
	acks := 0
	for _, f := range fs {
		if f.typ == http2.FrameSettings && f.flags&http2.FlagSettingsAck != 0 {
			acks++
		}
	}
	ps := find(fs, http2.FramePing)
	if acks != 2 || len(ps) != 1 || ps[0].flags&http2.FlagPingAck == 0 || ps[0].data[0] != 9 {
		t.Fatalf("frames %v", kinds(fs))
	}
	if cl.c.PeerMaxFrame() != 32768 {
		t.Errorf("peer max frame %d", cl.c.PeerMaxFrame())
	}
}

// TestPreface: the preface must come whole and first, and SETTINGS right
// after it (RFC 9113 section 3.4).
func TestPreface(t *testing.T) {
	var c Conn
	c.Init(nil, new(recorder))
	if n, err := c.Feed([]byte(ClientPreface[:10])); n != 0 || err != nil {
		t.Fatalf("partial preface: %d %v", n, err)
	}
	if _, err := c.Feed([]byte("GET / HTTP/1.1\r\n\r\n")); err == nil {
		t.Fatal("HTTP/1.1 accepted")
	}
	c.Init(nil, new(recorder))
	b := append([]byte(ClientPreface), AppendPing(nil, false, [8]byte{})...)
	if _, err := c.Feed(b); err == nil || !strings.Contains(err.Error(), "SETTINGS") {
		t.Fatalf("PING first: %v", err)
	}
}

// TestUnknownFrameIgnored: frames of unknown types are ignored (RFC 9113
// section 5.5).
func TestUnknownFrameIgnored(t *testing.T) {
	check(t, "unknown type", rst(1, http2.ErrCodeProtocol), func(cl *client) {
		cl.raw(0x42, 0xff, 0, []byte("whatever"))
		cl.raw(0x10, 0, 0, binary.BigEndian.AppendUint32(nil, 1)) // PRIORITY_UPDATE
		cl.headers(1, true, with("Bad", "x")...)
	})
}
