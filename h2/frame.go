package h2

import "encoding/binary"

// FrameType is the type of a frame (RFC 9113 section 4.1 and section 6).
type FrameType uint8

// The frame types of RFC 9113 section 6. Frames of any other type are
// ignored (section 4.1, section 5.5).
const (
	FrameData         FrameType = 0x0 // section 6.1
	FrameHeaders      FrameType = 0x1 // section 6.2
	FramePriority     FrameType = 0x2 // section 6.3 (deprecated, parsed and ignored)
	FrameRSTStream    FrameType = 0x3 // section 6.4
	FrameSettings     FrameType = 0x4 // section 6.5
	FramePushPromise  FrameType = 0x5 // section 6.6 (a client must not send it)
	FramePing         FrameType = 0x6 // section 6.7
	FrameGoAway       FrameType = 0x7 // section 6.8
	FrameWindowUpdate FrameType = 0x8 // section 6.9
	FrameContinuation FrameType = 0x9 // section 6.10
)

// Flags holds a frame's flags; their meaning depends on the frame type
// (RFC 9113 section 4.1).
type Flags uint8

// The flags defined by RFC 9113 section 6.
const (
	FlagEndStream  Flags = 0x1  // DATA, HEADERS: the sender's last frame on the stream (section 6.1, 6.2)
	FlagAck        Flags = 0x1  // SETTINGS, PING: an acknowledgement (section 6.5, 6.7)
	FlagEndHeaders Flags = 0x4  // HEADERS, CONTINUATION: the header block ends in this frame (section 6.2, 6.10)
	FlagPadded     Flags = 0x8  // DATA, HEADERS: a Pad Length octet and padding are present (section 6.1, 6.2)
	FlagPriority   Flags = 0x20 // HEADERS: the deprecated priority fields are present (section 6.2)
)

// Has reports whether every flag in v is set in f.
func (f Flags) Has(v Flags) bool { return f&v == v }

// FrameHeaderLen is the size of a frame header (RFC 9113 section 4.1).
const FrameHeaderLen = 9

// Frame size limits of RFC 9113 section 4.2 and section 6.5.2.
const (
	MinMaxFrameSize = 1 << 14   // the initial and smallest SETTINGS_MAX_FRAME_SIZE
	MaxMaxFrameSize = 1<<24 - 1 // the largest SETTINGS_MAX_FRAME_SIZE
	maxWindow       = 1<<31 - 1 // the largest flow-control window (section 6.9.1)
	initialWindow   = 65535     // the initial flow-control window (section 6.9.2)
)

// FrameHeader is the fixed 9-octet header of every frame (RFC 9113 section
// 4.1). The reserved bit of the stream identifier is dropped on reading
// and sent as zero.
type FrameHeader struct {
	Length   uint32    // payload length, 24 bits
	Type     FrameType // frame type
	Flags    Flags     // type-specific flags
	StreamID uint32    // 31-bit stream identifier, 0 for the connection
}

// ReadFrame parses one frame from the start of b, h2o style: it returns the
// header, the payload (aliasing b) and the number of bytes the frame
// occupies, or n == 0 and a nil error when b holds no complete frame yet
// (call again with more bytes). A frame longer than maxSize is a
// connection error of type FRAME_SIZE_ERROR (RFC 9113 section 4.2), seen
// from the 9-byte header alone, before its payload arrives. The payload is
// not checked against its type's rules: the Parse functions do that.
// ReadFrame does not allocate and keeps no reference to b.
func ReadFrame(b []byte, maxSize uint32) (fh FrameHeader, payload []byte, n int, err error) {
	if len(b) < FrameHeaderLen {
		return fh, nil, 0, nil
	}
	fh = FrameHeader{
		Length:   uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]),
		Type:     FrameType(b[3]),
		Flags:    Flags(b[4]),
		StreamID: binary.BigEndian.Uint32(b[5:9]) & (1<<31 - 1),
	}
	if fh.Length > maxSize {
		return fh, nil, 0, errFrameTooLarge
	}
	end := FrameHeaderLen + int(fh.Length)
	if len(b) < end {
		return fh, nil, 0, nil
	}
	return fh, b[FrameHeaderLen:end:end], end, nil
}

// AppendFrameHeader appends the 9-octet frame header fh to dst (RFC 9113
// section 4.1). fh.Length must fit 24 bits.
func AppendFrameHeader(dst []byte, fh FrameHeader) []byte {
	return append(dst,
		byte(fh.Length>>16), byte(fh.Length>>8), byte(fh.Length),
		byte(fh.Type), byte(fh.Flags),
		byte(fh.StreamID>>24)&0x7f, byte(fh.StreamID>>16), byte(fh.StreamID>>8), byte(fh.StreamID))
}

// AppendData appends one DATA frame carrying p on stream to dst, with
// END_STREAM when end is set (RFC 9113 section 6.1). The caller keeps p
// within the peer's maximum frame size and flow-control windows.
func AppendData(dst []byte, stream uint32, end bool, p []byte) []byte {
	var f Flags
	if end {
		f = FlagEndStream
	}
	dst = AppendFrameHeader(dst, FrameHeader{Length: uint32(len(p)), Type: FrameData, Flags: f, StreamID: stream})
	return append(dst, p...)
}

// AppendHeaders appends the header block as a HEADERS frame followed by as
// many CONTINUATION frames as frames of at most maxFrame payload bytes need
// (RFC 9113 section 6.2, 6.10); the last carries END_HEADERS. end sets
// END_STREAM on the HEADERS frame. maxFrame below 16384 counts as 16384.
func AppendHeaders(dst []byte, stream uint32, end bool, block []byte, maxFrame uint32) []byte {
	return appendHeaders(dst, stream, end, nil, block, maxFrame)
}

// appendHeaders is AppendHeaders for a block made of prefix followed by
// block, so that a prefix needs no copy of the block.
func appendHeaders(dst []byte, stream uint32, end bool, prefix, block []byte, maxFrame uint32) []byte {
	if maxFrame < MinMaxFrameSize {
		maxFrame = MinMaxFrameSize
	}
	t, f := FrameHeaders, Flags(0)
	if end {
		f = FlagEndStream
	}
	for first := true; first || len(prefix)+len(block) > 0; first = false {
		n := len(prefix) + len(block)
		if n > int(maxFrame) {
			n = int(maxFrame)
		} else {
			f |= FlagEndHeaders
		}
		dst = AppendFrameHeader(dst, FrameHeader{Length: uint32(n), Type: t, Flags: f, StreamID: stream})
		k := min(n, len(prefix))
		dst = append(dst, prefix[:k]...)
		prefix = prefix[k:]
		dst = append(dst, block[:n-k]...)
		block = block[n-k:]
		t, f = FrameContinuation, 0
	}
	return dst
}

// SettingID identifies a setting (RFC 9113 section 6.5.2).
type SettingID uint16

// The settings of RFC 9113 section 6.5.2. Unknown identifiers are ignored.
const (
	SettingHeaderTableSize      SettingID = 0x1
	SettingEnablePush           SettingID = 0x2
	SettingMaxConcurrentStreams SettingID = 0x3
	SettingInitialWindowSize    SettingID = 0x4
	SettingMaxFrameSize         SettingID = 0x5
	SettingMaxHeaderListSize    SettingID = 0x6
)

// Setting is one setting parameter of a SETTINGS frame (RFC 9113 section
// 6.5.1).
type Setting struct {
	ID  SettingID
	Val uint32
}

// AppendSettings appends a SETTINGS frame holding s on stream 0 (RFC 9113
// section 6.5).
func AppendSettings(dst []byte, s ...Setting) []byte {
	dst = AppendFrameHeader(dst, FrameHeader{Length: uint32(6 * len(s)), Type: FrameSettings})
	for _, v := range s {
		dst = append(dst, byte(v.ID>>8), byte(v.ID), byte(v.Val>>24), byte(v.Val>>16), byte(v.Val>>8), byte(v.Val))
	}
	return dst
}

// AppendSettingsAck appends an empty SETTINGS frame with ACK (RFC 9113
// section 6.5.3).
func AppendSettingsAck(dst []byte) []byte {
	return AppendFrameHeader(dst, FrameHeader{Type: FrameSettings, Flags: FlagAck})
}

// AppendPing appends a PING frame with the 8 octets of data, with ACK when
// ack is set (RFC 9113 section 6.7).
func AppendPing(dst []byte, ack bool, data [8]byte) []byte {
	var f Flags
	if ack {
		f = FlagAck
	}
	dst = AppendFrameHeader(dst, FrameHeader{Length: 8, Type: FramePing, Flags: f})
	return append(dst, data[:]...)
}

// AppendGoAway appends a GOAWAY frame naming last as the last stream
// processed, with the error code and optional debug data (RFC 9113 section
// 6.8).
func AppendGoAway(dst []byte, last uint32, code ErrCode, debug []byte) []byte {
	dst = AppendFrameHeader(dst, FrameHeader{Length: uint32(8 + len(debug)), Type: FrameGoAway})
	dst = binary.BigEndian.AppendUint32(dst, last&(1<<31-1))
	dst = binary.BigEndian.AppendUint32(dst, uint32(code))
	return append(dst, debug...)
}

// AppendRSTStream appends a RST_STREAM frame for stream with the error
// code (RFC 9113 section 6.4).
func AppendRSTStream(dst []byte, stream uint32, code ErrCode) []byte {
	dst = AppendFrameHeader(dst, FrameHeader{Length: 4, Type: FrameRSTStream, StreamID: stream})
	return binary.BigEndian.AppendUint32(dst, uint32(code))
}

// AppendWindowUpdate appends a WINDOW_UPDATE frame granting incr octets on
// stream, 0 for the connection (RFC 9113 section 6.9). incr must be in
// 1..2^31-1.
func AppendWindowUpdate(dst []byte, stream uint32, incr uint32) []byte {
	dst = AppendFrameHeader(dst, FrameHeader{Length: 4, Type: FrameWindowUpdate, StreamID: stream})
	return binary.BigEndian.AppendUint32(dst, incr&(1<<31-1))
}
