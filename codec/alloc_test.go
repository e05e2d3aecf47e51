//go:build !race

package codec

import "testing"

// These tests fail on any allocation in the hot paths. The race detector
// allocates, so they are not built with -race.

func TestParseAllocs(t *testing.T) {
	buf := []byte(typicalGET)
	var r Request
	if _, err := Parse(buf, &r, nil); err != nil {
		t.Fatal(err)
	}
	lim := &Limits{}
	if n := testing.AllocsPerRun(200, func() {
		if _, err := Parse(buf, &r, lim); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Parse of a GET with 8 fields: %v allocations; want 0", n)
	}
	// Needing more, and errors, do not allocate either.
	part := buf[:len(buf)/2]
	bad := []byte("GET / HTTP/1.1\r\nHost : a\r\n\r\n")
	if n := testing.AllocsPerRun(200, func() {
		r.Reset()
		_, _ = Parse(part, &r, lim)
		_, _ = Parse(bad, &r, lim)
	}); n != 0 {
		t.Errorf("Parse of a partial and a bad head: %v allocations; want 0", n)
	}
}

func TestBodyReaderAllocs(t *testing.T) {
	in := []byte("5;a=b\r\nhello\r\n6\r\n world\r\n0\r\nX: y\r\n\r\n")
	r := &Request{Chunked: true, ContentLength: -1}
	var b BodyReader
	if n := testing.AllocsPerRun(200, func() {
		b.Init(r, 0)
		off := 0
		for {
			m, _, done, err := b.Next(in[off:])
			if err != nil || done || m == 0 {
				break
			}
			off += m
		}
	}); n != 0 {
		t.Errorf("BodyReader: %v allocations; want 0", n)
	}
}

func TestAppendFieldLinesAllocs(t *testing.T) {
	fs := []Header{{[]byte("Content-Type"), []byte("text/plain")}, {[]byte("ETag"), []byte(`"a-b"`)}}
	dst := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(200, func() {
		b := AppendFieldLines(dst[:0], fs)
		b = AppendContentLength(b, 12345)
		_ = AppendConnection(b, true, false)
	}); n != 0 {
		t.Errorf("field lines: %v allocations; want 0", n)
	}
}

func TestAppendResponseHeadAllocs(t *testing.T) {
	h := &ResponseHead{
		Status:  200,
		Version: HTTP11,
		Headers: []Header{
			{[]byte("Content-Type"), []byte("text/html; charset=utf-8")},
			{[]byte("ETag"), []byte(`"5e1f-17a"`)},
			{[]byte("Last-Modified"), []byte("Sun, 06 Nov 1994 08:49:37 GMT")},
			{[]byte("Cache-Control"), []byte("max-age=60")},
		},
		ContentLength: 1234,
		Server:        []byte("gale"),
	}
	dst := make([]byte, 0, 1024)
	AppendDate(nil) // start the ticker outside the measurement
	if n := testing.AllocsPerRun(200, func() {
		dst = AppendResponseHead(dst[:0], h)
	}); n != 0 {
		t.Errorf("AppendResponseHead: %v allocations; want 0", n)
	}
	if n := testing.AllocsPerRun(200, func() {
		dst = AppendDate(dst[:0])
	}); n != 0 {
		t.Errorf("AppendDate: %v allocations; want 0", n)
	}
	if n := testing.AllocsPerRun(200, func() {
		dst = AppendErrorResponse(dst[:0], 404, true, true, []byte("gale"))
	}); n != 0 {
		t.Errorf("AppendErrorResponse: %v allocations; want 0", n)
	}
	accept := []byte("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	if n := testing.AllocsPerRun(200, func() {
		_ = AcceptsJSONOnly(accept)
	}); n != 0 {
		t.Errorf("AcceptsJSONOnly: %v allocations; want 0", n)
	}
}
