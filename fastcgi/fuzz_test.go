package fastcgi

import (
	"bufio"
	"bytes"
	"net/textproto"
	"strings"
	"testing"
)

// FuzzParse frames records from arbitrary bytes: Parse never panics,
// takes no more than it was given, agrees with the header's own lengths,
// and splitting the input at any point only ever asks for more.
func FuzzParse(f *testing.F) {
	f.Add(append(AppendHeader(nil, TypeStdout, 1, 3), "abc"...))
	f.Add([]byte{1, TypeEndRequest, 0, 1, 0, 8, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 9})
	f.Add([]byte{1, TypeStderr, 0, 1, 0xff, 0xff, 0xff, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 2*MaxRecord {
			return
		}
		off := 0
		for off < len(b) {
			r, n, err := Parse(b[off:])
			if err != nil {
				if err == ErrNeedMore && len(b)-off >= MaxRecord {
					t.Fatalf("needs more with %d bytes", len(b)-off)
				}
				break
			}
			h := b[off:]
			clen := int(h[4])<<8 | int(h[5])
			if n != HeaderLen+clen+int(h[6]) || n > len(h) || len(r.Content) != clen || n > MaxRecord {
				t.Fatalf("n=%d content=%d header=%v", n, len(r.Content), h[:8])
			}
			for i := 0; i < n; i++ {
				if _, _, err := Parse(h[:i]); err != ErrNeedMore && err != ErrVersion {
					t.Fatalf("prefix %d of a record: %v", i, err)
				}
			}
			if r.Type == TypeEndRequest {
				_, _, _ = ParseEndRequest(r.Content)
			}
			off += n
		}
	})
}

// FuzzPairs parses a name-value pair stream and checks that encoding the
// pairs again gives the same bytes (each length has one shortest form but
// a long form is allowed for short lengths, so only streams whose lengths
// are in their shortest form must round-trip).
func FuzzPairs(f *testing.F) {
	f.Add(AppendPair(AppendPair(nil, []byte("A"), []byte("b")), bytes.Repeat([]byte("n"), 200), []byte("v")))
	f.Add([]byte{0x80, 0, 0, 1, 0, 'a'})
	f.Fuzz(func(t *testing.T, b []byte) {
		var out []byte
		short := true
		for p := b; len(p) > 0; {
			k, v, n, err := NextPair(p)
			if err != nil {
				return
			}
			if n <= 0 || n > len(p) {
				t.Fatalf("n=%d of %d", n, len(p))
			}
			if p[0] >= 0x80 && len(k) < 128 {
				short = false
			}
			out = AppendPair(out, k, v)
			p = p[n:]
		}
		if short && len(out) == len(b) && !bytes.Equal(out, b) {
			t.Fatalf("re-encoded %q as %q", b, out)
		}
	})
}

// FuzzParseHead parses CGI heads: never a panic, fields that alias the
// head, and for every head accepted, net/textproto reads the same fields
// (it is laxer: what it rejects, ParseHead must reject too).
func FuzzParseHead(f *testing.F) {
	f.Add([]byte("Status: 404 Not Found\r\nContent-type: text/html\r\n\r\nbody"))
	f.Add([]byte("Location: /x\n\n"))
	f.Add([]byte("A: b\r\nA: c\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Head
		if ParseHead(b, &h, 4096, 64) != nil {
			return
		}
		if h.Len <= 0 || h.Len > len(b) {
			t.Fatalf("Len %d of %d", h.Len, len(b))
		}
		for _, fl := range h.Fields {
			if len(fl.Name) == 0 || bytes.ContainsAny(fl.Value, "\r\n\x00") {
				t.Fatalf("field %q: %q", fl.Name, fl.Value)
			}
		}
		tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(b[:h.Len])))
		m, err := tp.ReadMIMEHeader()
		if err != nil {
			t.Fatalf("textproto rejects an accepted head %q: %v", b[:h.Len], err)
		}
		n := 0
		for _, vs := range m {
			n += len(vs)
		}
		want := len(h.Fields)
		if h.Status != 0 {
			want++
		}
		if n != want {
			t.Fatalf("textproto sees %d fields, ParseHead %d: %q", n, want, b[:h.Len])
		}
		for _, fl := range h.Fields {
			got := m.Values(string(fl.Name))
			found := false
			for _, v := range got {
				found = found || v == string(fl.Value)
			}
			if !found && !strings.ContainsAny(string(fl.Name), "\x00") {
				t.Fatalf("field %q=%q not in %q", fl.Name, fl.Value, got)
			}
		}
	})
}
