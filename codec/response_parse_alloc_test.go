//go:build !race

package codec

import "testing"

// TestParseResponseAllocs fails on any allocation when parsing a typical
// upstream response head and framing its body (the race detector
// allocates, so this file is not built with -race).
func TestParseResponseAllocs(t *testing.T) {
	buf := []byte("HTTP/1.1 200 OK\r\nServer: upstream\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\n" +
		"Content-Type: text/html; charset=utf-8\r\nCache-Control: no-cache\r\nSet-Cookie: a=b; Path=/\r\n" +
		"Vary: Accept-Encoding\r\nContent-Length: 5\r\n\r\nhello")
	var r Response
	if _, err := ParseResponse(buf, &r, nil); err != nil {
		t.Fatal(err)
	}
	var b BodyReader
	if n := testing.AllocsPerRun(200, func() {
		n, err := ParseResponse(buf, &r, nil)
		if err != nil {
			t.Fatal(err)
		}
		b.InitResponse(&r, false)
		if _, _, done, err := b.Next(buf[n:]); err != nil || !done {
			t.Fatal("body not framed")
		}
	}); n != 0 {
		t.Errorf("ParseResponse and body framing: %v allocations; want 0", n)
	}
	part := buf[:40]
	bad := []byte("HTTP/1.1 200 OK\r\nA : b\r\n\r\n")
	if n := testing.AllocsPerRun(200, func() {
		r.Reset()
		_, _ = ParseResponse(part, &r, nil)
		_, _ = ParseResponse(bad, &r, nil)
	}); n != 0 {
		t.Errorf("ParseResponse of a partial and a bad head: %v allocations; want 0", n)
	}
}
