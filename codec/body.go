package codec

import (
	"bytes"

	"gale/config"
)

// Bounds on what a chunked body may carry besides its payload.
const (
	// MaxChunkExtBytes bounds the chunk extensions of one body, all chunks
	// together (from each ";" to the CRLF): they are parsed and dropped,
	// and a sender must not be able to make us read unbounded framing for
	// a small payload. Over it: 400.
	MaxChunkExtBytes = 2048

	// MaxTrailerBytes bounds the trailer section of one chunked body (its
	// field lines with their CRLFs). Trailers are parsed and dropped.
	// Over it: 400, like any other framing error in a body.
	MaxTrailerBytes = 8192

	// maxSizeDigits bounds the hex digits of a chunk-size, leading zeros
	// included (net/http allows the same 16).
	maxSizeDigits = 16
)

var (
	errChunkSize    = &Error{400, "malformed chunk size"}
	errChunkExt     = &Error{400, "malformed chunk extension"}
	errChunkExtSize = &Error{400, "chunk extensions too long"}
	errChunkEnd     = &Error{400, "chunk data not followed by CRLF"}
	errTrailer      = &Error{400, "malformed trailer field"}
	errTrailerSize  = &Error{400, "trailer section too long"}
)

// The states of a BodyReader. Chunked bodies (RFC 9112 section 7.1):
//
//	chunked-body   = *chunk last-chunk trailer-section CRLF
//	chunk          = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//	chunk-size     = 1*HEXDIG
//	last-chunk     = 1*("0") [ chunk-ext ] CRLF
//	chunk-ext      = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
//	chunk-ext-name = token
//	chunk-ext-val  = token / quoted-string
//	trailer-section = *( field-line CRLF )
const (
	stDone          uint8 = iota // the whole body was consumed
	stLength                     // Content-Length payload
	stSizeFirst                  // first hex digit of a chunk-size
	stSize                       // more hex digits, or what follows them
	stExtBWS                     // BWS after the size or a value: ";" must follow
	stExtName0                   // after ";": BWS, then a name
	stExtName                    // in a name
	stExtNameBWS                 // BWS after a name: "=" or ";" must follow
	stExtVal0                    // after "=": BWS, then a token or a quoted-string
	stExtToken                   // in a token value
	stExtQuoted                  // in a quoted-string
	stExtQuotedPair              // after a backslash in a quoted-string
	stExtQuotedEnd               // after the closing quote
	stSizeLF                     // after the CR ending a chunk-size line
	stData                       // chunk-data
	stDataCR                     // the CR after chunk-data
	stDataLF                     // the LF after chunk-data
	stTrailerStart               // start of a trailer line, or the final CRLF
	stTrailerName                // in a trailer field name
	stTrailerValue               // in a trailer field value
	stTrailerLF                  // the LF ending a trailer line
	stFinalLF                    // the LF of the final CRLF
)

// BodyReader frames a request body (Content-Length or chunked) out of
// bytes as they arrive, without copying. Reuse it per request with Init.
// It holds no reference to the bytes it is given between calls. It is not
// safe for concurrent use; its zero value is a finished empty body.
//
// Chunk extensions are parsed (RFC 9112 section 7.1.1) and dropped, up to
// MaxChunkExtBytes per body; trailer fields are validated like header
// fields (a token name, a colon with no whitespace before it, a value of
// VCHAR, obs-text, SP and HTAB, no obs-fold, CRLF line endings) and
// dropped (kept in Keep when it is set), up to MaxTrailerBytes. A
// chunk-size has at most 16 hex digits.
type BodyReader struct {
	state     uint8
	digits    uint8  // hex digits of the current chunk-size
	remaining uint64 // payload bytes left in the body (Content-Length) or in the chunk
	total     int64  // payload bytes framed so far (chunked)
	max       int64  // most payload bytes
	ext       int    // chunk-extension bytes so far
	trailer   int    // trailer-section bytes so far
	err       error  // sticky

	// Keep, when set (after Init), receives the trailer section's field
	// lines as they are validated, each with its CRLF, for a caller that
	// relays them (ParseTrailers); it grows by at most MaxTrailerBytes.
	Keep *[]byte
}

// Init prepares b for the body of r, bounded by max bytes of payload
// (max <= 0: config.DefaultBodyBytes). A request without a body gives a body that
// is done at once. A Content-Length over max makes the first Next fail
// with 413.
func (b *BodyReader) Init(r *Request, max int64) {
	if max <= 0 {
		max = config.DefaultBodyBytes
	}
	*b = BodyReader{max: max}
	switch {
	case r.Chunked:
		b.state = stSizeFirst
	case r.ContentLength > max:
		b.err = errBodyTooLarge
	case r.ContentLength > 0:
		b.state = stLength
		b.remaining = uint64(r.ContentLength)
	default:
		b.state = stDone
	}
}

// Next frames the next piece of body from in. It returns how many bytes of
// in it consumed, a payload segment (a subslice of in, possibly empty), and
// done once the whole body (for chunked: through the trailers and final
// CRLF) has been consumed. Call it repeatedly while it consumes bytes; when
// it consumes none and is not done, it needs more input. Errors are *Error
// (400 for bad chunk syntax, 413 over max); after one, Next returns it
// again and consumes nothing.
//
// A call consumes framing bytes up to and including at most one payload
// segment: the payload is in[consumed-len(payload):consumed]. It aliases
// in; bytes after consumed (the next request, when done) are left alone.
func (b *BodyReader) Next(in []byte) (consumed int, payload []byte, done bool, err error) {
	if b.err != nil {
		return 0, nil, false, b.err
	}
	switch b.state {
	case stDone:
		return 0, nil, true, nil
	case stLength:
		n := len(in)
		if uint64(n) > b.remaining {
			n = int(b.remaining)
		}
		b.remaining -= uint64(n)
		if b.remaining == 0 {
			b.state = stDone
		}
		return n, in[:n:n], b.state == stDone, nil
	}
	i := 0
	for i < len(in) {
		if b.state == stData {
			n := len(in) - i
			if uint64(n) > b.remaining {
				n = int(b.remaining)
			}
			b.remaining -= uint64(n)
			if b.remaining == 0 {
				b.state = stDataCR
			}
			return i + n, in[i : i+n : i+n], false, nil
		}
		c := in[i]
		i++
		if err := b.step(c); err != nil {
			b.err = err
			return 0, nil, false, err
		}
		if b.state == stDone {
			return i, nil, true, nil
		}
	}
	return i, nil, false, nil
}

// step advances the chunked-body state machine by one framing byte.
func (b *BodyReader) step(c byte) error {
	k := charClass[c]
	switch b.state {
	case stSizeFirst, stSize:
		if k&cHex != 0 {
			if b.digits == maxSizeDigits {
				return errChunkSize
			}
			b.digits++
			b.remaining = b.remaining<<4 | uint64(unhex(c))
			b.state = stSize
			return nil
		}
		if b.state == stSizeFirst {
			return errChunkSize
		}
		switch c {
		case '\r':
			b.state = stSizeLF
			return nil
		case ';':
			b.state = stExtName0
		case ' ', '\t':
			b.state = stExtBWS
		default:
			return errChunkSize
		}
	case stSizeLF:
		if c != '\n' {
			return errChunkSize
		}
		if b.remaining == 0 {
			b.state = stTrailerStart
			return nil
		}
		if b.remaining > uint64(b.max-b.total) {
			return errBodyTooLarge
		}
		b.total += int64(b.remaining)
		b.digits = 0
		b.state = stData
		return nil
	case stDataCR:
		if c != '\r' {
			return errChunkEnd
		}
		b.state = stDataLF
		return nil
	case stDataLF:
		if c != '\n' {
			return errChunkEnd
		}
		b.state = stSizeFirst
		return nil
	case stTrailerStart, stTrailerName, stTrailerValue, stTrailerLF, stFinalLF:
		return b.stepTrailer(c, k)
	default:
		return b.stepExt(c, k)
	}
	// The byte belongs to a chunk extension.
	b.ext++
	if b.ext > MaxChunkExtBytes {
		return errChunkExtSize
	}
	return nil
}

// stepExt advances through a chunk extension.
func (b *BodyReader) stepExt(c byte, k uint8) error {
	switch b.state {
	case stExtBWS:
		switch c {
		case ' ', '\t':
		case ';':
			b.state = stExtName0
		default:
			return errChunkExt
		}
	case stExtName0:
		switch {
		case c == ' ' || c == '\t':
		case k&cToken != 0:
			b.state = stExtName
		default:
			return errChunkExt
		}
	case stExtName:
		switch {
		case k&cToken != 0:
		case c == '=':
			b.state = stExtVal0
		case c == ';':
			b.state = stExtName0
		case c == ' ' || c == '\t':
			b.state = stExtNameBWS
		case c == '\r':
			b.state = stSizeLF
			return nil
		default:
			return errChunkExt
		}
	case stExtNameBWS:
		switch c {
		case ' ', '\t':
		case '=':
			b.state = stExtVal0
		case ';':
			b.state = stExtName0
		default:
			return errChunkExt
		}
	case stExtVal0:
		switch {
		case c == ' ' || c == '\t':
		case c == '"':
			b.state = stExtQuoted
		case k&cToken != 0:
			b.state = stExtToken
		default:
			return errChunkExt
		}
	case stExtToken:
		switch {
		case k&cToken != 0:
		case c == ';':
			b.state = stExtName0
		case c == ' ' || c == '\t':
			b.state = stExtBWS
		case c == '\r':
			b.state = stSizeLF
			return nil
		default:
			return errChunkExt
		}
	case stExtQuoted:
		// qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
		switch {
		case c == '"':
			b.state = stExtQuotedEnd
		case c == '\\':
			b.state = stExtQuotedPair
		case k&cValue == 0:
			return errChunkExt
		}
	case stExtQuotedPair:
		// quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
		if k&cValue == 0 {
			return errChunkExt
		}
		b.state = stExtQuoted
	case stExtQuotedEnd:
		switch c {
		case ';':
			b.state = stExtName0
		case ' ', '\t':
			b.state = stExtBWS
		case '\r':
			b.state = stSizeLF
			return nil
		default:
			return errChunkExt
		}
	default:
		return errChunkExt // unreachable
	}
	b.ext++
	if b.ext > MaxChunkExtBytes {
		return errChunkExtSize
	}
	return nil
}

// stepTrailer advances through the trailer section and the final CRLF.
func (b *BodyReader) stepTrailer(c byte, k uint8) error {
	b.trailer++
	if b.trailer > MaxTrailerBytes+2 { // +2: the final CRLF
		return errTrailerSize
	}
	if b.Keep != nil && b.state != stFinalLF && (b.state != stTrailerStart || c != '\r') {
		*b.Keep = append(*b.Keep, c)
	}
	switch b.state {
	case stTrailerStart:
		switch {
		case c == '\r':
			b.state = stFinalLF
		case k&cToken != 0:
			b.state = stTrailerName
		default: // obs-fold, an empty name, whitespace, a bare LF
			return errTrailer
		}
	case stTrailerName:
		switch {
		case k&cToken != 0:
		case c == ':':
			b.state = stTrailerValue
		default: // whitespace before the colon, a missing colon
			return errTrailer
		}
	case stTrailerValue:
		switch {
		case k&cValue != 0:
		case c == '\r':
			b.state = stTrailerLF
		default:
			return errTrailer
		}
	case stTrailerLF:
		if c != '\n' {
			return errTrailer
		}
		b.state = stTrailerStart
	case stFinalLF:
		if c != '\n' {
			return errTrailer
		}
		b.state = stDone
	}
	return nil
}

// ParseTrailers appends to dst the fields of a trailer section that a
// BodyReader validated and kept (BodyReader.Keep): "name:value" lines
// with CRLFs, the value's surrounding whitespace trimmed. The fields
// alias section.
func ParseTrailers(section []byte, dst []Header) []Header {
	for len(section) > 0 {
		i := bytes.Index(section, []byte("\r\n"))
		if i < 0 {
			break
		}
		line := section[:i]
		section = section[i+2:]
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			continue
		}
		dst = append(dst, Header{Name: line[:colon:colon], Value: TrimOWS(line[colon+1:])})
	}
	return dst
}
