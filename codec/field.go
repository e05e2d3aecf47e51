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
