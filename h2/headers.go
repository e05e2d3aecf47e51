package h2

import (
	"gale/codec"
	"gale/h2/hpack"
)

// blockSlack is how far a header block may grow past MaxHeaderListSize
// while it accumulates: an encoded block can be a little longer than the
// list it decodes to (Huffman codes of rare bytes are longer than 8 bits),
// and a list just over the limit must still decode, for the 431 answer.
const blockSlack = 4096

// maxBlock is the largest header block gathered across CONTINUATION frames
// (RFC 9113 section 10.5.1; the CONTINUATION flood, CVE-2024-27316).
func (c *Conn) maxBlock() int { return 2*int(c.cfg.MaxHeaderListSize) + blockSlack }

var errBlockTooLarge = connErr(EnhanceYourCalm, "header block over the limit across CONTINUATION frames")

// onHeaders handles a HEADERS frame (RFC 9113 section 6.2): a header block
// complete in one frame is decoded straight from the input; one continued
// in CONTINUATION frames is gathered first (section 4.3).
func (c *Conn) onHeaders(fh FrameHeader, p []byte) *Error {
	block, _, err := ParseHeaders(fh, p)
	bad := false
	if err != nil {
		if e := err.(*Error); !e.Stream {
			return e
		}
		// A self-dependency: the block must still be decoded, to keep the
		// HPACK context in sync, before the stream is reset.
		bad = true
		block = headersBlock(fh, p)
	}
	if fh.StreamID&1 == 0 {
		return errEvenStream // section 5.1.1
	}
	if !fh.Flags.Has(FlagEndHeaders) {
		if len(block) > c.maxBlock() {
			return errBlockTooLarge
		}
		c.hdrStream, c.hdrFlags, c.hdrBad = fh.StreamID, fh.Flags, bad
		c.hdrBuf = append(c.hdrBuf[:0], block...)
		return nil
	}
	return c.headerBlock(fh.StreamID, fh.Flags.Has(FlagEndStream), bad, block)
}

// headersBlock returns a HEADERS payload's block without checking the
// priority fields, once ParseHeaders found only a self-dependency.
func headersBlock(fh FrameHeader, p []byte) []byte {
	pad := 0
	if fh.Flags.Has(FlagPadded) {
		pad = int(p[0])
		p = p[1:]
	}
	if fh.Flags.Has(FlagPriority) {
		p = p[5:]
	}
	return p[:len(p)-pad]
}

// onContinuation gathers a CONTINUATION frame's fragment (RFC 9113 section
// 6.10) and handles the block once END_HEADERS ends it. The gathered block
// is bounded (maxBlock), and every CONTINUATION frame counts as a frame
// without progress (defence.go): a request needs one or two, and a flood of
// tiny ones stops at the idle budget, not at the byte bound.
func (c *Conn) onContinuation(fh FrameHeader, p []byte) *Error {
	frag, err := ParseContinuation(fh, p)
	if err != nil {
		return err.(*Error)
	}
	if c.hdrStream == 0 {
		return errUnexpectedCont
	}
	if e := c.budget.idle(); e != nil {
		return e
	}
	if len(c.hdrBuf)+len(frag) > c.maxBlock() {
		return errBlockTooLarge
	}
	c.hdrBuf = append(c.hdrBuf, frag...)
	if !fh.Flags.Has(FlagEndHeaders) {
		return nil
	}
	id := c.hdrStream
	c.hdrStream = 0
	return c.headerBlock(id, c.hdrFlags.Has(FlagEndStream), c.hdrBad, c.hdrBuf)
}

// decode decodes a complete header block into c.fields. tooLarge reports a
// list over MaxHeaderListSize (the fields that fit were kept); any other
// decoding error is a connection error of type COMPRESSION_ERROR (RFC 9113
// section 4.3).
func (c *Conn) decode(block []byte) (tooLarge bool, e *Error) {
	var err error
	c.fields, err = c.dec.Decode(c.fields[:0], block, c.cfg.MaxHeaderListSize)
	switch err {
	case nil:
		return false, nil
	case hpack.ErrListTooLarge:
		return true, nil
	}
	return false, errCompression
}

// headerBlock handles a complete header block on stream id: a new request,
// trailers of an open one, or a block on a closed or refused stream, which
// is decoded (the HPACK context is shared by the connection) and dropped.
func (c *Conn) headerBlock(id uint32, end, bad bool, block []byte) *Error {
	tooLarge, e := c.decode(block)
	if e != nil {
		return e
	}
	if s := c.stream(id); s != nil {
		if bad {
			return errSelfDependency
		}
		return c.trailers(s, end)
	}
	if id <= c.lastID {
		// A closed stream (section 5.1): ignored after our RST_STREAM;
		// otherwise the stream ended, or was never opened and closed
		// when a higher one opened (section 5.1.1). Either way the
		// client reuses an identifier, which no later frame can make
		// sense of: a connection error, as x/net and nginx make it.
		if c.resets.has(id) {
			return c.budget.idle()
		}
		return errClosedHeaders
	}
	c.lastID = id
	if bad {
		c.rejected(400)
		return errSelfDependency
	}
	if c.state&(flagGoingAway|flagPeerGoAway) != 0 {
		// After GOAWAY, streams past the last one are ignored (section 6.8).
		return c.budget.idle()
	}
	if len(c.free) == 0 {
		c.rejected(503)
		return errRefused // section 5.1.2
	}
	if e := c.buildRequest(end, tooLarge); e != nil {
		if tooLarge {
			c.rejected(431)
			return c.answer431(id, end)
		}
		c.rejected(400)
		return e
	}
	return c.openStream(id, end, tooLarge)
}

// status431 is the header block ":status: 431".
var status431 = hpack.AppendStatus(nil, 431)

// answer431 answers a request whose field list is over MaxHeaderListSize
// and lost pseudo-header fields to the limit, so that it cannot reach the
// Handler: 431 (RFC 6585 section 5) with END_STREAM, and RST_STREAM
// NO_ERROR when the request has a body (RFC 9113 section 8.1). It counts
// as a frame without progress.
func (c *Conn) answer431(id uint32, end bool) *Error {
	c.out = c.appendHeaderBlock(id, true, status431)
	if !end {
		c.out = AppendRSTStream(c.out, id, NoError)
		c.resets.add(id)
	}
	return c.budget.idle()
}

// openStream gives stream id a slot and hands its request to the Handler.
// The stream may be answered and closed inside Request: nothing of it is
// touched after.
func (c *Conn) openStream(id uint32, end, tooLarge bool) *Error {
	slot := c.free[len(c.free)-1]
	c.free = c.free[:len(c.free)-1]
	s := &c.streams[slot]
	*s = Stream{
		ID:          id,
		Slot:        int(slot),
		BodyFollows: !end,
		TooLarge:    tooLarge,
		state:       stateOpen,
		requested:   true,
		sendWindow:  c.peerWin,
		recvWindow:  c.streamRecvWindow(),
		length:      c.req.ContentLength,
	}
	if end {
		s.state = stateHalfClosedRemote
	}
	c.table.put(id, int(slot))
	c.open++
	c.nreq++
	c.lastOK = id
	c.h.Request(s, &c.req)
	if c.nreq >= c.cfg.MaxRequests {
		c.GoAway(NoError)
	}
	return nil
}

// trailers handles a second header block on an open stream: trailers,
// which end the stream (RFC 9113 section 8.1) and hold no pseudo-header
// fields. A stream the peer already ended is closed to it (section 5.1).
func (c *Conn) trailers(s *Stream, end bool) *Error {
	if s.peerEnded() {
		return errStreamClosed
	}
	if !end {
		return errTrailersNoEnd
	}
	fs, e := c.trailerFields()
	if e != nil {
		return e
	}
	if s.length >= 0 && s.received != s.length {
		return errLength
	}
	if s.localEnded() {
		c.closeStream(s, true)
		return nil
	}
	s.state = stateHalfClosedRemote
	if c.th != nil {
		c.th.Trailers(s, fs)
	}
	if s.state != stateFree {
		c.h.Data(s, nil, true)
	}
	return nil
}

// trailerFields validates the decoded trailer fields as regular fields
// (RFC 9113 section 8.2) and returns them as codec headers.
func (c *Conn) trailerFields() ([]codec.Header, *Error) {
	hs := c.headers[:0]
	for _, f := range c.fields {
		if len(f.Name) > 0 && f.Name[0] == ':' {
			return nil, errPseudoInTrailers
		}
		if e := checkField(f.Name, f.Value); e != nil {
			return nil, e
		}
		hs = append(hs, codec.Header{Name: f.Name, Value: f.Value})
	}
	c.headers = hs
	return hs, nil
}
