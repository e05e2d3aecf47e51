package h2

import (
	"bytes"
	"errors"
	"testing"

	"golang.org/x/net/http2"
)

// sampleFrames is one frame of every type we write, in the order of a
// short session, the HEADERS split in CONTINUATION frames.
func sampleFrames() []byte {
	var b []byte
	b = AppendSettings(b, Setting{SettingMaxConcurrentStreams, 100}, Setting{SettingInitialWindowSize, 1 << 20})
	b = AppendSettingsAck(b)
	b = AppendWindowUpdate(b, 0, 1<<20)
	b = AppendHeaders(b, 1, false, bytes.Repeat([]byte{0x82}, 40000), MinMaxFrameSize)
	b = AppendData(b, 1, false, []byte("hello"))
	b = AppendData(b, 1, true, nil)
	b = AppendPing(b, false, [8]byte{1, 2, 3, 4, 5, 6, 7, 8})
	b = AppendPing(b, true, [8]byte{8, 7, 6, 5, 4, 3, 2, 1})
	b = AppendRSTStream(b, 3, Cancel)
	b = AppendWindowUpdate(b, 5, 12345)
	b = AppendGoAway(b, 7, EnhanceYourCalm, []byte("debug"))
	return b
}

// TestAppendReadByXNet reads what the Append functions write with x/net's
// Framer: the same frames, fields and payloads.
func TestAppendReadByXNet(t *testing.T) {
	b := sampleFrames()
	fr := http2.NewFramer(nil, bytes.NewReader(b))
	var got []string
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			break
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				got = append(got, "settings-ack")
				continue
			}
			v, _ := f.Value(http2.SettingInitialWindowSize)
			if v != 1<<20 {
				t.Errorf("INITIAL_WINDOW_SIZE %d", v)
			}
			got = append(got, "settings")
		case *http2.HeadersFrame:
			if f.StreamID != 1 || f.HeadersEnded() || f.StreamEnded() || len(f.HeaderBlockFragment()) != MinMaxFrameSize {
				t.Errorf("HEADERS %+v", f.FrameHeader)
			}
			got = append(got, "headers")
		case *http2.ContinuationFrame:
			got = append(got, "continuation")
			if f.HeadersEnded() != (len(f.HeaderBlockFragment()) == 40000-2*MinMaxFrameSize) {
				t.Errorf("CONTINUATION %+v", f.FrameHeader)
			}
		case *http2.DataFrame:
			got = append(got, "data:"+string(f.Data()))
			if f.StreamEnded() != (len(f.Data()) == 0) {
				t.Errorf("DATA %+v", f.FrameHeader)
			}
		case *http2.PingFrame:
			if f.IsAck() != (f.Data[0] == 8) {
				t.Errorf("PING %+v", f)
			}
			got = append(got, "ping")
		case *http2.RSTStreamFrame:
			if f.StreamID != 3 || f.ErrCode != http2.ErrCodeCancel {
				t.Errorf("RST %+v", f)
			}
			got = append(got, "rst")
		case *http2.WindowUpdateFrame:
			got = append(got, "wu")
		case *http2.GoAwayFrame:
			if f.LastStreamID != 7 || f.ErrCode != http2.ErrCodeEnhanceYourCalm || string(f.DebugData()) != "debug" {
				t.Errorf("GOAWAY %+v", f)
			}
			got = append(got, "goaway")
		}
	}
	want := "settings settings-ack wu headers continuation continuation data:hello data: ping ping rst wu goaway"
	if s := join(got); s != want {
		t.Errorf("frames\n got %s\nwant %s", s, want)
	}
}

func join(s []string) string {
	var b []byte
	for i, v := range s {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, v...)
	}
	return string(b)
}

// TestReadFrameByteAtATime gives ReadFrame every prefix of a session: each
// prefix that ends inside a frame is "incomplete" (n == 0, no error), and
// the frames read are the same as from the whole buffer.
func TestReadFrameByteAtATime(t *testing.T) {
	b := sampleFrames()
	var whole []FrameHeader
	for off := 0; off < len(b); {
		fh, _, n, err := ReadFrame(b[off:], MinMaxFrameSize)
		if err != nil || n == 0 {
			t.Fatalf("whole: %v %d", err, n)
		}
		whole = append(whole, fh)
		off += n
	}
	var got []FrameHeader
	off := 0
	for end := 0; end <= len(b); end++ {
		fh, p, n, err := ReadFrame(b[off:end], MinMaxFrameSize)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			continue
		}
		if int(fh.Length) != len(p) || n != FrameHeaderLen+len(p) {
			t.Fatalf("frame %+v: payload %d, n %d", fh, len(p), n)
		}
		got = append(got, fh)
		off += n
	}
	if off != len(b) || len(got) != len(whole) {
		t.Fatalf("read %d of %d bytes, %d of %d frames", off, len(b), len(got), len(whole))
	}
	for i := range got {
		if got[i] != whole[i] {
			t.Errorf("frame %d: %+v, want %+v", i, got[i], whole[i])
		}
	}
}

// TestReadFrameTooLarge: a frame over the limit is refused from its 9-byte
// header, before the payload arrives (RFC 9113 section 4.2).
func TestReadFrameTooLarge(t *testing.T) {
	h := AppendFrameHeader(nil, FrameHeader{Length: MinMaxFrameSize + 1, Type: FrameData, StreamID: 1})
	if _, _, n, err := ReadFrame(h[:8], MinMaxFrameSize); n != 0 || err != nil {
		t.Fatalf("8 bytes: %d %v", n, err)
	}
	_, _, n, err := ReadFrame(h, MinMaxFrameSize)
	var e *Error
	if n != 0 || !errors.As(err, &e) || e.Code != FrameSizeError || e.Stream {
		t.Fatalf("9 bytes: %d %v", n, err)
	}
	if _, _, n, err := ReadFrame(append(h, make([]byte, MinMaxFrameSize+1)...), MaxMaxFrameSize); n == 0 || err != nil {
		t.Fatalf("larger limit: %d %v", n, err)
	}
	// The reserved bit is dropped.
	h = []byte{0, 0, 0, 0, 0, 0x80, 0, 0, 1}
	if fh, _, _, _ := ReadFrame(h, MinMaxFrameSize); fh.StreamID != 1 {
		t.Fatalf("reserved bit kept: %d", fh.StreamID)
	}
}

// TestPayloadRules checks each type's size and stream rules (RFC 9113
// section 6) with the class of error each breach is.
func TestPayloadRules(t *testing.T) {
	const (
		ok = iota
		conn
		stream
	)
	type tc struct {
		name  string
		fh    FrameHeader
		p     string
		class int
		code  ErrCode
	}
	h := func(t FrameType, f Flags, id uint32) FrameHeader { return FrameHeader{Type: t, Flags: f, StreamID: id} }
	cases := []tc{
		{"data", h(FrameData, 0, 1), "abc", ok, 0},
		{"data stream 0", h(FrameData, 0, 0), "abc", conn, ProtocolError},
		{"data padded", h(FrameData, FlagPadded, 1), "\x02abcxx", ok, 0},
		{"data pad fills payload", h(FrameData, FlagPadded, 1), "\x03abc", ok, 0},
		{"data pad too long", h(FrameData, FlagPadded, 1), "\x04abc", conn, ProtocolError},
		{"data padded empty", h(FrameData, FlagPadded, 1), "", conn, ProtocolError},
		{"headers", h(FrameHeaders, FlagEndHeaders, 1), "\x82", ok, 0},
		{"headers stream 0", h(FrameHeaders, 0, 0), "\x82", conn, ProtocolError},
		{"headers pad too long", h(FrameHeaders, FlagPadded, 1), "\x02\x82", conn, ProtocolError},
		{"headers priority short", h(FrameHeaders, FlagPriority, 1), "\x00\x00\x00", conn, FrameSizeError},
		{"headers padded priority", h(FrameHeaders, FlagPadded|FlagPriority, 1), "\x01\x00\x00\x00\x03\x10\x82x", ok, 0},
		{"headers self-dependency", h(FrameHeaders, FlagPriority, 3), "\x80\x00\x00\x03\x10\x82", stream, ProtocolError},
		{"priority", h(FramePriority, 0, 1), "\x00\x00\x00\x03\x10", ok, 0},
		{"priority short", h(FramePriority, 0, 1), "\x00\x00\x00\x03", stream, FrameSizeError},
		{"priority stream 0", h(FramePriority, 0, 0), "\x00\x00\x00\x03\x10", conn, ProtocolError},
		{"priority self", h(FramePriority, 0, 3), "\x00\x00\x00\x03\x10", stream, ProtocolError},
		{"rst", h(FrameRSTStream, 0, 1), "\x00\x00\x00\x08", ok, 0},
		{"rst long", h(FrameRSTStream, 0, 1), "\x00\x00\x00\x08\x00", conn, FrameSizeError},
		{"rst stream 0", h(FrameRSTStream, 0, 0), "\x00\x00\x00\x08", conn, ProtocolError},
		{"settings", h(FrameSettings, 0, 0), "\x00\x03\x00\x00\x00\x64", ok, 0},
		{"settings odd", h(FrameSettings, 0, 0), "\x00\x03\x00\x00\x00", conn, FrameSizeError},
		{"settings on stream", h(FrameSettings, 0, 1), "", conn, ProtocolError},
		{"settings ack payload", h(FrameSettings, FlagAck, 0), "\x00\x03\x00\x00\x00\x64", conn, FrameSizeError},
		{"ping", h(FramePing, 0, 0), "12345678", ok, 0},
		{"ping short", h(FramePing, 0, 0), "1234567", conn, FrameSizeError},
		{"ping on stream", h(FramePing, 0, 1), "12345678", conn, ProtocolError},
		{"goaway", h(FrameGoAway, 0, 0), "\x00\x00\x00\x01\x00\x00\x00\x00", ok, 0},
		{"goaway short", h(FrameGoAway, 0, 0), "\x00\x00\x00\x01\x00\x00\x00", conn, FrameSizeError},
		{"goaway on stream", h(FrameGoAway, 0, 1), "\x00\x00\x00\x01\x00\x00\x00\x00", conn, ProtocolError},
		{"window update", h(FrameWindowUpdate, 0, 1), "\x00\x00\x00\x01", ok, 0},
		{"window update short", h(FrameWindowUpdate, 0, 0), "\x00\x00\x01", conn, FrameSizeError},
		{"continuation stream 0", h(FrameContinuation, 0, 0), "\x82", conn, ProtocolError},
	}
	for _, c := range cases {
		c.fh.Length = uint32(len(c.p))
		err := parsePayload(c.fh, []byte(c.p))
		var e *Error
		switch {
		case c.class == ok && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.class == ok:
		case !errors.As(err, &e):
			t.Errorf("%s: %v, want %v", c.name, err, c.code)
		case e.Code != c.code || e.Stream != (c.class == stream):
			t.Errorf("%s: %v (stream %v), want %v (stream %v)", c.name, err, e.Stream, c.code, c.class == stream)
		}
	}
}

var errTestWindowZero = streamErr(ProtocolError, "WINDOW_UPDATE of 0")

// parsePayload runs the parser of fh's type, and the setting value checks.
func parsePayload(fh FrameHeader, p []byte) error {
	var err error
	switch fh.Type {
	case FrameData:
		_, err = ParseData(fh, p)
	case FrameHeaders:
		_, _, err = ParseHeaders(fh, p)
	case FramePriority:
		_, err = ParsePriority(fh, p)
	case FrameRSTStream:
		_, err = ParseRSTStream(fh, p)
	case FrameSettings:
		var n int
		n, err = ParseSettings(fh, p)
		for i := 0; err == nil && i < n; i++ {
			if e := checkSetting(SettingAt(p, i)); e != nil {
				err = e
			}
		}
	case FramePing:
		_, err = ParsePing(fh, p)
	case FrameGoAway:
		_, _, _, err = ParseGoAway(fh, p)
	case FrameWindowUpdate:
		var incr uint32
		incr, err = ParseWindowUpdate(fh, p)
		if err == nil && incr == 0 {
			err = errTestWindowZero // the receiver's rule (section 6.9)
		}
	case FrameContinuation:
		_, err = ParseContinuation(fh, p)
	}
	return err
}

// FuzzReadFrame reads the same bytes with ReadFrame and the payload
// parsers and with x/net's Framer (frame order unchecked), one frame at a
// time: both accept or both reject each frame, and accepted frames have
// the same header. Differences by design, each skipped:
//
//   - a stream that depends on itself (HEADERS or PRIORITY) is rejected by
//     ParseHeaders/ParsePriority (RFC 9113 section 5.3.1); x/net's framer
//     leaves it to its server;
//   - PUSH_PROMISE is not parsed by us (a client must not send it);
//   - x/net parses PRIORITY_UPDATE (RFC 9218), a type we ignore;
//   - SETTINGS_ENABLE_PUSH and SETTINGS_MAX_FRAME_SIZE values are checked
//     by x/net's server, not by its framer.
func FuzzReadFrame(f *testing.F) {
	f.Add(sampleFrames()[:2000])
	f.Add([]byte("\x00\x00\x05\x01\x2d\x00\x00\x00\x03\x01\x00\x00\x00\x03\x82"))
	f.Add([]byte("\x00\x00\x04\x00\x09\x00\x00\x00\x01\x04abc"))
	f.Add([]byte("\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x04\x80\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		for off := 0; off < len(b); {
			fh, p, n, err := ReadFrame(b[off:], MinMaxFrameSize)
			if n == 0 && err == nil {
				return // incomplete: x/net would report an unexpected EOF
			}
			fr := http2.NewFramer(nil, bytes.NewReader(b[off:]))
			fr.AllowIllegalReads = true
			fr.SetMaxReadFrameSize(MinMaxFrameSize)
			xf, xerr := fr.ReadFrame()
			if err != nil {
				if xerr == nil {
					t.Fatalf("at %d: ReadFrame: %v; x/net accepts %v", off, err, xf)
				}
				return
			}
			off += n
			if fh.Type == FramePushPromise || fh.Type > FrameContinuation {
				continue
			}
			perr := parsePayload(fh, p)
			if perr == errEnablePush || perr == errMaxFrame {
				perr = nil // values x/net's server checks, not its framer
			}
			var e *Error
			if errors.As(perr, &e) && e == errSelfDependency {
				continue
			}
			if (perr == nil) != (xerr == nil) {
				t.Fatalf("at %d: %+v: ours %v, x/net %v", off-n, fh, perr, xerr)
			}
			if xerr != nil {
				continue
			}
			xh := xf.Header()
			if xh.Length != fh.Length || uint8(xh.Type) != uint8(fh.Type) || uint8(xh.Flags) != uint8(fh.Flags) || xh.StreamID != fh.StreamID {
				t.Fatalf("at %d: header %+v, x/net %+v", off-n, fh, xh)
			}
			if d, ok := xf.(*http2.DataFrame); ok {
				ours, _ := ParseData(fh, p)
				if !bytes.Equal(ours, d.Data()) {
					t.Fatalf("at %d: data %q, x/net %q", off-n, ours, d.Data())
				}
			}
		}
	})
}
