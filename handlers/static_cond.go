package handlers

import (
	"bytes"
	"time"

	"gale/cache"
	"gale/codec"
)

// Conditional requests (RFC 9110 section 13), evaluated the way
// golang/go src/net/http/fs.go checkPreconditions does, in the order of
// RFC 9110 13.2.2:
//
//  1. If-Match (strong comparison; "*" matches any current
//     representation), or, without it, If-Unmodified-Since: false → 412;
//  2. If-None-Match (weak comparison): a match → 304 for GET and HEAD
//     (the only methods static routes serve); without it,
//     If-Modified-Since: not modified since → 304;
//  3. If-Range (a strong entity tag, or exactly the Last-Modified date)
//     decides whether Range applies; when it does not, the whole
//     representation is sent.
//
// Validators are those of the representation selected by Accept-Encoding
// (a coded representation has its own strong ETag), with one widening for
// If-None-Match: a tag naming any representation of the file's current
// version that the request could have been given (identity, or a coding
// the route serves and the request accepts) matches too, and the 304
// names that representation. A browser that fetched a file uncompressed,
// before its compressed variants were made (or before a restart, or from
// another replica), revalidates the copy it holds and gets 304 instead of
// the whole file again; every representation of one version carries the
// same content, so telling the client to keep the one it holds is true.
// If-Match and If-Range keep strong comparison with the selected
// representation, as RFC 9110 asks. Dates compare at the resolution of
// HTTP-date (seconds). Unparsable dates make their field ignored.

// reqInfo is what a static route reads of the request's fields, collected
// in one pass over the header table. Slices alias the request.
type reqInfo struct {
	ae           cache.AcceptEncoding // every Accept-Encoding line
	ifMatch      []byte
	ifNoneMatch  []byte
	ifModSince   []byte
	ifUnmodSince []byte
	ifRange      []byte
	rng          []byte // Range
	acceptsHTML  bool   // Accept names text/html
	acceptsJSON  bool   // Accept asks for application/json only (codec.AcceptsJSONOnly)
	multiRange   bool   // Range lists more than one range
}

// scan fills ri from r's header table. It does not allocate.
func (ri *reqInfo) scan(r *codec.Request) {
	var accept []byte
	for i := range r.Headers {
		f := &r.Headers[i]
		n := f.Name
		switch len(n) {
		case 5:
			if ri.rng == nil && codec.EqualFold(n, "range") {
				ri.rng = f.Value
			}
		case 6:
			if accept == nil && codec.EqualFold(n, "accept") {
				accept = f.Value
			}
		case 8:
			switch {
			case ri.ifMatch == nil && codec.EqualFold(n, "if-match"):
				ri.ifMatch = f.Value
			case ri.ifRange == nil && codec.EqualFold(n, "if-range"):
				ri.ifRange = f.Value
			}
		case 13:
			if ri.ifNoneMatch == nil && codec.EqualFold(n, "if-none-match") {
				ri.ifNoneMatch = f.Value
			}
		case 15:
			if codec.EqualFold(n, "accept-encoding") {
				ri.ae.Add(f.Value)
			}
		case 17:
			if ri.ifModSince == nil && codec.EqualFold(n, "if-modified-since") {
				ri.ifModSince = f.Value
			}
		case 19:
			if ri.ifUnmodSince == nil && codec.EqualFold(n, "if-unmodified-since") {
				ri.ifUnmodSince = f.Value
			}
		}
	}
	if accept != nil {
		ri.acceptsHTML = containsFold(accept, "text/html")
		ri.acceptsJSON = codec.AcceptsJSONOnly(accept)
	}
	ri.multiRange = bytes.IndexByte(ri.rng, ',') >= 0
}

// Results of one condition.
const (
	condNone  = iota // the field is absent (or ignored)
	condTrue         // the condition holds
	condFalse        // it does not
)

// validators are what the preconditions of a static response compare
// with. Slices are shared, read-only.
type validators struct {
	etag    []byte            // the selected representation's strong ETag
	enc     cache.Encoding    // the selected representation's coding
	base    []byte            // the identity ETag of the file version (cache.AppendVariantETag's base)
	codings cache.EncodingSet // the codings the route serves
	mtime   int64             // ns since the Unix epoch
}

// preconditions evaluates If-Match, If-Unmodified-Since, If-None-Match
// and If-Modified-Since for a GET or HEAD of the representation v
// describes. It returns 0 (serve the representation), 304 or 412; with
// 304, held is the representation the client holds: the one an
// If-None-Match tag named, else (a date, or "*") the selected one.
func (ri *reqInfo) preconditions(v *validators) (status int, held cache.Encoding) {
	secs := unixSeconds(v.mtime)
	ch := condNone
	switch {
	case len(codec.TrimOWS(ri.ifMatch)) > 0:
		ch = condFalse
		if listMatches(ri.ifMatch, v.etag, true) {
			ch = condTrue
		}
	case len(ri.ifUnmodSince) > 0 && secs != 0:
		if t, ok := parseHTTPDate(ri.ifUnmodSince); ok {
			ch = condFalse
			if secs <= t {
				ch = condTrue
			}
		}
	}
	if ch == condFalse {
		return 412, v.enc
	}
	if len(codec.TrimOWS(ri.ifNoneMatch)) > 0 {
		if enc, ok := ri.heldVariant(v); ok {
			return 304, enc
		}
		return 0, v.enc
	}
	if len(ri.ifModSince) > 0 && secs != 0 {
		if t, ok := parseHTTPDate(ri.ifModSince); ok && secs <= t {
			return 304, v.enc
		}
	}
	return 0, v.enc
}

// heldVariant matches If-None-Match's list ("*" or tags separated by
// commas) against the representations of v's version, weakly: the
// selected representation's tag wins wherever it stands in the list;
// else the first tag naming identity, or a coding the route serves and
// the request accepts (a tag for a coding the request refuses names a
// copy it could not use: a cache that holds it must not be told to
// serve it). It does not allocate.
func (ri *reqInfo) heldVariant(v *validators) (held cache.Encoding, ok bool) {
	list := ri.ifNoneMatch
	for {
		list = codec.TrimOWS(list)
		if len(list) == 0 {
			return held, ok
		}
		if list[0] == ',' {
			list = list[1:]
			continue
		}
		if list[0] == '*' {
			return v.enc, true
		}
		tag, rest := scanETag(list)
		if tag == nil {
			return held, ok
		}
		if weakMatch(tag, v.etag) {
			return v.enc, true
		}
		if enc, named := cache.VariantOf(tag, v.base); named && !ok && ri.couldHold(v, enc) {
			held, ok = enc, true
		}
		list = rest
	}
}

// couldHold reports whether a response to this request could have been
// the representation in enc: identity always (it is every request's
// fallback), a coding when the route serves it and Accept-Encoding
// accepts it.
func (ri *reqInfo) couldHold(v *validators, enc cache.Encoding) bool {
	return enc == cache.Identity || v.codings.Has(enc) && ri.ae.Q(enc) > 0
}

// rangeApplies reports whether a Range field is to be honoured: no
// If-Range, or an If-Range that names this representation (its strong
// ETag, or exactly its Last-Modified date).
func (ri *reqInfo) rangeApplies(etag []byte, mtime int64) bool {
	if len(ri.ifRange) == 0 {
		return true
	}
	if tag, _ := scanETag(ri.ifRange); tag != nil {
		return strongMatch(tag, etag)
	}
	secs := unixSeconds(mtime)
	t, ok := parseHTTPDate(codec.TrimOWS(ri.ifRange))
	return ok && secs != 0 && t == secs
}

// listMatches reports whether the entity-tag list of If-Match or
// If-None-Match ("*" or tags separated by commas) matches etag, strongly
// or weakly.
func listMatches(list, etag []byte, strong bool) bool {
	for {
		list = codec.TrimOWS(list)
		if len(list) == 0 {
			return false
		}
		if list[0] == ',' {
			list = list[1:]
			continue
		}
		if list[0] == '*' {
			return true
		}
		tag, rest := scanETag(list)
		if tag == nil {
			return false
		}
		if strong && strongMatch(tag, etag) || !strong && weakMatch(tag, etag) {
			return true
		}
		list = rest
	}
}

// scanETag returns the entity-tag at the start of s (W/"x" or "x") and
// what follows it; nil when s does not start with one.
func scanETag(s []byte) (etag, rest []byte) {
	s = codec.TrimOWS(s)
	start := 0
	if len(s) >= 2 && s[0] == 'W' && s[1] == '/' {
		start = 2
	}
	if len(s[start:]) < 2 || s[start] != '"' {
		return nil, nil
	}
	for i := start + 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == 0x21 || c >= 0x23 && c <= 0x7e || c >= 0x80: // etagc
		case c == '"':
			return s[:i+1], s[i+1:]
		default:
			return nil, nil
		}
	}
	return nil, nil
}

// strongMatch: both tags are strong and equal (RFC 9110 8.8.3.2).
func strongMatch(a, b []byte) bool {
	return len(a) > 0 && a[0] == '"' && string(a) == string(b)
}

// weakMatch: the tags are equal once a "W/" prefix is dropped.
func weakMatch(a, b []byte) bool {
	return string(trimWeak(a)) == string(trimWeak(b))
}

func trimWeak(t []byte) []byte {
	if len(t) >= 2 && t[0] == 'W' && t[1] == '/' {
		return t[2:]
	}
	return t
}

// unixSeconds converts nanoseconds since the epoch to whole seconds,
// rounding down.
func unixSeconds(ns int64) int64 {
	s := ns / 1e9
	if ns < 0 && ns%1e9 != 0 {
		s--
	}
	return s
}

// parseHTTPDate parses an HTTP-date (RFC 9110 5.6.7) into seconds since
// the Unix epoch: the IMF-fixdate form without allocating, and the
// obsolete RFC 850 and asctime forms through package time.
func parseHTTPDate(b []byte) (int64, bool) {
	b = codec.TrimOWS(b)
	if t, ok := parseIMFFixdate(b); ok {
		return t, true
	}
	if len(b) > 64 {
		return 0, false
	}
	for _, layout := range [...]string{time.RFC850, time.ANSIC} {
		if t, err := time.Parse(layout, string(b)); err == nil {
			return t.Unix(), true
		}
	}
	return 0, false
}

// parseIMFFixdate parses "Sun, 06 Nov 1994 08:49:37 GMT".
func parseIMFFixdate(b []byte) (int64, bool) {
	if len(b) != 29 || b[3] != ',' || b[4] != ' ' || b[7] != ' ' || b[11] != ' ' ||
		b[16] != ' ' || b[19] != ':' || b[22] != ':' || string(b[25:]) != " GMT" {
		return 0, false
	}
	if !validDayName(b[:3]) {
		return 0, false
	}
	day, ok1 := digits(b[5:7])
	year, ok2 := digits(b[12:16])
	hh, ok3 := digits(b[17:19])
	mm, ok4 := digits(b[20:22])
	ss, ok5 := digits(b[23:25])
	month := monthNumber(b[8:11])
	if !(ok1 && ok2 && ok3 && ok4 && ok5) || month == 0 || hh > 23 || mm > 59 || ss > 60 ||
		day < 1 || day > daysIn(month, year) {
		return 0, false
	}
	return daysFromCivil(year, month, day)*86400 + int64(hh*3600+mm*60+ss), true
}

func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func validDayName(b []byte) bool {
	switch string(b) {
	case "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun":
		return true
	}
	return false
}

func monthNumber(b []byte) int {
	switch string(b) {
	case "Jan":
		return 1
	case "Feb":
		return 2
	case "Mar":
		return 3
	case "Apr":
		return 4
	case "May":
		return 5
	case "Jun":
		return 6
	case "Jul":
		return 7
	case "Aug":
		return 8
	case "Sep":
		return 9
	case "Oct":
		return 10
	case "Nov":
		return 11
	case "Dec":
		return 12
	}
	return 0
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days from 1970-01-01 to the given date in the
// proleptic Gregorian calendar (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// containsFold reports whether b contains the lower-case ASCII string s,
// ignoring ASCII case in b.
func containsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if codec.EqualFold(b[i:i+len(s)], s) {
			return true
		}
	}
	return false
}
