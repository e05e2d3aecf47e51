package h2

import (
	"gale/codec"
	"gale/h2/hpack"
)

// ClientPreface is the connection preface a client sends first (RFC 9113
// section 3.4), before its SETTINGS frame.
const ClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// Handler receives the events of one connection; the engine implements it.
// Every method runs inside Conn.Feed (or inside a Conn method the engine
// called), on the connection's event loop, and may call the Conn's
// response methods (WriteHeaders, WriteData, Reset, ...) at once: a cache
// hit is answered from inside Request.
type Handler interface {
	// Request reports a new stream whose header block was decoded and
	// validated (RFC 9113 section 8.2, 8.3). req is a codec.Request with
	// Version codec.HTTP20: Method, Target (:path), Form (OriginForm,
	// AsteriskForm for OPTIONS "*", AuthorityForm for CONNECT, whose Target
	// is :authority), Path and Query split at the first '?' as codec does
	// for origin-form, Host (:authority, else the host field), Headers (the
	// regular fields in arrival order, cookie crumbs joined with "; " into
	// the first cookie field, section 8.2.3), ContentLength (-1 when
	// absent), and Streamed set when a body of undeclared length follows,
	// so that req.HasBody() reports s.BodyFollows (HTTP/1.1's Chunked,
	// KeepAlive and Upgrade stay unset). Every
	// slice aliases per-connection memory valid only during this call:
	// copy what must outlive it.
	Request(s *Stream, req *codec.Request)
	// Data delivers request body bytes (padding stripped); end reports
	// END_STREAM (RFC 9113 section 8.1), and comes with empty data after
	// trailers. data aliases the bytes given to Feed. The credit is
	// returned by calling Conn.Consumed once the bytes are used.
	Data(s *Stream, data []byte, end bool)
	// Reset reports that the stream ended abnormally: RST_STREAM from the
	// peer, a stream error the Conn raised, or the connection closing. The
	// engine drops its state for s; s is recycled after Reset returns. It is
	// not called for resets the engine asked for, nor for a stream whose
	// response the engine ended.
	Reset(s *Stream, code ErrCode)
	// Writable reports that the peer's window for s (or for the
	// connection) grew after a write found no room (RFC 9113 section
	// 6.9): the engine may WriteData again.
	Writable(s *Stream)
}

// TrailersHandler is implemented by a Handler that wants a request's
// trailer fields (RFC 9113 section 8.1). Without it trailers are validated
// and dropped. Trailers is called before the Data call that reports the end
// of the stream; fields alias per-connection memory valid only during the
// call.
type TrailersHandler interface {
	Trailers(s *Stream, fields []codec.Header)
}

// RejectHandler is implemented by a Handler that wants to know of the
// requests the Conn refused itself, which never reach Request: a header
// block that is no valid request (RFC 9113 section 8.1.1: RST_STREAM
// PROTOCOL_ERROR), as 400 in the sense of the access log; one whose field
// list lost its pseudo-header fields to MaxHeaderListSize, answered 431;
// and one past MaxConcurrentStreams (RST_STREAM REFUSED_STREAM), as 503. The engine logs and counts them as an HTTP/1.1 engine
// does the requests it cannot parse.
type RejectHandler interface {
	Rejected(status int)
}

// headerDecoder is what the Conn needs of an HPACK decoder: hpack.Decoder.
type headerDecoder interface {
	Init(maxTable uint32)
	Decode(dst []hpack.Field, block []byte, maxList uint32) ([]hpack.Field, error)
}

// Conn is the server side of one HTTP/2 connection over byte slices: bytes
// in (Feed), events out (Handler), bytes out (Out). It does no I/O. A Conn
// is used only on its connection's event loop and is not safe for
// concurrent use. The zero Conn is unusable: call Init first.
type Conn struct {
	cfg Config
	h   Handler
	th  TrailersHandler
	rh  RejectHandler
	dec headerDecoder
	hd  hpack.Decoder

	out     []byte // queued output
	backlog int    // bytes still waiting downstream (SetBacklog)

	streams []Stream      // the fixed pool, indexed by Slot
	free    []int32       // free slots, a stack
	table   streamTable   // stream id -> slot
	open    int           // streams holding a slot
	resets  recentResets  // streams we reset lately
	pending []int32       // slots ended by AppendDataHeader, finished on the next call
	err     *Error        // the connection error, once raised
	state   connFlags     // preface, settings and shutdown state
	peerMax uint32        // the peer's SETTINGS_MAX_FRAME_SIZE
	peerWin int64         // the peer's SETTINGS_INITIAL_WINDOW_SIZE
	lastID  uint32        // highest stream id the peer used to open a stream
	lastOK  uint32        // highest stream id delivered to the Handler (GOAWAY's last stream)
	nreq    uint32        // streams delivered to the Handler
	flow    connFlow      // connection-level windows
	budget  defenceBudget // flood and reset budgets (defence.go)
	nframes uint64        // frames handled, for tests of the defences

	hdrStream uint32 // stream whose CONTINUATION frames are awaited; 0 = none
	hdrFlags  Flags  // the flags of that stream's HEADERS frame
	hdrBad    bool   // that HEADERS frame had a stream error (self-dependency)
	hdrBuf    []byte // the header block gathered across CONTINUATION frames

	fields  []hpack.Field  // the decoded block
	req     codec.Request  // the request view handed to Request
	headers []codec.Header // storage of req.Headers and trailers
	cookie  []byte         // joined cookie crumbs
}

// connFlags are the Conn's one-bit states.
type connFlags uint8

const (
	flagPreface    connFlags = 1 << iota // the client preface was read
	flagPeerSet                          // the peer's first SETTINGS was read
	flagAcked                            // the peer acknowledged our SETTINGS
	flagFirstBlock                       // a response header block was sent (the table size update went out)
	flagGoingAway                        // we sent a graceful GOAWAY
	flagPeerGoAway                       // the peer sent GOAWAY
)

// connFlow holds the connection's flow-control windows (RFC 9113 section
// 6.9).
type connFlow struct {
	send     int64 // what we may still send
	sentData bool  // DATA went out since the peer's last connection WINDOW_UPDATE (defence.go)
	recv     int64 // what the peer may still send
	unacked  int64 // consumed, not yet granted back
}

// The connection errors of the state machine.
var (
	errPreface        = connErr(ProtocolError, "bad connection preface")
	errFirstSettings  = connErr(ProtocolError, "first frame is not SETTINGS")
	errExpectCont     = connErr(ProtocolError, "frame interleaved in a header block")
	errUnexpectedCont = connErr(ProtocolError, "CONTINUATION without an open header block")
	errIdleStream     = connErr(ProtocolError, "frame on an idle stream")
	errEvenStream     = connErr(ProtocolError, "stream id is even or does not increase")
	errPushPromise    = connErr(ProtocolError, "PUSH_PROMISE from a client")
	errCompression    = connErr(CompressionError, "header block does not decode")
	errWindowOverflow = connErr(FlowControlError, "flow-control window above 2^31-1")
	errConnWindowZero = connErr(ProtocolError, "WINDOW_UPDATE of 0 on the connection")
	errConnFlow       = connErr(FlowControlError, "DATA beyond the connection window")
	errStreamClosed   = streamErr(StreamClosed, "frame on a closed stream")
	errClosedHeaders  = connErr(StreamClosed, "HEADERS on a closed stream")
	errStreamWindow0  = streamErr(ProtocolError, "WINDOW_UPDATE of 0 on a stream")
	errStreamOverflow = streamErr(FlowControlError, "stream window above 2^31-1")
	errStreamFlow     = streamErr(FlowControlError, "DATA beyond the stream window")
	errRefused        = streamErr(RefusedStream, "too many concurrent streams")
	errLength         = streamErr(ProtocolError, "DATA disagrees with content-length")
	errTrailersNoEnd  = streamErr(ProtocolError, "trailers without END_STREAM")
)

// engineErrors are the connection errors GoAway raises, one per code that
// RFC 9113 section 7 defines (others take INTERNAL_ERROR).
var engineErrors = func() (t [HTTP11Required + 1]*Error) {
	for i := range t {
		t[i] = connErr(ErrCode(i), "connection closed by the engine")
	}
	return t
}()

func engineError(code ErrCode) *Error {
	if int(code) < len(engineErrors) {
		return engineErrors[code]
	}
	return engineErrors[InternalError]
}

// Init readies c for a new connection with the limits of cfg (nil: all
// defaults) and the handler h, and queues our SETTINGS (RFC 9113 section
// 3.4) and the WINDOW_UPDATE that raises the connection window to
// cfg.InitialConnWindow. Reusing a Conn keeps its memory.
func (c *Conn) Init(cfg *Config, h Handler) {
	c.cfg = cfg.withDefaults()
	c.h = h
	c.th, _ = h.(TrailersHandler)
	c.rh, _ = h.(RejectHandler)
	if c.dec == nil {
		c.dec = &c.hd
	}
	c.dec.Init(c.cfg.HeaderTableSize)
	c.initStreams()
	c.out, c.backlog, c.err, c.state = c.out[:0], 0, nil, 0
	c.pending = c.pending[:0]
	c.resets = recentResets{}
	c.peerMax, c.peerWin = MinMaxFrameSize, initialWindow
	c.lastID, c.lastOK, c.nreq = 0, 0, 0
	c.flow = connFlow{send: initialWindow, recv: int64(c.cfg.InitialConnWindow)}
	c.budget.init(&c.cfg)
	c.hdrStream, c.hdrBuf = 0, c.hdrBuf[:0]
	c.queueSettings()
}

// initStreams sizes the stream pool and its table for the configured
// concurrency, keeping memory already allocated.
func (c *Conn) initStreams() {
	n := int(c.cfg.MaxConcurrentStreams)
	if cap(c.streams) < n {
		c.streams, c.free = make([]Stream, n), make([]int32, 0, n)
	}
	c.streams, c.free = c.streams[:n], c.free[:0]
	for i := n - 1; i >= 0; i-- {
		c.streams[i] = Stream{Slot: i}
		c.free = append(c.free, int32(i))
	}
	c.table.init(n)
	c.open = 0
}

// queueSettings queues our SETTINGS frame, only with the values that
// differ from the protocol's initial ones (RFC 9113 section 6.5.2), and the
// connection WINDOW_UPDATE (section 6.9.2).
func (c *Conn) queueSettings() {
	var s [5]Setting
	n := 0
	add := func(id SettingID, v, initial uint32) {
		if v != initial {
			s[n] = Setting{id, v}
			n++
		}
	}
	add(SettingMaxConcurrentStreams, c.cfg.MaxConcurrentStreams, 0)
	add(SettingInitialWindowSize, c.cfg.InitialStreamWindow, initialWindow)
	add(SettingMaxFrameSize, c.cfg.MaxFrameSize, MinMaxFrameSize)
	add(SettingMaxHeaderListSize, c.cfg.MaxHeaderListSize, 0)
	add(SettingHeaderTableSize, c.cfg.HeaderTableSize, DefaultHeaderTableSize)
	c.out = AppendSettings(c.out, s[:n]...)
	if d := c.cfg.InitialConnWindow - initialWindow; d > 0 {
		c.out = AppendWindowUpdate(c.out, 0, d)
	}
}

// Feed parses and handles every complete frame in b, the client preface
// first (all 24 bytes before anything else, RFC 9113 section 3.4), and
// returns how many bytes it used: the rest is an incomplete frame, to be
// given again with more bytes after it. Handler methods run inside Feed.
// A connection error (RFC 9113 section 5.4.1) queues GOAWAY with the last
// stream delivered and the error's code, resets the open streams and is
// returned as an *Error (n is then len(b)): the engine writes Out and
// closes. After a connection error or a completed GOAWAY, Feed consumes
// and ignores everything. Feed keeps no reference to b after it returns.
func (c *Conn) Feed(b []byte) (n int, err error) {
	if c.err != nil {
		return len(b), c.err
	}
	c.finishPending()
	if c.state&flagPreface == 0 {
		if n = c.preface(b); n <= 0 {
			if n < 0 {
				return len(b), c.fail(errPreface)
			}
			return 0, nil
		}
	}
	for c.err == nil && !c.Closed() {
		fh, p, m, ferr := ReadFrame(b[n:], c.cfg.MaxFrameSize)
		if ferr != nil {
			return len(b), c.fail(ferr.(*Error))
		}
		if m == 0 {
			return n, nil
		}
		n += m
		c.nframes++
		if e := c.frame(fh, p); e != nil {
			if e.Stream {
				e = c.streamError(fh.StreamID, e)
			}
			if e != nil {
				return len(b), c.fail(e)
			}
		}
	}
	if c.err != nil {
		return len(b), c.err
	}
	return len(b), nil
}

// preface checks the client preface: it returns 24 once it is complete, 0
// while the bytes so far match its start, and -1 when they do not.
func (c *Conn) preface(b []byte) int {
	k := min(len(b), len(ClientPreface))
	if string(b[:k]) != ClientPreface[:k] {
		return -1
	}
	if k < len(ClientPreface) {
		return 0
	}
	c.state |= flagPreface
	return k
}

// frame handles one frame. It returns a connection error, or a stream
// error of the frame's stream, or nil.
func (c *Conn) frame(fh FrameHeader, p []byte) *Error {
	if c.hdrStream != 0 && (fh.Type != FrameContinuation || fh.StreamID != c.hdrStream) {
		return errExpectCont // RFC 9113 section 6.2, 6.10
	}
	if c.state&flagPeerSet == 0 && (fh.Type != FrameSettings || fh.Flags.Has(FlagAck)) {
		return errFirstSettings // section 3.4
	}
	switch fh.Type {
	case FrameData:
		return c.onData(fh, p)
	case FrameHeaders:
		return c.onHeaders(fh, p)
	case FramePriority:
		return c.onPriority(fh, p)
	case FrameRSTStream:
		return c.onRSTStream(fh, p)
	case FrameSettings:
		return c.onSettings(fh, p)
	case FramePushPromise:
		return errPushPromise // section 8.4
	case FramePing:
		return c.onPing(fh, p)
	case FrameGoAway:
		return c.onGoAway(fh, p)
	case FrameWindowUpdate:
		return c.onWindowUpdate(fh, p)
	case FrameContinuation:
		return c.onContinuation(fh, p)
	}
	return c.budget.idle() // unknown types are ignored (section 5.5), but counted
}

// stream returns the open stream id, or nil when it holds no slot.
func (c *Conn) stream(id uint32) *Stream {
	if i := c.table.get(id); i >= 0 {
		return &c.streams[i]
	}
	return nil
}

// idle reports whether id names an idle stream (RFC 9113 section 5.1): one
// the client has not opened yet, or an even one (we never push).
func (c *Conn) idle(id uint32) bool { return id > c.lastID || id&1 == 0 }

// onPriority parses a PRIORITY frame and otherwise ignores it (RFC 9113
// section 5.3.2): it may name any stream, idle or closed.
func (c *Conn) onPriority(fh FrameHeader, p []byte) *Error {
	if _, err := ParsePriority(fh, p); err != nil {
		return err.(*Error)
	}
	return c.budget.idle()
}

// onRSTStream closes the stream the peer reset (RFC 9113 section 6.4),
// counting it against the reset budget (Rapid Reset, defence.go).
func (c *Conn) onRSTStream(fh FrameHeader, p []byte) *Error {
	code, err := ParseRSTStream(fh, p)
	if err != nil {
		return err.(*Error)
	}
	s := c.stream(fh.StreamID)
	if s == nil {
		if c.idle(fh.StreamID) {
			return errIdleStream
		}
		return c.budget.idle() // closed: ignored (section 5.1)
	}
	if s.requested {
		c.h.Reset(s, code)
	}
	c.closeStream(s, false)
	return c.budget.peerReset()
}

// rejected tells the engine of a request the Conn refused (RejectHandler).
func (c *Conn) rejected(status int) {
	if c.rh != nil {
		c.rh.Rejected(status)
	}
}

// onGoAway records that the peer is going away (RFC 9113 section 6.8): no
// new streams are accepted; the open ones finish.
func (c *Conn) onGoAway(fh FrameHeader, p []byte) *Error {
	if _, _, _, err := ParseGoAway(fh, p); err != nil {
		return err.(*Error)
	}
	c.state |= flagPeerGoAway
	return nil
}

// onPing answers a PING with a PING ACK echoing its data (RFC 9113 section
// 6.7); an ACK is ignored (we send no PING).
func (c *Conn) onPing(fh FrameHeader, p []byte) *Error {
	data, err := ParsePing(fh, p)
	if err != nil {
		return err.(*Error)
	}
	if e := c.budget.idle(); e != nil {
		return e
	}
	if fh.Flags.Has(FlagAck) {
		return nil
	}
	c.out = AppendPing(c.out, true, data)
	return c.queuedControl()
}

// fail raises the connection error e (RFC 9113 section 5.4.1): GOAWAY with
// the last stream delivered and e's code, every open stream reset
// (Handler.Reset with e's code). It returns e.
func (c *Conn) fail(e *Error) error {
	if c.err != nil {
		return c.err
	}
	c.err = e
	c.finishPending()
	c.out = AppendGoAway(c.out, c.lastOK, e.Code, nil)
	c.hdrStream = 0
	for i := range c.streams {
		if s := &c.streams[i]; s.state != stateFree {
			if s.requested {
				c.h.Reset(s, e.Code)
			}
			c.closeStream(s, false)
		}
	}
	return e
}

// Err returns the connection error raised, or nil.
func (c *Conn) Err() error {
	if c.err == nil {
		return nil
	}
	return c.err
}

// Closed reports whether the connection is done: a connection error was
// raised, or a GOAWAY (ours or the peer's) completed with no stream left
// open. The engine closes once Out is written.
func (c *Conn) Closed() bool {
	return c.err != nil || c.state&(flagGoingAway|flagPeerGoAway) != 0 && c.open == 0 && c.hdrStream == 0
}

// Idle reports whether no stream is open (nor a header block half
// received): after a graceful GoAway, the connection may close once Out is
// written.
func (c *Conn) Idle() bool { return c.open == 0 && c.hdrStream == 0 }

// Streams returns the number of open streams (open or half-closed, RFC
// 9113 section 5.1.2).
func (c *Conn) Streams() int { return c.open }

// Out returns the output queued since the last ResetOut, in order: SETTINGS
// first, then ACKs, WINDOW_UPDATE, HEADERS, DATA, RST_STREAM and GOAWAY
// frames as they were produced. It aliases the Conn's buffer, valid until
// the next call into the Conn.
func (c *Conn) Out() []byte { return c.out }

// ResetOut empties the output buffer once the engine has written (or
// copied) Out, keeping its memory.
func (c *Conn) ResetOut() {
	c.out = c.out[:0]
	c.budget.drained(c.backlog)
}

// SetBacklog tells the Conn how many bytes of its output still wait
// downstream (gnet's outbound buffer). Control frames the peer makes us
// queue while Backlog plus len(Out) is over a bound are a flood (RFC 9113
// section 10.5): past a budget, the connection fails with ENHANCE_YOUR_CALM.
func (c *Conn) SetBacklog(n int) {
	c.backlog = n
	c.budget.drained(n + len(c.out))
}

// PeerMaxFrame returns the peer's SETTINGS_MAX_FRAME_SIZE (RFC 9113 section
// 6.5.2): the largest payload of a frame we send.
func (c *Conn) PeerMaxFrame() uint32 { return c.peerMax }

// GoAway shuts the connection down (RFC 9113 section 6.8). With NoError it
// is graceful: GOAWAY names the highest stream delivered, later streams are
// refused (their header blocks are decoded and dropped), the open ones
// finish, and Closed reports true once none remains. Any other code is a
// connection error raised by the engine: GOAWAY with that code, and every
// open stream reset with Handler.Reset, as on any connection error.
func (c *Conn) GoAway(code ErrCode) {
	if c.err != nil {
		return
	}
	if code != NoError {
		c.fail(engineError(code))
		return
	}
	if c.state&flagGoingAway == 0 {
		c.finishPending()
		c.state |= flagGoingAway
		c.out = AppendGoAway(c.out, c.lastOK, NoError, nil)
	}
}
