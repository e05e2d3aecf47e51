package httpcache

import (
	"bytes"
	"sync/atomic"
	"time"

	"gale/codec"
)

// Entry is one stored response. It is immutable once stored: every
// slice is shared by all loops and never written again (only its
// revalidation turn, an atomic, changes).
type Entry struct {
	Status int
	Fields []codec.Header // end-to-end fields as the upstream sent them (Date included), without Age, Server and framing ones
	Body   []byte

	ETag, LastModified []byte // validators, nil when absent

	stored     int64         // unix ns when the response arrived
	initialAge int64         // corrected initial age, ns (section 4.2.3)
	lifetime   int64         // freshness lifetime, ns
	noCache    bool          // always validate before use (no-cache)
	mustReval  bool          // must-revalidate or proxy-revalidate: never served stale
	staleErr   int64         // stale-if-error (RFC 5861), ns; -1 = none
	staleReval int64         // stale-while-revalidate (RFC 5861), ns; -1 = none
	turn       atomic.Uint32 // stale-while-revalidate: turnNone, turnDue, turnTaken

	vary     [][]byte // lower-case names of the request fields Vary names
	varyVals [][]byte // those fields' normalised values in the request that fetched it
	size     int64
}

// Stored is what a Store keeps from a response: New builds one.
type Stored struct {
	Status  int
	Fields  []codec.Header // the response's end-to-end fields
	Body    []byte
	ReqTime time.Time // when the request was sent upstream
	Now     time.Time // when the response arrived
	Request []codec.Header
}

// New makes an entry of a response to a GET whose fields parsed into d,
// copying fields and body into memory of its own.
func New(s Stored, d *Directives) *Entry {
	date := responseDate(s.Fields, s.Now)
	e := &Entry{Status: s.Status, stored: s.Now.UnixNano()}
	e.lifetime = int64(Lifetime(s.Status, s.Fields, d, date))
	apparent := max(0, s.Now.Sub(date))
	corrected := time.Duration(ageValue(s.Fields))*time.Second + s.Now.Sub(s.ReqTime)
	e.initialAge = int64(max(apparent, corrected))
	e.noCache = d.NoCache
	e.mustReval = d.MustRevalidate || d.ProxyRevalidate
	e.staleErr, e.staleReval = -1, -1
	if d.StaleIfError >= 0 {
		e.staleErr = d.StaleIfError * int64(time.Second)
	}
	if d.StaleWhileRevalidate >= 0 {
		e.staleReval = d.StaleWhileRevalidate * int64(time.Second)
	}
	n := len(s.Body)
	for _, f := range s.Fields {
		n += len(f.Name) + len(f.Value)
	}
	arena := make([]byte, 0, n)
	arena = append(arena, s.Body...)
	e.Body = arena[:len(s.Body):len(s.Body)]
	e.Fields = make([]codec.Header, 0, len(s.Fields))
	for _, f := range s.Fields {
		if codec.EqualFold(f.Name, "Age") || codec.EqualFold(f.Name, "Server") || omitted(f.Name, d.Omit) {
			continue // the server renders its own Server, and the Age of each use
		}
		at := len(arena)
		arena = append(arena, f.Name...)
		arena = append(arena, f.Value...)
		h := codec.Header{Name: arena[at : at+len(f.Name) : at+len(f.Name)], Value: arena[at+len(f.Name) : len(arena) : len(arena)]}
		e.Fields = append(e.Fields, h)
		switch {
		case codec.EqualFold(h.Name, "ETag"):
			e.ETag = h.Value
		case codec.EqualFold(h.Name, "Last-Modified"):
			e.LastModified = h.Value
		case codec.EqualFold(h.Name, "Vary"):
			e.addVary(h.Value, s.Request)
		}
	}
	e.size = int64(cap(arena)) + int64(cap(e.Fields))*48 + 256
	return e
}

// omitted reports whether name is among omit (a qualified no-cache).
func omitted(name []byte, omit [][]byte) bool {
	for _, o := range omit {
		if codec.EqualFoldBytes(name, o) {
			return true
		}
	}
	return false
}

// addVary records the request fields a Vary value names and their values.
func (e *Entry) addVary(v []byte, req []codec.Header) {
	for len(v) > 0 {
		var name []byte
		name, v = nextItem(v)
		if len(name) == 0 {
			continue
		}
		lower := bytes.ToLower(name)
		e.vary = append(e.vary, lower)
		e.varyVals = append(e.varyVals, normalise(lower, requestValue(req, lower)))
	}
}

// requestValue joins the values of every field of req named name.
func requestValue(req []codec.Header, name []byte) []byte {
	var out []byte
	for i := range req {
		if codec.EqualFoldBytes(req[i].Name, name) {
			if out != nil {
				out = append(out, ',')
			}
			out = append(out, req[i].Value...)
		}
	}
	return out
}

// normalise makes a request field's value comparable: white space
// removed and, for Accept-Encoding, lower case (so "gzip, br" and
// "GZIP,br" select one variant).
func normalise(name, v []byte) []byte {
	out := make([]byte, 0, len(v))
	for _, c := range v {
		if c == ' ' || c == '\t' {
			continue
		}
		if string(name) == "accept-encoding" && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out = append(out, c)
	}
	return out
}

// Matches reports whether req selects e (RFC 9111 section 4.1): each
// field Vary names has the value it had in the request that fetched e.
// It does not allocate for a response without Vary, nor for fields
// whose value needs no normalising.
func (e *Entry) Matches(req []codec.Header) bool {
	for i, name := range e.vary {
		if !sameNormal(name, e.varyVals[i], req) {
			return false
		}
	}
	return true
}

// sameNormal compares the normalised value of req's fields named name
// with want, without allocating.
func sameNormal(name, want []byte, req []codec.Header) bool {
	j, first := 0, true
	for i := range req {
		if !codec.EqualFoldBytes(req[i].Name, name) {
			continue
		}
		if !first {
			if j >= len(want) || want[j] != ',' {
				return false
			}
			j++
		}
		first = false
		for _, c := range req[i].Value {
			if c == ' ' || c == '\t' {
				continue
			}
			if string(name) == "accept-encoding" && 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if j >= len(want) || want[j] != c {
				return false
			}
			j++
		}
	}
	return j == len(want)
}

// Age returns the entry's current age at now (section 4.2.3).
func (e *Entry) Age(now int64) time.Duration {
	return time.Duration(e.initialAge + max(0, now-e.stored))
}

// Fresh reports whether the entry may be served without validation at
// now to a request whose directives are d.
func (e *Entry) Fresh(now int64, d *Directives) bool {
	if e.noCache || d.NoCache {
		return false
	}
	age := int64(e.Age(now))
	life := e.lifetime
	if d.MaxAge >= 0 {
		life = min(life, d.MaxAge*int64(time.Second))
	}
	if d.MinFresh >= 0 {
		age += d.MinFresh * int64(time.Second)
	}
	if age < life {
		return true
	}
	if e.mustReval || e.lifetime == 0 && d.MaxAge < 0 {
		return false
	}
	return d.MaxStaleAny || d.MaxStale >= 0 && age-life <= d.MaxStale*int64(time.Second)
}

// UsableOnError reports whether the entry may stand in for an error
// (a 5xx, or no answer) from the upstream at now: it is still within
// its stale-if-error window (RFC 5861 section 4), and must-revalidate
// does not forbid serving it stale.
func (e *Entry) UsableOnError(now int64) bool {
	if e.mustReval || e.staleErr < 0 {
		return false
	}
	return int64(e.Age(now))-e.lifetime <= e.staleErr
}

// WhileRevalidating reports whether the entry, stale at now, may still
// be served to a request whose directives are d while it is revalidated
// (RFC 5861 section 3): it is within its stale-while-revalidate window,
// and neither the response (no-cache, must-revalidate, proxy-revalidate)
// nor the request (no-cache, max-age, min-fresh) asks for validation.
func (e *Entry) WhileRevalidating(now int64, d *Directives) bool {
	if e.staleReval < 0 || e.mustReval || e.noCache || d.NoCache || d.MaxAge >= 0 || d.MinFresh >= 0 {
		return false
	}
	return int64(e.Age(now))-e.lifetime <= e.staleReval
}

// The revalidation turns of an entry served stale while revalidating.
const (
	turnNone  uint32 = iota // not yet served stale
	turnDue                 // served stale: the next request revalidates
	turnTaken               // a request is revalidating it
)

// TakeRevalidation reports whether the caller is the one request that
// revalidates the entry, stale while revalidating: the first request
// that sees it stale is served the stored copy and makes a revalidation
// due, the next one takes it, and every other is served the stored copy
// until a new entry replaces it (or ReleaseRevalidation hands the turn
// back). It does not allocate.
func (e *Entry) TakeRevalidation() bool {
	if e.turn.CompareAndSwap(turnNone, turnDue) {
		return false
	}
	return e.turn.CompareAndSwap(turnDue, turnTaken)
}

// ReleaseRevalidation hands a taken revalidation back, after it failed:
// a later request tries again.
func (e *Entry) ReleaseRevalidation() { e.turn.CompareAndSwap(turnTaken, turnDue) }

// Validatable reports whether the entry can be revalidated upstream.
func (e *Entry) Validatable() bool { return e.ETag != nil || e.LastModified != nil }

// Refreshed returns a copy of e updated by a 304 response (section
// 4.3.4): its fields replace the stored ones of the same name, and the
// freshness starts again from the 304.
func (e *Entry) Refreshed(s Stored, d *Directives) *Entry {
	merged := make([]codec.Header, 0, len(e.Fields)+len(s.Fields))
	for _, f := range e.Fields {
		if field(s.Fields, string(f.Name)) == nil {
			merged = append(merged, f)
		}
	}
	for _, f := range s.Fields {
		if codec.EqualFold(f.Name, "Content-Length") || codec.EqualFold(f.Name, "Content-Encoding") && len(field(e.Fields, "Content-Encoding")) == 0 {
			continue
		}
		merged = append(merged, f)
	}
	nd := ParseDirectives(merged)
	if d != nil && d.NoStore {
		nd.NoStore = true
	}
	n := New(Stored{Status: e.Status, Fields: merged, Body: e.Body, ReqTime: s.ReqTime, Now: s.Now}, &nd)
	n.vary, n.varyVals = e.vary, e.varyVals
	return n
}
