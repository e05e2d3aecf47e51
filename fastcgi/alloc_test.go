//go:build !race

package fastcgi

import (
	"testing"

	"gale/codec"
)

// TestCodecAllocs: framing a record, reading pairs and parsing a CGI head
// into reused storage allocate nothing.
func TestCodecAllocs(t *testing.T) {
	rec := append(AppendHeader(nil, TypeStdout, 1, 60), "Status: 200 OK\r\nContent-Type: text/html; charset=UTF-8\r\n\r\nhi"...)
	pairs := AppendPair(nil, []byte("SCRIPT_NAME"), []byte("/index.php"))
	h := Head{Fields: make([]codec.Header, 0, 8)}
	out := make([]byte, 0, 256)
	n := testing.AllocsPerRun(100, func() {
		r, _, err := Parse(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := ParseHead(r.Content, &h, 0, 0); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := NextPair(pairs); err != nil {
			t.Fatal(err)
		}
		out = AppendBeginRequest(out[:0], 1, RoleResponder, FlagKeepConn)
		out = AppendPairString(out, "QUERY_STRING", r.Content[:4])
	})
	if n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
