package app

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"gale/cache"
)

// Ranges of a cached body that has a sealed memfd copy are sent from the
// right offset of it, whichever path a range takes: under cache.BlobMin
// (from memory), on the loop with sendfile (under
// server.max_buffered_output), and off the loop (over it).
func TestStaticRangesFromMemfd(t *testing.T) {
	ts := startServer(t, "server: {max_buffered_output: 256KiB}\n"+siteConfig, nil)
	const size = 900 << 10
	big := pseudoRandom(size, 21)
	writeSettled(t, filepath.Join(ts.dir, "site", "cached.bin"), big)
	cl := client()
	if _, body := get(t, cl, ts.url("/cached.bin")); !bytes.Equal(body, big) {
		t.Fatal("whole body differs")
	}
	for _, r := range [][2]int{
		{0, 99},                            // memory
		{12345, 12345 + cache.BlobMin + 7}, // loop, sendfile from an offset
		{300 << 10, size - 1},              // off the loop, to the end
		{1, size - 2},                      // off the loop, almost all
	} {
		spec := fmt.Sprintf("bytes=%d-%d", r[0], r[1])
		resp, body := get(t, cl, ts.url("/cached.bin"), "Range", spec)
		if resp.StatusCode != 206 || !bytes.Equal(body, big[r[0]:r[1]+1]) {
			t.Fatalf("%s: %d, %d bytes, equal %v", spec, resp.StatusCode, len(body), bytes.Equal(body, big[r[0]:r[1]+1]))
		}
	}
	resp, body := get(t, cl, ts.url("/cached.bin"), "Range", "bytes=-200000")
	if resp.StatusCode != 206 || !bytes.Equal(body, big[size-200000:]) {
		t.Fatalf("suffix range: %d, %d bytes", resp.StatusCode, len(body))
	}
}
