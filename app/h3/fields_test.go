package h3

import (
	"net/http"
	"reflect"
	"testing"
)

// TestParseHead: a head rendered ahead of time becomes the same header
// map entries as the fields it was rendered from, keyed as quic-go reads
// them (Content-Type canonical, the rest lower case), without its status
// line, Date and Content-Length (the writer renders those).
func TestParseHead(t *testing.T) {
	head := []byte("HTTP/1.1 200 OK\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\nServer: gale\r\n" +
		"Content-Type: text/html; charset=utf-8\r\nContent-Length: 14\r\nETag: \"1-2\"\r\n" +
		"X-Custom-Header:  spaced\r\nVary: Accept-Encoding\r\nVary: Origin\r\n")
	h := http.Header{}
	var c headCache
	p := c.get(head)
	if c.get(head) != p {
		t.Fatal("the same head was parsed twice")
	}
	p.addTo(h)
	want := http.Header{
		"server":          {"gale"},
		"Content-Type":    {"text/html; charset=utf-8"},
		"etag":            {`"1-2"`},
		"x-custom-header": {"spaced"},
		"vary":            {"Accept-Encoding", "Origin"},
	}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("got %v\nwant %v", h, want)
	}
	if other := append([]byte(nil), head...); c.get(other) == p {
		t.Fatal("a head at another address took the cached parse")
	}
}

// TestFieldKey keys the three fields quic-go looks up canonically and
// every other in lower case.
func TestFieldKey(t *testing.T) {
	for in, want := range map[string]string{
		"content-type": "Content-Type", "CONTENT-LENGTH": "Content-Length", "Date": "Date",
		"ETag": "etag", "X-Frame-Options": "x-frame-options", "X-Other": "x-other", "vary": "vary",
	} {
		if got := fieldKey([]byte(in)); got != want {
			t.Errorf("fieldKey(%q) = %q, want %q", in, got, want)
		}
	}
}
