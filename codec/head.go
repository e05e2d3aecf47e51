package codec

import "bytes"

// Requests and responses share the HTTP/1.1 head (RFC 9112 sections 2 to
// 6): lines ending in CRLF, a first line, field lines, an empty line, and
// the framing fields. What differs is the first line, the fields only
// requests carry, and the answer to a broken head (an *Error of status
// 4xx/5xx to a client, 502 for an upstream). This file frames and reads
// the shared part once; request.go and response_parse.go parse the first
// line and give their limits and answers through a headKind (the answers
// to a broken field line stand side by side in field.go's
// fieldFaultErrors).

// headKind is what framing and reading a head needs to know of its kind
// of message: its limits and its answers.
type headKind struct {
	firstLine int // longest first line, CRLF excluded; 0: bounded by bytes alone
	bytes     int // longest head, through the empty line
	fields    int // most field lines
	errs      *headErrors

	// countLF makes a line's LF count towards bytes before anything else
	// of the line is checked (responses); requests check a line's length
	// without its LF first, so that a bare LF over the limit is a bare LF.
	countLF bool
}

// headErrors are a kind of message's answers to a broken head.
type headErrors struct {
	bareLF    *Error // a line ending in LF without CR
	emptyLine *Error // an empty line before the first line
	firstLine *Error // a first line over headKind.firstLine
	tooLarge  *Error // a head over headKind.bytes
	tooMany   *Error // more than headKind.fields field lines
	side      int    // its column of fieldFaultErrors: faultInRequest or faultInResponse
}

// headScan is where framing an incomplete head stopped: the start of the
// first line not yet complete and how many complete lines precede it.
// Zero after a complete head, an error or a Reset.
type headScan struct {
	scanOff   int
	scanLines int
}

// parse frames the head at the start of buf and, once it is whole, hands
// it to parseHead. reset clears the message, s included, keeping its
// header storage: it runs before buf is looked at and again after a bad
// head, so that nothing read from the message after a failed call names
// bytes of an earlier one (whose bytes may since have been overwritten).
// It returns the length of the head, ErrNeedMore (s remembers how far it
// looked) or parseHead's error.
func (s *headScan) parse(buf []byte, k *headKind, reset func(), parseHead func([]byte) error) (int, error) {
	scan := *s
	reset()
	end, err := scan.frame(buf, k)
	*s = scan
	if err != nil {
		return 0, err
	}
	if err := parseHead(buf[:end]); err != nil {
		reset()
		return 0, err
	}
	return end, nil
}

// frame finds the end of the head in buf (the index after its empty line)
// and enforces the limits that do not need the whole head, resuming where
// an earlier call on the same bytes stopped. It validates only line
// endings; the parser of the kind validates the rest.
//
// To give the same answer however buf is split, each check runs at the
// first prefix of buf that fails it: the length checks of a line run on the
// line without its LF before the LF itself is looked at.
func (s *headScan) frame(buf []byte, k *headKind) (int, error) {
	off, lines := s.scanOff, s.scanLines
	*s = headScan{}
	if off > len(buf) {
		off, lines = 0, 0
	}
	for {
		i := bytes.IndexByte(buf[off:], '\n')
		if i < 0 {
			break
		}
		nl := off + i
		end := nl
		if k.countLF {
			end++
		}
		if err := k.checkPartial(buf[:end], off, lines); err != nil {
			return 0, err
		}
		if nl == 0 || buf[nl-1] != '\r' {
			return 0, k.errs.bareLF
		}
		if nl-1 == off { // the empty line
			if lines == 0 {
				return 0, k.errs.emptyLine
			}
			if nl+1 > k.bytes {
				return 0, k.errs.tooLarge
			}
			return nl + 1, nil
		}
		lines++
		if lines-1 > k.fields {
			return 0, k.errs.tooMany
		}
		off = nl + 1
	}
	if err := k.checkPartial(buf, off, lines); err != nil {
		return 0, err
	}
	s.scanOff, s.scanLines = off, lines
	return 0, ErrNeedMore
}

// checkPartial applies the limits to buf, a prefix of a head whose last
// line starts at off and is preceded by lines complete lines.
func (k *headKind) checkPartial(buf []byte, off, lines int) error {
	if lines == 0 && k.firstLine > 0 {
		n := len(buf) - off
		if n > 0 && buf[len(buf)-1] == '\r' {
			n-- // the CR of the CRLF, not part of the line
		}
		if n > k.firstLine {
			return k.errs.firstLine
		}
	}
	if len(buf) > k.bytes {
		return k.errs.tooLarge
	}
	return nil
}

// readFields reads the field lines of b, a head that frame has framed,
// from p through the empty line: it appends each field to *hs, gives it
// to own (the fields only this kind of message carries; nil: none) and
// then to fr, and returns the index after the empty line. It stops at the
// first fault, in that order, with the kind's answer.
func (k *headKind) readFields(b []byte, p int, hs *[]Header, fr *framing, own func(name, value []byte) error) (int, error) {
	if cap(*hs) == 0 {
		*hs = make([]Header, 0, 16)
	}
	for {
		f, next, fault := fieldLine(b, p)
		if fault == fieldEnd {
			return next, nil
		}
		if fault != fieldOK {
			return 0, fieldFaultErrors[fault][k.errs.side]
		}
		p = next
		if len(*hs) >= k.fields {
			return 0, k.errs.tooMany
		}
		*hs = append(*hs, f)
		if own != nil {
			if err := own(f.Name, f.Value); err != nil {
				return 0, err
			}
		}
		if fault := fr.see(f.Name, f.Value); fault != fieldOK {
			return 0, fieldFaultErrors[fault][k.errs.side]
		}
	}
}

// body returns, after every field was seen, the declared length of a
// message of version v (-1 when none) and whether its body is chunked, or
// the kind's answer to a fault of its Transfer-Encoding (see chunked).
func (k *headKind) body(fr *framing, v Version) (int64, bool, error) {
	length := int64(-1)
	if fr.lengths > 0 {
		length = fr.length
	}
	chunked, fault := fr.chunked(v)
	if fault != fieldOK {
		return length, false, fieldFaultErrors[fault][k.errs.side]
	}
	return length, chunked, nil
}
