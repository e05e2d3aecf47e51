package fastcgi

import (
	"errors"

	"gale/codec"
)

// The CGI response head (RFC 3875 section 6.3): header fields, each on a
// line ended by LF or CRLF, then an empty line; the body follows. The
// fields a gateway acts on are Status ("Status: 404 Not Found") and
// Location (a client redirect when it is an absolute URI, a local one when
// it is a path); every other field is the response's.

// Limits of the CGI head.
const (
	DefaultHeadBytes = 64 << 10 // the longest head, empty line included
	DefaultMaxFields = 100      // the most fields
)

// Errors of the CGI head; each answers 502.
var (
	ErrHeadSize    = errors.New("fastcgi: CGI response head too long")
	ErrHeadFields  = errors.New("fastcgi: too many CGI response fields")
	ErrFieldName   = errors.New("fastcgi: CGI response field name is not a token")
	ErrFieldValue  = errors.New("fastcgi: CGI response field value holds a control byte")
	ErrStatus      = errors.New("fastcgi: CGI Status is not a final status code 200-599")
	ErrDupStatus   = errors.New("fastcgi: more than one CGI Status or Location field")
	ErrEmptyHead   = errors.New("fastcgi: CGI response has no header field")
	ErrBareCR      = errors.New("fastcgi: CR not followed by LF in the CGI response head")
	ErrNoSeparator = errors.New("fastcgi: CGI response field without a colon")
)

// Head is a parsed CGI response head. Every slice aliases the buffer it
// was parsed from. Fields holds every field but Status, in order
// (Location included); Status is 0 when the script sent none.
type Head struct {
	Status   int
	Reason   []byte // the Status field's reason phrase (may be empty)
	Location []byte // the Location field's value; nil when none
	Fields   []codec.Header
	Len      int // bytes of the head, empty line included
}

// ParseHead parses the CGI head at the start of b into h (whose Fields
// storage is reused) with at most maxBytes bytes and maxFields fields (0
// for the defaults). It returns ErrNeedMore while b holds no empty line
// and is within maxBytes.
func ParseHead(b []byte, h *Head, maxBytes, maxFields int) error {
	if maxBytes <= 0 {
		maxBytes = DefaultHeadBytes
	}
	if maxFields <= 0 {
		maxFields = DefaultMaxFields
	}
	h.Status, h.Reason, h.Location, h.Len = 0, nil, nil, 0
	h.Fields = h.Fields[:0]
	p := 0
	for {
		line, next, ok := nextLine(b, p)
		if !ok {
			if len(b) > maxBytes {
				return ErrHeadSize
			}
			return ErrNeedMore
		}
		if next > maxBytes {
			return ErrHeadSize
		}
		if line < 0 {
			return ErrBareCR
		}
		if line == p {
			if len(h.Fields) == 0 && h.Status == 0 {
				return ErrEmptyHead
			}
			h.Len = next
			return nil
		}
		if err := h.field(b[p:line]); err != nil {
			return err
		}
		if len(h.Fields) > maxFields {
			return ErrHeadFields
		}
		p = next
	}
}

// nextLine finds the end of the line at b[p:]: the index where its
// content ends and the index after its line ending. line is -1 for a CR
// that is not followed by LF; ok is false when no LF follows p.
func nextLine(b []byte, p int) (line, next int, ok bool) {
	for i := p; i < len(b); i++ {
		switch b[i] {
		case '\n':
			return i, i + 1, true
		case '\r':
			if i+1 >= len(b) {
				return 0, 0, false
			}
			if b[i+1] != '\n' {
				return -1, i + 2, true
			}
			return i, i + 2, true
		}
	}
	return 0, 0, false
}

// field parses one field line (without its line ending).
func (h *Head) field(l []byte) error {
	i := 0
	for i < len(l) && isToken[l[i]] {
		i++
	}
	switch {
	case i == len(l):
		return ErrNoSeparator
	case i == 0 || l[i] != ':':
		return ErrFieldName
	}
	name := l[:i:i]
	v := l[i+1:]
	for _, c := range v {
		if !isValue[c] {
			return ErrFieldValue
		}
	}
	v = codec.TrimOWS(v)
	v = v[:len(v):len(v)]
	switch {
	case codec.EqualFold(name, "Status"):
		if h.Status != 0 {
			return ErrDupStatus
		}
		return h.status(v)
	case codec.EqualFold(name, "Location"):
		if h.Location != nil {
			return ErrDupStatus
		}
		h.Location = v
	}
	h.Fields = append(h.Fields, codec.Header{Name: name, Value: v})
	return nil
}

// status parses the Status field's value: 3DIGIT [SP reason-phrase].
func (h *Head) status(v []byte) error {
	if len(v) < 3 || len(v) > 3 && v[3] != ' ' {
		return ErrStatus
	}
	n := 0
	for _, c := range v[:3] {
		if c < '0' || c > '9' {
			return ErrStatus
		}
		n = n*10 + int(c-'0')
	}
	if n < 200 || n > 599 {
		return ErrStatus
	}
	h.Status = n
	if len(v) > 4 {
		h.Reason = v[4:]
	} else {
		h.Reason = v[len(v):]
	}
	return nil
}

// isToken is tchar (RFC 9110 section 5.6.2); isValue is field-vchar, SP
// and HTAB (section 5.5), obs-text included.
var isToken, isValue = func() (t, v [256]bool) {
	for c := 0; c < 256; c++ {
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			t[c] = true
		}
		v[c] = c == '\t' || c >= 0x20 && c != 0x7f
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t, v
}()
