package hpack

import (
	"strconv"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// TestAppendStatusEveryStatus: every three-digit status, indexed or
// literal, decodes as itself with x/net's decoder.
func TestAppendStatusEveryStatus(t *testing.T) {
	for status := 100; status <= 999; status++ {
		b := AppendStatus(nil, status)
		got, err := hpack.NewDecoder(4096, nil).DecodeFull(b)
		if err != nil || len(got) != 1 || got[0].Name != ":status" || got[0].Value != strconv.Itoa(status) {
			t.Fatalf("status %d: %x decodes as %v, %v", status, b, got, err)
		}
		if indexed := b[0]&0x80 != 0; indexed != (len(b) == 1) {
			t.Fatalf("status %d: %x", status, b)
		}
	}
}
