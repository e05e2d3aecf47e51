package fastcgi

import "errors"

// Record types (FastCGI specification section 8).
const (
	TypeBeginRequest    uint8 = 1
	TypeAbortRequest    uint8 = 2
	TypeEndRequest      uint8 = 3
	TypeParams          uint8 = 4
	TypeStdin           uint8 = 5
	TypeStdout          uint8 = 6
	TypeStderr          uint8 = 7
	TypeData            uint8 = 8
	TypeGetValues       uint8 = 9
	TypeGetValuesResult uint8 = 10
	TypeUnknownType     uint8 = 11
)

// Roles and flags of FCGI_BEGIN_REQUEST, and protocol statuses of
// FCGI_END_REQUEST.
const (
	RoleResponder uint16 = 1
	FlagKeepConn  uint8  = 1 // the application keeps the connection open after the request

	StatusRequestComplete uint8 = 0
	StatusCantMpxConn     uint8 = 1
	StatusOverloaded      uint8 = 2
	StatusUnknownRole     uint8 = 3
)

const (
	// Version is the only FastCGI version there is.
	Version = 1
	// HeaderLen is the length of a record header.
	HeaderLen = 8
	// MaxContent is the most content bytes one record carries.
	MaxContent = 65535
	// MaxRecord is the longest record: header, content and padding.
	MaxRecord = HeaderLen + MaxContent + 255
)

// ErrNeedMore says the buffer holds no complete record (or CGI head) yet:
// keep the bytes, read more and call again with the whole buffer.
var ErrNeedMore = errors.New("fastcgi: need more data")

// Errors of the application's records. Each means the connection's
// framing is in doubt: close it.
var (
	ErrVersion    = errors.New("fastcgi: record version is not 1")
	ErrRecordType = errors.New("fastcgi: record type a web server never receives")
	ErrEndRequest = errors.New("fastcgi: FCGI_END_REQUEST body is not 8 bytes")
	ErrParams     = errors.New("fastcgi: malformed name-value pair")
)

// Record is one record. Content aliases the buffer it was parsed from and
// is valid as long as that buffer is.
type Record struct {
	Type    uint8
	ID      uint16 // the request it belongs to; 0 for management records
	Content []byte
}

// Parse frames the record at the start of b, as the web server receives
// it from an application: it returns the record and the bytes it takes
// (header, content and padding), or ErrNeedMore when b holds less. Only
// the types an application sends are accepted (FCGI_STDOUT,
// FCGI_STDERR, FCGI_END_REQUEST, FCGI_GET_VALUES_RESULT,
// FCGI_UNKNOWN_TYPE); the record's length cannot exceed MaxRecord, so a
// caller that keeps at most MaxRecord unparsed bytes is bounded.
func Parse(b []byte) (Record, int, error) {
	if len(b) < HeaderLen {
		if len(b) > 0 && b[0] != Version {
			return Record{}, 0, ErrVersion
		}
		return Record{}, 0, ErrNeedMore
	}
	if b[0] != Version {
		return Record{}, 0, ErrVersion
	}
	t := b[1]
	switch t {
	case TypeStdout, TypeStderr, TypeEndRequest, TypeGetValuesResult, TypeUnknownType:
	default:
		return Record{}, 0, ErrRecordType
	}
	id := uint16(b[2])<<8 | uint16(b[3])
	clen := int(b[4])<<8 | int(b[5])
	n := HeaderLen + clen + int(b[6])
	if len(b) < n {
		return Record{}, 0, ErrNeedMore
	}
	end := HeaderLen + clen
	return Record{Type: t, ID: id, Content: b[HeaderLen:end:end]}, n, nil
}

// ParseEndRequest reads the body of an FCGI_END_REQUEST record: the
// application's exit status and the protocol status.
func ParseEndRequest(content []byte) (appStatus uint32, protoStatus uint8, err error) {
	if len(content) != 8 {
		return 0, 0, ErrEndRequest
	}
	appStatus = uint32(content[0])<<24 | uint32(content[1])<<16 | uint32(content[2])<<8 | uint32(content[3])
	return appStatus, content[4], nil
}

// AppendHeader appends a record header for contentLen content bytes and
// no padding.
func AppendHeader(dst []byte, typ uint8, id uint16, contentLen int) []byte {
	return append(dst, Version, typ, byte(id>>8), byte(id), byte(contentLen>>8), byte(contentLen), 0, 0)
}

// AppendBeginRequest appends an FCGI_BEGIN_REQUEST record for role, with
// flags (FlagKeepConn).
func AppendBeginRequest(dst []byte, id uint16, role uint16, flags uint8) []byte {
	dst = AppendHeader(dst, TypeBeginRequest, id, 8)
	return append(dst, byte(role>>8), byte(role), flags, 0, 0, 0, 0, 0)
}

// AppendAbortRequest appends an FCGI_ABORT_REQUEST record.
func AppendAbortRequest(dst []byte, id uint16) []byte {
	return AppendHeader(dst, TypeAbortRequest, id, 0)
}

// AppendStream appends p as records of stream type typ (FCGI_PARAMS,
// FCGI_STDIN), in pieces of at most MaxContent bytes. An empty p appends
// nothing: the empty record that ends a stream is AppendHeader(dst, typ,
// id, 0).
func AppendStream(dst []byte, typ uint8, id uint16, p []byte) []byte {
	for len(p) > 0 {
		n := min(len(p), MaxContent)
		dst = AppendHeader(dst, typ, id, n)
		dst = append(dst, p[:n]...)
		p = p[n:]
	}
	return dst
}
