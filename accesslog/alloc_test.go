//go:build !race

package accesslog

import (
	"runtime"
	"testing"
	"time"

	"gale/codec"
)

// TestLineAllocs proves that logging a request allocates nothing once
// the buffers have grown, in both formats: the record filled from the
// request, kept into the connection's buffer, and its line appended to
// the loop's. The timestamp's text is rendered once a second; a run that
// crosses a second allocates that once, so such a run is measured again.
func TestLineAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var r codec.Request
	parse(t, "GET /a?b=1 HTTP/1.1\r\nHost: example.com\r\nReferer: http://r/\r\nUser-Agent: wrk\r\n\r\n", &r)
	for _, format := range []string{"combined", "json"} {
		a := openLog(t, format)
		var rec Record
		var kept, lines []byte
		logOne := func() {
			rec.FromRequest(&r, nil)
			kept = rec.Keep(kept)
			lines = a.AppendLine(lines[:0], testRemote, &rec, 200, 1234, time.Now().UnixNano())
		}
		logOne() // grow the buffers
		n := testing.AllocsPerRun(200, logOne)
		if n != 0 {
			n = testing.AllocsPerRun(200, logOne)
		}
		if n != 0 {
			t.Errorf("%s: %v allocations per line, want 0", format, n)
		}
	}
}
