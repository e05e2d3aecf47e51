package h2

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"gale/codec"
	"gale/h2/hpack"

	"golang.org/x/net/http2"
	xhpack "golang.org/x/net/http2/hpack"
)

// The tests drive a Conn with golang.org/x/net/http2 as the client: its
// Framer and hpack.Encoder write into a buffer that is fed to the Conn, and
// what the Conn queues in Out is read back with another Framer.

// event is one Handler call, with copies of what it was given.
type event struct {
	kind   string // "request", "data", "reset", "writable", "trailers"
	id     uint32
	method string
	path   string
	query  string
	host   string
	fields []string // "name: value"
	length int64
	body   bool
	large  bool
	data   string
	end    bool
	code   ErrCode
}

// recorder is a Handler that records every event and runs the test's
// callbacks.
type recorder struct {
	c         *Conn
	events    []event
	onRequest func(s *Stream, req *codec.Request)
	onData    func(s *Stream, data []byte, end bool)
	onWrite   func(s *Stream)
	consume   bool // call Consumed for every Data
}

func (r *recorder) Request(s *Stream, req *codec.Request) {
	e := event{kind: "request", id: s.ID, method: string(req.Method), path: string(req.Path),
		query: string(req.Query), host: string(req.Host), length: req.ContentLength,
		body: s.BodyFollows, large: s.TooLarge}
	if req.Form != codec.OriginForm {
		e.path = string(req.Target)
	}
	for _, h := range req.Headers {
		e.fields = append(e.fields, string(h.Name)+": "+string(h.Value))
	}
	if req.Version != codec.HTTP20 || req.KeepAlive || req.Chunked || req.Upgrade || req.HasBody() != s.BodyFollows {
		panic("request view: version, HTTP/1.1 connection fields or HasBody")
	}
	r.events = append(r.events, e)
	if r.onRequest != nil {
		r.onRequest(s, req)
	}
}

func (r *recorder) Data(s *Stream, data []byte, end bool) {
	r.events = append(r.events, event{kind: "data", id: s.ID, data: string(data), end: end})
	if r.consume {
		r.c.Consumed(s, len(data))
	}
	if r.onData != nil {
		r.onData(s, data, end)
	}
}

func (r *recorder) Reset(s *Stream, code ErrCode) {
	r.events = append(r.events, event{kind: "reset", id: s.ID, code: code})
}

func (r *recorder) Writable(s *Stream) {
	r.events = append(r.events, event{kind: "writable", id: s.ID})
	if r.onWrite != nil {
		r.onWrite(s)
	}
}

func (r *recorder) Trailers(s *Stream, fields []codec.Header) {
	e := event{kind: "trailers", id: s.ID}
	for _, h := range fields {
		e.fields = append(e.fields, string(h.Name)+": "+string(h.Value))
	}
	r.events = append(r.events, e)
}

// Rejected records a request the Conn refused itself (RejectHandler),
// its status in length.
func (r *recorder) Rejected(status int) {
	r.events = append(r.events, event{kind: "rejected", length: int64(status)})
}

func (r *recorder) count(kind string) int {
	n := 0
	for _, e := range r.events {
		if e.kind == kind {
			n++
		}
	}
	return n
}

// frame is one frame the Conn wrote, as x/net read it.
type frame struct {
	typ     http2.FrameType
	id      uint32
	flags   http2.Flags
	data    []byte
	fields  map[string]string
	code    http2.ErrCode
	last    uint32 // GOAWAY
	incr    uint32 // WINDOW_UPDATE
	setting map[http2.SettingID]uint32
}

// client is the x/net side of a session with one Conn.
type client struct {
	t    testing.TB
	c    *Conn
	h    *recorder
	wbuf bytes.Buffer // client -> Conn
	fr   *http2.Framer
	hbuf bytes.Buffer
	enc  *xhpack.Encoder
	in   bytes.Buffer // Conn -> client
	rd   *http2.Framer
	err  error // the last error Feed returned
	fed  int   // bytes fed
}

// newClient starts a session: the Conn is initialised with cfg, the client
// sends the preface and its SETTINGS, and both sides' first frames are
// exchanged.
func newClient(t testing.TB, cfg *Config, settings ...http2.Setting) *client {
	cl := &client{t: t, c: new(Conn), h: new(recorder)}
	cl.h.c = cl.c
	cl.c.Init(cfg, cl.h)
	cl.fr = http2.NewFramer(&cl.wbuf, nil)
	cl.enc = xhpack.NewEncoder(&cl.hbuf)
	cl.rd = http2.NewFramer(nil, &cl.in)
	cl.rd.ReadMetaHeaders = xhpack.NewDecoder(4096, nil)
	cl.rd.SetMaxReadFrameSize(MaxMaxFrameSize)
	cl.wbuf.WriteString(ClientPreface)
	cl.fr.WriteSettings(settings...)
	return cl
}

// flush feeds what the client wrote to the Conn, whole, and collects Out.
func (cl *client) flush() {
	b := cl.wbuf.Bytes()
	n, err := cl.c.Feed(b)
	cl.fed += n
	if err != nil {
		cl.err = err
	} else if n != len(b) {
		cl.t.Fatalf("Feed used %d of %d bytes", n, len(b))
	}
	cl.wbuf.Reset()
	cl.collect()
}

// collect moves the Conn's output to the client's input.
func (cl *client) collect() {
	cl.in.Write(cl.c.Out())
	cl.c.ResetOut()
}

// frames reads every frame the Conn wrote since the last call.
func (cl *client) frames() []frame {
	cl.collect()
	var fs []frame
	for {
		f, err := cl.rd.ReadFrame()
		if errors.Is(err, io.EOF) {
			return fs
		}
		if err != nil {
			cl.t.Fatalf("reading the Conn's output: %v", err)
		}
		v := frame{typ: f.Header().Type, id: f.Header().StreamID, flags: f.Header().Flags}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			v.fields = map[string]string{}
			for _, hf := range f.Fields {
				v.fields[hf.Name] = hf.Value
			}
		case *http2.DataFrame:
			v.data = append([]byte(nil), f.Data()...)
		case *http2.RSTStreamFrame:
			v.code = f.ErrCode
		case *http2.GoAwayFrame:
			v.code, v.last = f.ErrCode, f.LastStreamID
		case *http2.WindowUpdateFrame:
			v.incr = f.Increment
		case *http2.SettingsFrame:
			v.setting = map[http2.SettingID]uint32{}
			f.ForeachSetting(func(s http2.Setting) error { v.setting[s.ID] = s.Val; return nil })
		case *http2.PingFrame:
			v.data = append([]byte(nil), f.Data[:]...)
		}
		fs = append(fs, v)
	}
}

// block encodes fields given as name, value pairs.
func (cl *client) block(kv ...string) []byte {
	cl.hbuf.Reset()
	for i := 0; i < len(kv); i += 2 {
		cl.enc.WriteField(xhpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return append([]byte(nil), cl.hbuf.Bytes()...)
}

// get writes a GET for path on stream id.
func (cl *client) get(id uint32, path string, extra ...string) {
	kv := append([]string{":method", "GET", ":scheme", "https", ":authority", "example.com", ":path", path}, extra...)
	cl.headers(id, true, kv...)
}

// headers writes a HEADERS frame with END_HEADERS.
func (cl *client) headers(id uint32, end bool, kv ...string) {
	cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: cl.block(kv...), EndStream: end, EndHeaders: true})
}

// raw writes one frame with any header and payload.
func (cl *client) raw(t http2.FrameType, flags http2.Flags, id uint32, p []byte) {
	cl.fr.WriteRawFrame(t, flags, id, p)
}

// goAway returns the GOAWAY among fs, or fails.
func goAway(t testing.TB, fs []frame) frame {
	t.Helper()
	for _, f := range fs {
		if f.typ == http2.FrameGoAway {
			return f
		}
	}
	t.Fatalf("no GOAWAY in %v", kinds(fs))
	return frame{}
}

// kinds names the frames of fs, for messages.
func kinds(fs []frame) []string {
	var s []string
	for _, f := range fs {
		s = append(s, f.typ.String())
	}
	return s
}

// find returns the frames of type typ.
func find(fs []frame, typ http2.FrameType) []frame {
	var r []frame
	for _, f := range fs {
		if f.typ == typ {
			r = append(r, f)
		}
	}
	return r
}

// respond writes a response with status and body on s, as an engine does.
func respond(c *Conn, s *Stream, status int, body string) {
	block := hpack.AppendStatus(nil, status)
	block = hpack.AppendField(block, []byte("content-type"), []byte("text/plain"))
	c.WriteHeaders(s, block, body == "")
	if body != "" {
		if n := c.WriteData(s, []byte(body), true); n != len(body) {
			panic("short WriteData in respond")
		}
	}
}
