package httpcache

import (
	"bytes"
	"net/http"
	"time"

	"gale/codec"
)

// Directives are the cache directives of a Cache-Control field (RFC 9111
// section 5.2) that the cache acts on. Ages are in seconds; -1 = absent.
type Directives struct {
	NoStore, NoCache, Private, Public   bool
	MustRevalidate, ProxyRevalidate     bool
	OnlyIfCached                        bool
	MaxAge, SMaxAge, MaxStale, MinFresh int64
	StaleIfError                        int64    // RFC 5861 section 4; -1 = absent
	StaleWhileRevalidate                int64    // RFC 5861 section 3; -1 = absent
	MaxStaleAny                         bool     // max-stale without a value
	Targeted                            bool     // read from CDN-Cache-Control (RFC 9213)
	Omit                                [][]byte // the fields a qualified no-cache names: stored without them (section 5.2.2.4)
}

// ParseDirectives reads the Cache-Control fields named in hs (every
// field of that name, comma-separated lists joined). Unknown directives
// are ignored; a directive with an invalid argument counts as absent,
// except max-age, which then makes the response stale (section 4.2.1).
//
// A response's CDN-Cache-Control (RFC 9213), the field targeted at
// caches like this one, is used instead of Cache-Control when present.
func ParseDirectives(hs []codec.Header) Directives {
	d := Directives{MaxAge: -1, SMaxAge: -1, MaxStale: -1, MinFresh: -1, StaleIfError: -1, StaleWhileRevalidate: -1}
	name := "Cache-Control"
	if targetedValid(hs) {
		name = "CDN-Cache-Control"
		d.Targeted = true
	}
	for i := range hs {
		if codec.EqualFold(hs[i].Name, name) {
			d.parse(hs[i].Value)
		}
	}
	return d
}

func (d *Directives) parse(v []byte) {
	for len(v) > 0 {
		var item []byte
		item, v = nextItem(v)
		name, arg := item, []byte(nil)
		if j := bytes.IndexByte(item, '='); j >= 0 {
			name, arg = bytes.TrimSpace(item[:j]), bytes.Trim(bytes.TrimSpace(item[j+1:]), `"`)
		}
		switch {
		case codec.EqualFold(name, "no-store"):
			d.NoStore = true
		case codec.EqualFold(name, "no-cache") && len(arg) > 0:
			for len(arg) > 0 {
				var f []byte
				if f, arg = nextItem(arg); len(f) > 0 {
					d.Omit = append(d.Omit, f)
				}
			}
		case codec.EqualFold(name, "no-cache"):
			d.NoCache = true
		case codec.EqualFold(name, "private"):
			d.Private = true
		case codec.EqualFold(name, "public"):
			d.Public = true
		case codec.EqualFold(name, "must-revalidate"):
			d.MustRevalidate = true
		case codec.EqualFold(name, "proxy-revalidate"):
			d.ProxyRevalidate = true
		case codec.EqualFold(name, "only-if-cached"):
			d.OnlyIfCached = true
		case codec.EqualFold(name, "max-age"):
			d.MaxAge = seconds(arg, 0)
		case codec.EqualFold(name, "s-maxage"):
			d.SMaxAge = seconds(arg, -1)
		case codec.EqualFold(name, "max-stale"):
			if arg == nil {
				d.MaxStaleAny = true
			} else {
				d.MaxStale = seconds(arg, -1)
			}
		case codec.EqualFold(name, "min-fresh"):
			d.MinFresh = seconds(arg, -1)
		case codec.EqualFold(name, "stale-if-error"):
			d.StaleIfError = seconds(arg, -1)
		case codec.EqualFold(name, "stale-while-revalidate"):
			d.StaleWhileRevalidate = seconds(arg, -1)
		}
	}
}

// targetedValid reports whether hs has CDN-Cache-Control fields and
// they are a valid Structured Field Dictionary (RFC 9213 section 2.1,
// RFC 8941 section 3.2) whose ages are integers; an invalid one is
// ignored as a whole.
func targetedValid(hs []codec.Header) bool {
	found := false
	for i := range hs {
		if !codec.EqualFold(hs[i].Name, "CDN-Cache-Control") {
			continue
		}
		found = true
		for v := hs[i].Value; len(v) > 0; {
			var item []byte
			item, v = nextItem(v)
			if !validMember(item) {
				return false
			}
		}
	}
	return found
}

// validMember checks one dictionary member: a key (lower case letter or
// "*", then lower case letters, digits, "_", "-", ".", "*"), optionally
// "=" and a bare item; the ages must be non-negative integers.
func validMember(m []byte) bool {
	key, val, hasVal := bytes.Cut(m, []byte("="))
	if len(key) == 0 || !(key[0] >= 'a' && key[0] <= 'z' || key[0] == '*') {
		return false
	}
	for _, c := range key {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '*') {
			return false
		}
	}
	if !hasVal {
		return true
	}
	if bytes.HasSuffix(key, []byte("age")) || bytes.HasPrefix(key, []byte("stale-")) {
		return len(val) > 0 && seconds(val, -1) >= 0
	}
	return len(val) > 0
}

// nextItem splits the first comma-separated item off v, outside quotes.
func nextItem(v []byte) (item, rest []byte) {
	quoted := false
	for i, b := range v {
		switch {
		case b == '"':
			quoted = !quoted
		case b == ',' && !quoted:
			return bytes.TrimSpace(v[:i]), v[i+1:]
		}
	}
	return bytes.TrimSpace(v), nil
}

// seconds parses delta-seconds (RFC 9111 section 1.2.2): digits only,
// capped at 2^31 (which the RFC says to use for larger values); bad
// input gives bad.
func seconds(b []byte, bad int64) int64 {
	if len(b) == 0 {
		return bad
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return bad
		}
		if n = n*10 + int64(c-'0'); n > 1<<31 {
			n = 1 << 31
		}
	}
	return n
}

// heuristicStatus reports the statuses that are heuristically cacheable
// (RFC 9110 section 15.1) that this cache stores; 206 is left out, as
// the cache stores whole responses only.
func heuristicStatus(s int) bool {
	switch s {
	case 200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501:
		return true
	}
	return false
}

// understoodStatus is a final status the cache knows how to store: the
// heuristic ones and any other with explicit freshness, but never 206
// (partial content), 304 or an interim one.
func understoodStatus(s int) bool {
	return s >= 200 && s != 206 && s != 304 && s < 600
}

// Request is what Storable and Lifetime read of a request.
type Request struct {
	Authorization bool // the request carried Authorization (section 3.5)
	NoStore       bool // the request's Cache-Control said no-store
	StoreCookies  bool // the route stores responses that set cookies
}

// Storable reports whether a response to a GET may be stored (RFC 9111
// section 3): a status the cache understands, no no-store, no private,
// not to a request with Authorization unless the response says a
// shared cache may (must-revalidate, public, s-maxage), no Set-Cookie
// (unless configured), no "Vary: *", and something that makes it
// cacheable (public, max-age, s-maxage, Expires, or a heuristically
// cacheable status).
func Storable(req Request, status int, fields []codec.Header, d *Directives) bool {
	if !understoodStatus(status) || req.NoStore || d.NoStore || d.Private {
		return false
	}
	if req.Authorization && !d.MustRevalidate && !d.Public && d.SMaxAge < 0 {
		return false
	}
	expires := false
	for i := range fields {
		n := fields[i].Name
		switch {
		case codec.EqualFold(n, "Set-Cookie") && !req.StoreCookies:
			return false
		case codec.EqualFold(n, "Vary") && bytes.Contains(fields[i].Value, []byte("*")):
			return false
		case codec.EqualFold(n, "Expires"):
			expires = true
		}
	}
	return d.Public || d.MaxAge >= 0 || d.SMaxAge >= 0 || expires || heuristicStatus(status) || d.NoCache
}

// Lifetime returns a stored response's freshness lifetime (RFC 9111
// section 4.2.1): s-maxage, else max-age, else Expires less Date, else
// 10% of the time since Last-Modified for a heuristically cacheable
// status (section 4.2.2), else zero. date is the response's Date (or
// when it arrived, without one).
func Lifetime(status int, fields []codec.Header, d *Directives, date time.Time) time.Duration {
	switch {
	case d.SMaxAge >= 0:
		return time.Duration(d.SMaxAge) * time.Second
	case d.MaxAge >= 0:
		return time.Duration(d.MaxAge) * time.Second
	}
	if v := field(fields, "Expires"); v != nil {
		t, ok := ParseDate(v)
		if !ok || count(fields, "Expires") > 1 || !t.After(date) {
			return 0 // an invalid Expires means already expired (section 5.3)
		}
		return t.Sub(date)
	}
	if !heuristicStatus(status) {
		return 0
	}
	if v := field(fields, "Last-Modified"); v != nil {
		if lm, ok := ParseDate(v); ok && lm.Before(date) {
			return date.Sub(lm) / 10
		}
	}
	return 0
}

// field returns the value of the first field of hs named name, or nil.
func field(hs []codec.Header, name string) []byte {
	for i := range hs {
		if codec.EqualFold(hs[i].Name, name) {
			return hs[i].Value
		}
	}
	return nil
}

// responseDate returns the response's Date, or at when it has none
// or an invalid one.
func responseDate(fields []codec.Header, at time.Time) time.Time {
	if v := field(fields, "Date"); v != nil {
		if t, ok := ParseDate(v); ok {
			return t
		}
	}
	return at
}

// ageValue returns the response's Age in seconds, 0 when absent or
// invalid.
func ageValue(fields []codec.Header) int64 {
	if v := field(fields, "Age"); v != nil {
		first, _ := nextItem(v) // a list in one field line: its first member
		if n := seconds(first, 0); n > 0 {
			return n
		}
	}
	return 0
}

// count returns how many fields of hs are named name.
func count(hs []codec.Header, name string) int {
	n := 0
	for i := range hs {
		if codec.EqualFold(hs[i].Name, name) {
			n++
		}
	}
	return n
}

// dateLayouts are the forms of an HTTP date (RFC 9110 section 5.6.7):
// IMF-fixdate, then the obsolete RFC 850 and asctime forms.
var dateLayouts = []string{http.TimeFormat, "Monday, 02-Jan-06 15:04:05 GMT", "Mon Jan _2 15:04:05 2006"}

// ParseDate parses an HTTP date strictly: the value must be exactly one
// of the three forms, which time.Parse alone does not check (it takes a
// one-digit hour, for one); anything else is invalid.
func ParseDate(v []byte) (time.Time, bool) {
	for _, layout := range dateLayouts {
		t, err := time.Parse(layout, string(v))
		if err == nil && t.Format(layout) == string(v) {
			return t, true
		}
	}
	return time.Time{}, false
}
