package h2

import "encoding/binary"

// The payload parsers check one frame's payload against its type's rules
// (RFC 9113 section 6) and return its fields, aliasing the payload. Errors
// are *Error values; none allocates.

// Priority holds the deprecated priority fields of HEADERS and PRIORITY
// frames (RFC 9113 section 5.3.2, 6.3). They are parsed and ignored but for
// the self-dependency check.
type Priority struct {
	StreamDep uint32 // stream dependency, 31 bits
	Exclusive bool   // the E flag
	Weight    uint8  // weight minus one
}

// ParseData returns a DATA frame's data with the padding stripped (RFC
// 9113 section 6.1): stream 0 is a connection error of type
// PROTOCOL_ERROR, and so is padding that does not fit the payload.
func ParseData(fh FrameHeader, p []byte) ([]byte, error) {
	if fh.StreamID == 0 {
		return nil, errStreamZero
	}
	return unpad(fh, p)
}

// unpad strips the Pad Length octet and the padding when PADDED is set
// (RFC 9113 section 6.1, 6.2).
func unpad(fh FrameHeader, p []byte) ([]byte, error) {
	if !fh.Flags.Has(FlagPadded) {
		return p, nil
	}
	if len(p) == 0 || int(p[0]) >= len(p) {
		return nil, errPadding
	}
	return p[1 : len(p)-int(p[0])], nil
}

// ParseHeaders returns a HEADERS frame's field block fragment and priority
// fields (RFC 9113 section 6.2): stream 0 and padding longer than what
// remains are connection errors of type PROTOCOL_ERROR, a payload too short
// for the PRIORITY fields one of type FRAME_SIZE_ERROR, and a stream that
// depends on itself a stream error of type PROTOCOL_ERROR (section 5.3.1).
func ParseHeaders(fh FrameHeader, p []byte) (block []byte, prio Priority, err error) {
	if fh.StreamID == 0 {
		return nil, prio, errStreamZero
	}
	pad := 0
	if fh.Flags.Has(FlagPadded) {
		if len(p) == 0 {
			return nil, prio, errHeadersSize
		}
		pad = int(p[0])
		p = p[1:]
	}
	if fh.Flags.Has(FlagPriority) {
		if len(p) < 5 {
			return nil, prio, errHeadersSize
		}
		prio = parsePriority(p)
		p = p[5:]
	}
	if pad > len(p) {
		return nil, prio, errPadding
	}
	if fh.Flags.Has(FlagPriority) && prio.StreamDep == fh.StreamID {
		return nil, prio, errSelfDependency
	}
	return p[:len(p)-pad], prio, nil
}

func parsePriority(p []byte) Priority {
	v := binary.BigEndian.Uint32(p)
	return Priority{StreamDep: v & (1<<31 - 1), Exclusive: v>>31 == 1, Weight: p[4]}
}

// ParsePriority returns a PRIORITY frame's fields (RFC 9113 section 6.3):
// stream 0 is a connection error of type PROTOCOL_ERROR, a payload other
// than 5 octets a stream error of type FRAME_SIZE_ERROR, and a stream that
// depends on itself a stream error of type PROTOCOL_ERROR.
func ParsePriority(fh FrameHeader, p []byte) (Priority, error) {
	if fh.StreamID == 0 {
		return Priority{}, errStreamZero
	}
	if len(p) != 5 {
		return Priority{}, errPrioritySize
	}
	prio := parsePriority(p)
	if prio.StreamDep == fh.StreamID {
		return prio, errSelfDependency
	}
	return prio, nil
}

// ParseRSTStream returns a RST_STREAM frame's error code (RFC 9113 section
// 6.4): stream 0 is a connection error of type PROTOCOL_ERROR, a payload
// other than 4 octets one of type FRAME_SIZE_ERROR.
func ParseRSTStream(fh FrameHeader, p []byte) (ErrCode, error) {
	if fh.StreamID == 0 {
		return 0, errStreamZero
	}
	if len(p) != 4 {
		return 0, errRSTSize
	}
	return ErrCode(binary.BigEndian.Uint32(p)), nil
}

// ParseSettings checks a SETTINGS frame (RFC 9113 section 6.5) and returns
// how many settings it holds, read with SettingAt: a stream other than 0
// is a connection error of type PROTOCOL_ERROR; a payload that is not a
// multiple of 6 octets, or any payload with ACK, one of type
// FRAME_SIZE_ERROR. The values are checked by the receiver (section 6.5.2).
func ParseSettings(fh FrameHeader, p []byte) (int, error) {
	if fh.StreamID != 0 {
		return 0, errStreamNonZero
	}
	if fh.Flags.Has(FlagAck) {
		if len(p) != 0 {
			return 0, errSettingsAckSize
		}
		return 0, nil
	}
	if len(p)%6 != 0 {
		return 0, errSettingsSize
	}
	return len(p) / 6, nil
}

// SettingAt returns the i-th setting of a SETTINGS payload checked by
// ParseSettings.
func SettingAt(p []byte, i int) Setting {
	p = p[6*i : 6*i+6]
	return Setting{ID: SettingID(binary.BigEndian.Uint16(p)), Val: binary.BigEndian.Uint32(p[2:])}
}

// ParsePing returns a PING frame's opaque data (RFC 9113 section 6.7): a
// stream other than 0 is a connection error of type PROTOCOL_ERROR, a
// payload other than 8 octets one of type FRAME_SIZE_ERROR.
func ParsePing(fh FrameHeader, p []byte) (data [8]byte, err error) {
	if fh.StreamID != 0 {
		return data, errStreamNonZero
	}
	if len(p) != 8 {
		return data, errPingSize
	}
	copy(data[:], p)
	return data, nil
}

// ParseGoAway returns a GOAWAY frame's fields (RFC 9113 section 6.8): a
// stream other than 0 is a connection error of type PROTOCOL_ERROR, a
// payload shorter than 8 octets one of type FRAME_SIZE_ERROR. debug aliases
// p.
func ParseGoAway(fh FrameHeader, p []byte) (last uint32, code ErrCode, debug []byte, err error) {
	if fh.StreamID != 0 {
		return 0, 0, nil, errStreamNonZero
	}
	if len(p) < 8 {
		return 0, 0, nil, errGoAwaySize
	}
	return binary.BigEndian.Uint32(p) & (1<<31 - 1), ErrCode(binary.BigEndian.Uint32(p[4:])), p[8:], nil
}

// ParseWindowUpdate returns a WINDOW_UPDATE frame's increment (RFC 9113
// section 6.9): a payload other than 4 octets is a connection error of type
// FRAME_SIZE_ERROR. An increment of 0 is returned as it is: it is a stream
// error on a stream and a connection error on stream 0, which the receiver
// decides.
func ParseWindowUpdate(fh FrameHeader, p []byte) (uint32, error) {
	if len(p) != 4 {
		return 0, errWindowSize
	}
	return binary.BigEndian.Uint32(p) & (1<<31 - 1), nil
}

// ParseContinuation checks a CONTINUATION frame (RFC 9113 section 6.10):
// stream 0 is a connection error of type PROTOCOL_ERROR. The whole payload
// is the field block fragment.
func ParseContinuation(fh FrameHeader, p []byte) ([]byte, error) {
	if fh.StreamID == 0 {
		return nil, errStreamZero
	}
	return p, nil
}

// checkSetting validates one setting's value (RFC 9113 section 6.5.2).
// Unknown settings are ignored.
func checkSetting(s Setting) *Error {
	switch s.ID {
	case SettingEnablePush:
		if s.Val > 1 {
			return errEnablePush
		}
	case SettingInitialWindowSize:
		if s.Val > maxWindow {
			return errInitialWindow
		}
	case SettingMaxFrameSize:
		if s.Val < MinMaxFrameSize || s.Val > MaxMaxFrameSize {
			return errMaxFrame
		}
	}
	return nil
}
