package httpcache

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"gale/codec"
)

func fields(kv ...string) []codec.Header {
	var hs []codec.Header
	for i := 0; i+1 < len(kv); i += 2 {
		hs = append(hs, codec.Header{Name: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return hs
}

func TestStorable(t *testing.T) {
	cases := []struct {
		name   string
		req    Request
		status int
		fields []codec.Header
		want   bool
	}{
		{"max-age", Request{}, 200, fields("Cache-Control", "max-age=10"), true},
		{"heuristic 200", Request{}, 200, nil, true},
		{"heuristic 404", Request{}, 404, nil, true},
		{"500 without freshness", Request{}, 500, nil, false},
		{"500 with max-age", Request{}, 500, fields("Cache-Control", "max-age=10"), true},
		{"206", Request{}, 206, fields("Cache-Control", "max-age=10"), false},
		{"no-store", Request{}, 200, fields("Cache-Control", "max-age=10, no-store"), false},
		{"private", Request{}, 200, fields("Cache-Control", "private, max-age=10"), false},
		{"request no-store", Request{NoStore: true}, 200, fields("Cache-Control", "max-age=10"), false},
		{"authorization", Request{Authorization: true}, 200, fields("Cache-Control", "max-age=10"), false},
		{"authorization public", Request{Authorization: true}, 200, fields("Cache-Control", "public, max-age=10"), true},
		{"authorization s-maxage", Request{Authorization: true}, 200, fields("Cache-Control", "s-maxage=10"), true},
		{"authorization must-revalidate", Request{Authorization: true}, 200, fields("Cache-Control", "must-revalidate, max-age=10"), true},
		{"set-cookie", Request{}, 200, fields("Cache-Control", "max-age=10", "Set-Cookie", "a=b"), false},
		{"set-cookie allowed", Request{StoreCookies: true}, 200, fields("Cache-Control", "max-age=10", "Set-Cookie", "a=b"), true},
		{"vary star", Request{}, 200, fields("Cache-Control", "max-age=10", "Vary", "*"), false},
		{"cdn no-store over cc", Request{}, 200, fields("Cache-Control", "max-age=10", "CDN-Cache-Control", "no-store"), false},
		{"invalid cdn ignored", Request{}, 200, fields("Cache-Control", "no-store", "CDN-Cache-Control", `max-age="10"`), false},
	}
	for _, tc := range cases {
		d := ParseDirectives(tc.fields)
		if got := Storable(tc.req, tc.status, tc.fields, &d); got != tc.want {
			t.Errorf("%s: Storable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLifetime(t *testing.T) {
	date := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return date.Add(d).Format(http.TimeFormat) }
	cases := []struct {
		name   string
		status int
		fields []codec.Header
		want   time.Duration
	}{
		{"s-maxage over max-age", 200, fields("Cache-Control", "max-age=10, s-maxage=20"), 20 * time.Second},
		{"max-age over expires", 200, fields("Cache-Control", "max-age=10", "Expires", at(time.Hour)), 10 * time.Second},
		{"expires", 200, fields("Expires", at(time.Hour)), time.Hour},
		{"expires invalid", 200, fields("Expires", "0"), 0},
		{"expires one-digit hour", 200, fields("Expires", "Thu, 01 Jan 2026 1:00:00 GMT"), 0},
		{"expires twice", 200, fields("Expires", at(time.Hour), "Expires", at(time.Hour)), 0},
		{"heuristic", 200, fields("Last-Modified", at(-100*time.Hour)), 10 * time.Hour},
		{"no heuristic for 500", 500, fields("Last-Modified", at(-100*time.Hour)), 0},
		{"bad max-age is stale", 200, fields("Cache-Control", "max-age=abc", "Expires", at(time.Hour)), 0},
	}
	for _, tc := range cases {
		d := ParseDirectives(tc.fields)
		if got := Lifetime(tc.status, tc.fields, &d, date); got != tc.want {
			t.Errorf("%s: Lifetime = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseDate(t *testing.T) {
	for v, ok := range map[string]bool{
		"Sun, 06 Nov 1994 08:49:37 GMT":  true,
		"Sunday, 06-Nov-94 08:49:37 GMT": true,
		"Sun Nov  6 08:49:37 1994":       true,
		"Sun, 06 Nov 1994 8:49:37 GMT":   false,
		"Sun, 06  Nov 1994 08:49:37 GMT": false,
		"Sun, 06 Nov 1994 08:49:37 UTC":  false,
		"0":                              false,
	} {
		if _, got := ParseDate([]byte(v)); got != ok {
			t.Errorf("ParseDate(%q) ok = %v, want %v", v, got, ok)
		}
	}
}

func TestFreshAndAge(t *testing.T) {
	now := time.Now()
	s := Stored{Status: 200, Fields: fields("Cache-Control", "max-age=100", "Age", "30, 5", "Date", now.UTC().Format(http.TimeFormat)),
		ReqTime: now, Now: now}
	d := ParseDirectives(s.Fields)
	e := New(s, &d)
	if age := e.Age(now.UnixNano()) / time.Second; age != 30 {
		t.Fatalf("age %d, want 30 (the first member of Age)", age)
	}
	none := ParseDirectives(nil)
	at := func(sec int) int64 { return now.Add(time.Duration(sec) * time.Second).UnixNano() }
	if !e.Fresh(at(60), &none) || e.Fresh(at(80), &none) {
		t.Fatal("max-age=100 with Age 30: fresh until 70s")
	}
	maxStale := ParseDirectives(fields("Cache-Control", "max-stale=20"))
	minFresh := ParseDirectives(fields("Cache-Control", "min-fresh=20"))
	if !e.Fresh(at(80), &maxStale) || e.Fresh(at(60), &minFresh) {
		t.Fatal("max-stale and min-fresh not honoured")
	}
	mr := ParseDirectives(fields("Cache-Control", "max-age=1, must-revalidate"))
	e2 := New(Stored{Status: 200, Fields: fields("Cache-Control", "max-age=1, must-revalidate"), ReqTime: now, Now: now}, &mr)
	anyStale := ParseDirectives(fields("Cache-Control", "max-stale"))
	if e2.Fresh(at(5), &anyStale) {
		t.Fatal("must-revalidate served stale")
	}
}

func TestVaryMatches(t *testing.T) {
	d := ParseDirectives(nil)
	e := New(Stored{Status: 200, Fields: fields("Vary", "Accept-Encoding, X-Lang"),
		Request: fields("Accept-Encoding", "gzip, br", "X-Lang", "en")}, &d)
	for _, tc := range []struct {
		req  []codec.Header
		want bool
	}{
		{fields("Accept-Encoding", "GZIP,br", "X-Lang", "en"), true},
		{fields("Accept-Encoding", "gzip", "X-Lang", "en"), false},
		{fields("Accept-Encoding", "gzip, br"), false},
		{fields("Accept-Encoding", "gzip", "Accept-Encoding", "br", "X-Lang", "en"), true}, // one list over two field lines
		{fields("accept-encoding", "gzip,br", "x-lang", "en"), true},
	} {
		if got := e.Matches(tc.req); got != tc.want {
			t.Errorf("Matches(%v) = %v, want %v", tc.req, got, tc.want)
		}
	}
	req := fields("Accept-Encoding", "gzip, br", "X-Lang", "en")
	if n := testing.AllocsPerRun(100, func() { e.Matches(req) }); n != 0 {
		t.Fatalf("Matches allocates %v times", n)
	}
}

// A store over its budget evicts; a view sees an invalidation at once.
func TestStoreEvictAndInvalidate(t *testing.T) {
	d := ParseDirectives(nil)
	mk := func() *Entry { return New(Stored{Status: 200, Body: make([]byte, 1000)}, &d) }
	s := NewStore(10 * mk().size)
	v := s.NewView()
	for i := range 30 {
		s.Put([]byte(fmt.Sprint("k", i)), mk())
	}
	if s.Bytes() > s.max || s.Stats().Evictions == 0 {
		t.Fatalf("bytes %d over budget %d, %d evictions", s.Bytes(), s.max, s.Stats().Evictions)
	}
	if v.Lookup([]byte("k29")) == nil {
		t.Fatal("the newest entry was evicted")
	}
	s.Invalidate([]byte("k29"))
	if v.Lookup([]byte("k29")) != nil {
		t.Fatal("the view still finds an invalidated entry")
	}
	s.Put([]byte("hot"), mk())
	v.Lookup([]byte("hot"))
	if n := testing.AllocsPerRun(100, func() { v.Lookup([]byte("hot")) }); n != 0 {
		t.Fatalf("a known key's lookup allocates %v times", n)
	}
}

// Fetches collapse: the second Join waits and is woken by Land.
func TestStoreFlights(t *testing.T) {
	s := NewStore(1 << 20)
	f, leader := s.Join([]byte("k"), time.Minute, func() {})
	if !leader {
		t.Fatal("the first join does not lead")
	}
	woke := make(chan struct{}, 1)
	if _, leader := s.Join([]byte("k"), time.Minute, func() { woke <- struct{}{} }); leader {
		t.Fatal("a second join leads")
	}
	if s.Waiting() != 1 {
		t.Fatalf("waiting %d", s.Waiting())
	}
	s.Land(f)
	<-woke
	if !f.Done() || s.Waiting() != 0 {
		t.Fatal("landing did not end the flight")
	}
	if _, leader := s.Join([]byte("k"), 0, func() {}); !leader {
		t.Fatal("a flight older than the timeout still collapses")
	}
}

// An entry is served stale while revalidating only within its
// stale-while-revalidate window and only when nothing asks for
// validation; one request takes the revalidation, after one was served
// stale, and a failed one hands it back.
func TestStaleWhileRevalidate(t *testing.T) {
	now := time.Now()
	mk := func(cc string) *Entry {
		fs := fields("Cache-Control", cc, "Date", now.UTC().Format(http.TimeFormat), "ETag", `"a"`)
		d := ParseDirectives(fs)
		return New(Stored{Status: 200, Fields: fs, ReqTime: now, Now: now}, &d)
	}
	none := Directives{MaxAge: -1, SMaxAge: -1, MaxStale: -1, MinFresh: -1}
	at := func(s int) int64 { return now.Add(time.Duration(s) * time.Second).UnixNano() }
	e := mk("max-age=1, stale-while-revalidate=5")
	if !e.WhileRevalidating(at(3), &none) || e.WhileRevalidating(at(7), &none) {
		t.Error("window: want usable 2 s past freshness, not 6 s past")
	}
	if mk("max-age=1, stale-while-revalidate=5, must-revalidate").WhileRevalidating(at(3), &none) || mk("max-age=1").WhileRevalidating(at(3), &none) {
		t.Error("must-revalidate, or no window, must not be served stale")
	}
	if nc := (Directives{NoCache: true, MaxAge: -1, SMaxAge: -1, MaxStale: -1, MinFresh: -1}); e.WhileRevalidating(at(3), &nc) {
		t.Error("a request's no-cache must not be answered stale")
	}
	if e.TakeRevalidation() || !e.TakeRevalidation() || e.TakeRevalidation() {
		t.Error("turns: want served stale, then taken once")
	}
	e.ReleaseRevalidation()
	if !e.TakeRevalidation() {
		t.Error("a released turn must be taken again")
	}
}
