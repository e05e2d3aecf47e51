package codec

import "strings"

// Byte classes, one 256-entry table for all of them (STYLE.md practice 3):
// charClass[c]&cX != 0 says c belongs to class X. Bytes >= 0x80 belong only
// to cValue (obs-text).
const (
	// cToken: tchar (RFC 9110 section 5.6.2), for methods, field names,
	// transfer-coding names and chunk-extension names.
	//
	//	token = 1*tchar
	//	tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
	//	        "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
	cToken uint8 = 1 << iota

	// cValue: a byte of a field value (RFC 9110 section 5.5), trimmed of
	// OWS on both sides afterwards. CR, LF, NUL and the other CTLs (but
	// HTAB) are excluded.
	//
	//	field-value   = *field-content
	//	field-content = field-vchar [ 1*( SP / HTAB / field-vchar ) field-vchar ]
	//	field-vchar   = VCHAR / obs-text
	//	obs-text      = %x80-FF
	cValue

	// cTarget: a byte of a request-target (RFC 9112 section 3.2, RFC 3986
	// section 3). The grammar allows
	//
	//	pchar       = unreserved / pct-encoded / sub-delims / ":" / "@"
	//	query       = *( pchar / "/" / "?" )
	//	unreserved  = ALPHA / DIGIT / "-" / "." / "_" / "~"
	//	sub-delims  = "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="
	//	pct-encoded = "%" HEXDIG HEXDIG
	//
	// plus "/" and "[" "]" (authority). Like nginx and net/http we also
	// accept the printable bytes clients are known to send unencoded
	// ('"', '<', '>', '\', '^', '`', '{', '|', '}') and, like nginx and
	// Caddy, raw bytes >= 0x80 (clients such as curl send UTF-8 paths
	// unencoded; the static handler decodes and checks paths anyway), but
	// never "#" (a fragment is not part of a request-target), SP, CTLs or
	// DEL. In short: VCHAR but "#", and obs-text. '%' is checked
	// separately (cPct); authorities are held to cRegName.
	cTarget

	// cRegName: a byte of a host name as we accept it in Host and in
	// authorities (RFC 3986 section 3.2.2), pct-encoding excluded:
	//
	//	reg-name = *( unreserved / sub-delims )
	//
	// IPv4 addresses are reg-names; IP literals are checked by validIPv6.
	cRegName

	// cHex: HEXDIG.
	cHex

	// cPct: '%', which starts a pct-encoded triplet in a target.
	cPct

	// cDigit: DIGIT.
	cDigit
)

var charClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		alpha := 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
		digit := '0' <= b && b <= '9'
		var k uint8
		if alpha || digit || strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0 {
			k |= cToken
		}
		if b == ' ' || b == '\t' || 0x21 <= b && b <= 0x7e || b >= 0x80 {
			k |= cValue
		}
		if 0x21 <= b && b <= 0x7e && b != '#' || b >= 0x80 {
			k |= cTarget
		}
		if alpha || digit || strings.IndexByte("-._~!$&'()*+,;=", b) >= 0 {
			k |= cRegName
		}
		if digit || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F' {
			k |= cHex
		}
		if b == '%' {
			k |= cPct
		}
		if digit {
			k |= cDigit
		}
		t[c] = k
	}
	return t
}()

// IsToken reports whether b is a tchar (RFC 9110 section 5.6.2).
func IsToken(b byte) bool { return charClass[b]&cToken != 0 }

// IsFieldValue reports whether b may stand in a field value as codec
// accepts it: VCHAR, SP, HTAB and obs-text.
func IsFieldValue(b byte) bool { return charClass[b]&cValue != 0 }

// IsTarget reports whether b may stand in a request-target as codec
// accepts it: VCHAR but "#", and obs-text.
func IsTarget(b byte) bool { return charClass[b]&cTarget != 0 }

// IsRegName reports whether b is a reg-name byte (RFC 3986 section
// 3.2.2), pct-encoding excluded.
func IsRegName(b byte) bool { return charClass[b]&cRegName != 0 }

// unhex returns the value of the hex digit c (which must be one).
func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return (c | 0x20) - 'a' + 10
}
