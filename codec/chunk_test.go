package codec

import (
	"strconv"
	"testing"
)

// TestAppendChunkSize checks the size line against strconv for sizes
// around every hex digit boundary.
func TestAppendChunkSize(t *testing.T) {
	for _, n := range []int{1, 9, 10, 15, 16, 17, 255, 256, 4095, 4096, 1 << 20, 1<<31 - 1, 1<<62 + 5} {
		want := strconv.FormatUint(uint64(n), 16) + "\r\n"
		if got := string(AppendChunkSize([]byte("x"), n)); got != "x"+want {
			t.Errorf("AppendChunkSize(%d) = %q, want %q", n, got, "x"+want)
		}
	}
	if got := string(AppendChunk(nil, []byte("hello"))); got != "5\r\nhello\r\n" {
		t.Errorf("AppendChunk = %q", got)
	}
	if got := string(AppendLastChunk(nil, []Header{{Name: []byte("X-T"), Value: []byte("v")}})); got != "0\r\nX-T: v\r\n\r\n" {
		t.Errorf("AppendLastChunk = %q", got)
	}
	if got := string(AppendChunk(nil, nil)); got != "" {
		t.Errorf("AppendChunk of nothing = %q", got)
	}
}
