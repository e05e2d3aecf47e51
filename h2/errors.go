package h2

// ErrCode is an error code of RST_STREAM and GOAWAY frames (RFC 9113
// section 7).
type ErrCode uint32

// The error codes of RFC 9113 section 7.
const (
	NoError            ErrCode = 0x0 // graceful shutdown, or no error
	ProtocolError      ErrCode = 0x1 // unspecific protocol error
	InternalError      ErrCode = 0x2 // unexpected internal error
	FlowControlError   ErrCode = 0x3 // the peer violated flow control
	SettingsTimeout    ErrCode = 0x4 // SETTINGS not acknowledged in time
	StreamClosed       ErrCode = 0x5 // frame received after a stream was half-closed
	FrameSizeError     ErrCode = 0x6 // frame with an invalid size
	RefusedStream      ErrCode = 0x7 // stream refused before any processing
	Cancel             ErrCode = 0x8 // stream no longer needed
	CompressionError   ErrCode = 0x9 // the compression context cannot be kept
	ConnectError       ErrCode = 0xa // the connection of a CONNECT request failed
	EnhanceYourCalm    ErrCode = 0xb // the peer generates excessive load
	InadequateSecurity ErrCode = 0xc // the transport's security is inadequate
	HTTP11Required     ErrCode = 0xd // use HTTP/1.1 instead
)

var errCodeNames = [...]string{
	"NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR",
	"SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM",
	"CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
	"INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
}

// String returns the code's name as RFC 9113 section 7 spells it, or
// "UNKNOWN" for codes it does not define (which mean INTERNAL_ERROR).
func (c ErrCode) String() string {
	if int(c) < len(errCodeNames) {
		return errCodeNames[c]
	}
	return "UNKNOWN"
}

// Error is a protocol error: a connection error (RFC 9113 section 5.4.1)
// unless Stream is set, in which case it is a stream error (section
// 5.4.2) of the stream the frame named. Its message is for logs only. The
// package returns shared, pre-allocated *Error values (returning an error
// does not allocate): callers must not modify them.
type Error struct {
	Code   ErrCode // the code sent in GOAWAY or RST_STREAM
	Stream bool    // a stream error: only the frame's stream is reset
	Reason string  // short fixed text for logs
}

// Error returns the reason and the code's name, for logs.
func (e *Error) Error() string { return "h2: " + e.Reason + " (" + e.Code.String() + ")" }

func connErr(code ErrCode, reason string) *Error { return &Error{Code: code, Reason: reason} }
func streamErr(code ErrCode, reason string) *Error {
	return &Error{Code: code, Stream: true, Reason: reason}
}

// The errors of the frame layer.
var (
	errFrameTooLarge   = connErr(FrameSizeError, "frame larger than SETTINGS_MAX_FRAME_SIZE")
	errStreamZero      = connErr(ProtocolError, "frame needs a stream but names stream 0")
	errStreamNonZero   = connErr(ProtocolError, "connection frame names a stream")
	errPadding         = connErr(ProtocolError, "padding longer than the payload")
	errHeadersSize     = connErr(FrameSizeError, "HEADERS too short for its padding and priority fields")
	errPrioritySize    = streamErr(FrameSizeError, "PRIORITY payload is not 5 octets")
	errRSTSize         = connErr(FrameSizeError, "RST_STREAM payload is not 4 octets")
	errSettingsSize    = connErr(FrameSizeError, "SETTINGS payload is not a multiple of 6 octets")
	errSettingsAckSize = connErr(FrameSizeError, "SETTINGS ACK with a payload")
	errPingSize        = connErr(FrameSizeError, "PING payload is not 8 octets")
	errGoAwaySize      = connErr(FrameSizeError, "GOAWAY payload shorter than 8 octets")
	errWindowSize      = connErr(FrameSizeError, "WINDOW_UPDATE payload is not 4 octets")
	errSelfDependency  = streamErr(ProtocolError, "stream depends on itself")
	errEnablePush      = connErr(ProtocolError, "SETTINGS_ENABLE_PUSH not 0 or 1")
	errInitialWindow   = connErr(FlowControlError, "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1")
	errMaxFrame        = connErr(ProtocolError, "SETTINGS_MAX_FRAME_SIZE out of range")
)
