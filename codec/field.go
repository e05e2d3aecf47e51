package codec

// fieldFault is what fieldLine found at a line. Requests and responses
// share the field-line grammar (RFC 9112 section 5) but answer a broken
// line differently (400 to a client, 502 for an upstream), so each
// parser maps a fault to its own *Error.
type fieldFault uint8

const (
	fieldOK         fieldFault = iota // a field line; more may follow
	fieldEnd                          // the empty line that ends the head
	faultObsFold                      // the line starts with SP or HTAB (section 5.2)
	faultSpaceColon                   // whitespace between the name and the colon (section 5.1)
	faultNoColon                      // the name runs to the end of the line
	faultEmptyName                    // the line starts with the colon
	faultName                         // another byte outside tchar where the name ends
	faultValue                        // a byte outside field-value before the CRLF
	faultLineEnd                      // a CR at the start of the line is not followed by LF
)

// fieldLine parses the line of b that starts at p, in a head whose line
// endings frame has checked: name ":" OWS value OWS CRLF, where name is a
// token and value holds VCHAR, obs-text, SP and HTAB. It returns the field
// (aliasing b, capacity clipped, OWS trimmed) and the index of the next
// line; at the empty line it returns fieldEnd and the index after it.
func fieldLine(b []byte, p int) (Header, int, fieldFault) {
	if p >= len(b) {
		return Header{}, p, faultValue // unreachable: frame found the empty line
	}
	switch b[p] {
	case '\r':
		if p+1 >= len(b) || b[p+1] != '\n' {
			return Header{}, p, faultLineEnd
		}
		return Header{}, p + 2, fieldEnd
	case ' ', '\t':
		return Header{}, p, faultObsFold
	}
	n0 := p
	for p < len(b) && charClass[b[p]]&cToken != 0 {
		p++
	}
	if p >= len(b) || b[p] != ':' {
		switch {
		case p < len(b) && (b[p] == ' ' || b[p] == '\t'):
			q := p
			for q < len(b) && (b[q] == ' ' || b[q] == '\t') {
				q++
			}
			if q < len(b) && b[q] == ':' {
				return Header{}, p, faultSpaceColon
			}
		case p < len(b) && b[p] == '\r':
			return Header{}, p, faultNoColon
		}
		return Header{}, p, faultName
	}
	if p == n0 {
		return Header{}, p, faultEmptyName
	}
	name := b[n0:p:p]
	p++
	for p < len(b) && (b[p] == ' ' || b[p] == '\t') {
		p++
	}
	v0 := p
	p = scanValue(b, p)
	if p+1 >= len(b) || b[p] != '\r' || b[p+1] != '\n' {
		return Header{}, p, faultValue
	}
	v1 := p
	for v1 > v0 && (b[v1-1] == ' ' || b[v1-1] == '\t') {
		v1--
	}
	return Header{Name: name, Value: b[v0:v1:v1]}, p + 2, fieldOK
}

// Faults of the fields that frame a message, found by framing.
const (
	faultDupLength   fieldFault = iota + faultLineEnd + 1 // a second Content-Length
	faultBadLength                                        // a Content-Length that is not 1*DIGIT within int64
	faultTE10                                             // Transfer-Encoding in HTTP/1.0
	faultTEAndLength                                      // Transfer-Encoding with Content-Length
	faultCoding                                           // a coding other than exactly one "chunked"
)

// The columns of fieldFaultErrors.
const (
	faultInRequest  = iota // the answer to a client: 400 or 501
	faultInResponse        // the answer for an upstream: 502
)

// fieldFaultErrors answers each fault of a field line, or of the fields
// that frame a message, found in a request and in a response.
var fieldFaultErrors = [faultCoding + 1][2]*Error{
	faultObsFold:     {errObsFold, errRespObsFold},
	faultSpaceColon:  {errSpaceColon, errRespSpaceColon},
	faultNoColon:     {errNoColon, errRespFieldName},
	faultEmptyName:   {errEmptyName, errRespFieldName},
	faultName:        {errFieldName, errRespFieldName},
	faultValue:       {errFieldValue, errRespFieldValue},
	faultLineEnd:     {errFieldValue, errRespFieldName},
	faultDupLength:   {errDupLength, errRespDupLength},
	faultBadLength:   {errBadLength, errRespLength},
	faultTE10:        {errTE10, errRespTE10},
	faultTEAndLength: {errTEAndLength, errRespTEAndLen},
	faultCoding:      {errTransferCoding, errRespCoding},
}

// framing gathers, field by field, what requests and responses alike are
// framed by (RFC 9112 section 6) and what their Connection field says
// (RFC 9110 section 7.6.1).
type framing struct {
	lengths, codings int
	length           int64 // the Content-Length, when lengths is 1
	coding           []byte
	close, keepAlive bool // Connection tokens "close" and "keep-alive"
	upgrade          bool // Connection token "upgrade"
}

// see takes one field. It reports a repeated or malformed Content-Length
// at once; other fields it does not frame by are ignored.
func (f *framing) see(name, value []byte) fieldFault {
	switch len(name) {
	case 10:
		if EqualFold(name, "connection") {
			for rest := value; len(rest) > 0; {
				var tok []byte
				tok, rest = nextElement(rest)
				switch {
				case EqualFold(tok, "close"):
					f.close = true
				case EqualFold(tok, "keep-alive"):
					f.keepAlive = true
				case EqualFold(tok, "upgrade"):
					f.upgrade = true
				}
			}
		}
	case 14:
		if EqualFold(name, "content-length") {
			f.lengths++
			if f.lengths > 1 {
				return faultDupLength
			}
			n, ok := ParseLength(value)
			if !ok {
				return faultBadLength
			}
			f.length = n
		}
	case 17:
		if EqualFold(name, "transfer-encoding") {
			f.codings++
			f.coding = value
		}
	}
	return fieldOK
}

// chunked reports whether, after every field was seen, the body of a
// message of version v is chunked, or the fault in its Transfer-Encoding:
// only HTTP/1.1, never with Content-Length, and exactly one coding,
// "chunked" (RFC 9112 section 6.1).
func (f *framing) chunked(v Version) (bool, fieldFault) {
	switch {
	case f.codings == 0:
		return false, fieldOK
	case v == HTTP10:
		return false, faultTE10
	case f.lengths > 0:
		return false, faultTEAndLength
	case f.codings > 1 || !EqualFold(f.coding, "chunked"):
		return false, faultCoding
	}
	return true, fieldOK
}

// persistent reports whether the connection stays open after a message of
// version v: HTTP/1.1 unless "close", HTTP/1.0 only with "keep-alive"
// (RFC 9112 section 9.3).
func (f *framing) persistent(v Version) bool {
	return !f.close && (v == HTTP11 || f.keepAlive)
}
