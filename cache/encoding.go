package cache

import (
	"strings"

	"gale/codec"
)

// Encoding is a content coding a cached file can be served in.
type Encoding uint8

const (
	Identity Encoding = iota // no content coding
	Gzip                     // "gzip" (RFC 9110 8.4.1.3); sidecar suffix ".gz"
	Zstd                     // "zstd" (RFC 8878); sidecar suffix ".zst"
	Brotli                   // "br" (RFC 7932); sidecar suffix ".br"

	numEncodings = 4
)

var encodingNames = [numEncodings]string{"identity", "gzip", "zstd", "br"}
var encodingSuffixes = [numEncodings]string{"", ".gz", ".zst", ".br"}

// String returns the coding's token as used in Accept-Encoding and
// Content-Encoding ("identity", "gzip", "zstd", "br").
func (e Encoding) String() string {
	if e < numEncodings {
		return encodingNames[e]
	}
	return "unknown"
}

// Suffix returns the file name suffix of a precompressed sidecar in this
// coding ("" for Identity).
func (e Encoding) Suffix() string {
	if e < numEncodings {
		return encodingSuffixes[e]
	}
	return ""
}

// ParseEncoding maps a config name ("gzip", "zstd", "br", case-insensitive)
// to its Encoding. "identity" and unknown names report false.
func ParseEncoding(name string) (Encoding, bool) {
	switch strings.ToLower(name) {
	case "gzip":
		return Gzip, true
	case "zstd":
		return Zstd, true
	case "br":
		return Brotli, true
	}
	return Identity, false
}

// EncodingSet is a set of encodings, one bit per Encoding.
type EncodingSet uint8

// Has reports whether e is in s.
func (s EncodingSet) Has(e Encoding) bool { return e < numEncodings && s&(1<<e) != 0 }

// With returns s with e added.
func (s EncodingSet) With(e Encoding) EncodingSet { return s | 1<<e }

// qOne is the q-value 1, in thousandths.
const qOne = 1000

// AcceptEncoding holds a parsed Accept-Encoding (RFC 9110 12.5.3). The zero
// value means "no Accept-Encoding field": only identity is chosen. Call Add
// for each Accept-Encoding field line of a request. It keeps no reference
// to the bytes it parsed, does not allocate, and is not safe for
// concurrent use (keep it on the stack).
type AcceptEncoding struct {
	q      [numEncodings]int16 // q-value in thousandths, valid when the bit is in listed
	listed EncodingSet         // codings named explicitly
	starQ  int16               // q-value of "*", valid when star
	star   bool                // "*" was listed
	seen   bool                // at least one field line was added
}

// Add parses one Accept-Encoding field value and merges it into a. An
// element with an invalid q-value or a malformed parameter is ignored; the
// first occurrence of a coding wins over later ones. "x-gzip" counts as
// "gzip" (RFC 9110 8.4.1.3). Unknown codings are ignored.
func (a *AcceptEncoding) Add(v []byte) {
	a.seen = true
	i := 0
	for i < len(v) {
		for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == ',') {
			i++
		}
		start := i
		for i < len(v) && isTokenByte(v[i]) {
			i++
		}
		name := v[start:i]
		q, ok := qOne, len(name) > 0
		// Parameters: OWS ";" OWS token "=" token, until "," or the end.
		for {
			for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
				i++
			}
			if i >= len(v) || v[i] == ',' {
				break
			}
			if v[i] != ';' {
				ok = false
				for i < len(v) && v[i] != ',' {
					i++
				}
				break
			}
			i++
			for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
				i++
			}
			ps := i
			for i < len(v) && isTokenByte(v[i]) {
				i++
			}
			pname := v[ps:i]
			if i >= len(v) || v[i] != '=' || len(pname) == 0 {
				ok = false
				continue
			}
			i++
			vs := i
			for i < len(v) && isTokenByte(v[i]) {
				i++
			}
			if len(pname) == 1 && pname[0]|0x20 == 'q' {
				pq, valid := parseQ(v[vs:i])
				if !valid {
					ok = false
				}
				q = pq
			}
		}
		if ok {
			a.set(name, int16(q))
		}
	}
}

func (a *AcceptEncoding) set(name []byte, q int16) {
	if len(name) == 1 && name[0] == '*' {
		if !a.star {
			a.star, a.starQ = true, q
		}
		return
	}
	var e Encoding
	switch len(name) { // dispatch on length, then compare ignoring case
	case 2:
		if !codec.EqualFold(name, "br") {
			return
		}
		e = Brotli
	case 4:
		switch {
		case codec.EqualFold(name, "gzip"):
			e = Gzip
		case codec.EqualFold(name, "zstd"):
			e = Zstd
		default:
			return
		}
	case 6:
		if !codec.EqualFold(name, "x-gzip") {
			return
		}
		e = Gzip
	case 8:
		if !codec.EqualFold(name, "identity") {
			return
		}
		e = Identity
	default:
		return
	}
	if !a.listed.Has(e) {
		a.listed = a.listed.With(e)
		a.q[e] = q
	}
}

// Q returns the q-value (0..1000, in thousandths) the client gives e: its
// own weight when listed, else the weight of "*" when listed, else 1000 for
// identity and 0 for the others. Without any Accept-Encoding field only
// identity is acceptable.
func (a *AcceptEncoding) Q(e Encoding) int {
	if !a.seen {
		if e == Identity {
			return qOne
		}
		return 0
	}
	if a.listed.Has(e) {
		return int(a.q[e])
	}
	if a.star {
		return int(a.starQ)
	}
	if e == Identity {
		return qOne
	}
	return 0
}

// Choose picks the encoding to serve among avail: the acceptable coding
// (q > 0) with the highest q-value, ties broken by the order of prefs (the
// route's preference list). Identity wins only when the client weighs it
// explicitly ("identity;q=..." or "*;q=...") above every such coding, or
// when no coding is acceptable (RFC 9110 12.5.3: a response without
// content coding is the fallback even when identity is excluded; an
// unlisted identity is acceptable but does not compete). Identity in
// prefs or avail is ignored.
func (a *AcceptEncoding) Choose(prefs []Encoding, avail EncodingSet) Encoding {
	best, bestQ := Identity, 0
	for _, e := range prefs {
		if e == Identity || !avail.Has(e) {
			continue
		}
		if q := a.Q(e); q > bestQ {
			best, bestQ = e, q
		}
	}
	if best != Identity && (a.listed.Has(Identity) || a.star) && a.Q(Identity) > bestQ {
		return Identity
	}
	return best
}

// Negotiate parses one Accept-Encoding field value and chooses among avail
// as AcceptEncoding.Choose does. A nil value means the field is absent
// (identity); an empty, non-nil value means "no coding wanted" (identity).
// It does not allocate and keeps no reference to value.
func Negotiate(value []byte, prefs []Encoding, avail EncodingSet) Encoding {
	if value == nil || avail == 0 {
		return Identity
	}
	var a AcceptEncoding
	a.Add(value)
	return a.Choose(prefs, avail)
}

// parseQ parses a qvalue (RFC 9110 12.4.2): "0" ["." 0*3DIGIT] or
// "1" ["." 0*3("0")], into thousandths.
func parseQ(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 5 || (b[0] != '0' && b[0] != '1') {
		return 0, false
	}
	q := int(b[0]-'0') * qOne
	if len(b) == 1 {
		return q, true
	}
	if b[1] != '.' {
		return 0, false
	}
	scale := 100
	for _, c := range b[2:] {
		if c < '0' || c > '9' {
			return 0, false
		}
		q += int(c-'0') * scale
		scale /= 10
	}
	if q > qOne {
		return 0, false
	}
	return q, true
}

// isTokenByte reports whether c is a tchar (RFC 9110 5.6.2):
// "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" /
// "`" / "|" / "~" / DIGIT / ALPHA.
func isTokenByte(c byte) bool { return tokenTable[c] }

var tokenTable = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// Compressible reports whether a body of this media type is worth
// compressing on the fly: text/*, JavaScript, JSON, XML (and the +json and
// +xml suffixes), SVG, WebAssembly, icons and uncompressed font formats.
// Parameters (";charset=...") are ignored; the comparison ignores ASCII
// case. It is called once per loaded file, not per request.
func Compressible(contentType string) bool {
	mt := contentType
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	s := strings.ToLower(strings.TrimSpace(mt))
	if strings.HasPrefix(s, "text/") || strings.HasSuffix(s, "+json") || strings.HasSuffix(s, "+xml") {
		return true
	}
	switch s {
	case "application/javascript", "application/x-javascript", "application/ecmascript",
		"application/json", "application/xml", "application/wasm",
		"application/yaml", "application/x-yaml", "application/toml",
		"application/rtf", "application/x-sh", "application/graphql",
		"image/x-icon", "image/vnd.microsoft.icon", "image/bmp",
		"font/ttf", "font/otf", "font/collection",
		"application/x-font-ttf", "application/x-font-otf", "application/vnd.ms-fontobject":
		return true
	}
	return false
}
