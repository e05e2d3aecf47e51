package codec

import (
	"fmt"
	"reflect"
	"testing"
)

// A copy names the same request with none of the inbound buffer's bytes:
// overwriting the buffer leaves it intact, every form of target included.
func TestRequestCopyTo(t *testing.T) {
	for _, raw := range []string{
		"GET /a/b?x=1&y HTTP/1.1\r\nHost: example.com\r\nX-A: 1\r\nX-B: two\r\n\r\n",
		"GET http://example.com:8080/p/q?z HTTP/1.1\r\nHost: ignored\r\n\r\n",
		"GET http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /? HTTP/1.0\r\n\r\n",
		"POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n",
	} {
		buf := []byte(raw)
		var r Request
		if _, err := Parse(buf, &r, nil); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		want := snapshot(&r)
		var dst Request
		r.CopyTo(&dst, make([]byte, 0, 4))
		for i := range buf {
			buf[i] = '#'
		}
		if got := snapshot(&dst); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: copy %+v, want %+v", raw, got, want)
		}
	}
}

// snapshot is what r says, in memory of its own. A nil slice shows as
// "<nil>", so that a copy must keep nil and empty apart.
func snapshot(r *Request) []string {
	str := func(b []byte) string {
		if b == nil {
			return "<nil>"
		}
		return string(b)
	}
	out := []string{str(r.Method), str(r.Target), str(r.Path), str(r.Query), str(r.Host),
		fmt.Sprint(r.Form, r.Version, r.ContentLength, r.Chunked, r.KeepAlive, r.Expect100, r.Upgrade, r.HeadLen)}
	for _, f := range r.Headers {
		out = append(out, str(f.Name)+": "+str(f.Value))
	}
	return out
}

// A buffer and header storage reused between requests stop allocating.
func TestRequestCopyToAllocs(t *testing.T) {
	buf := []byte("GET /a/b?x HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nCookie: a=b\r\n\r\n")
	var r, dst Request
	if _, err := Parse(buf, &r, nil); err != nil {
		t.Fatal(err)
	}
	keep := r.CopyTo(&dst, nil)
	if n := testing.AllocsPerRun(100, func() { keep = r.CopyTo(&dst, keep) }); n != 0 {
		t.Errorf("%v allocations per copy, want 0", n)
	}
}
