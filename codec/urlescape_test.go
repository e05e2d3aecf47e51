package codec

import "testing"

func TestAppendLocationSafe(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/a/b?c=d&e", "/a/b?c=d&e"},
		{"/a b", "/a%20b"},
		{"/%2F/%zz", "/%2F/%zz"},
		{`/\evil.com`, "/%5Cevil.com"},
		{"/\"<x>#f", "/%22%3Cx%3E%23f"},
		{"/\x00\x1f\x7f\xff\xc3\xa9", "/%00%1F%7F%FF%C3%A9"},
	} {
		if got := string(AppendLocationSafe([]byte("x"), []byte(tt.in))); got != "x"+tt.want {
			t.Errorf("AppendLocationSafe(%q) = %q; want %q", tt.in, got, "x"+tt.want)
		}
	}
	for b := 0; b < 256; b++ {
		got := AppendPercent(nil, byte(b))
		if len(got) != 3 || got[0] != '%' || got[1] != upperHex[b>>4] || got[2] != upperHex[b&15] {
			t.Errorf("AppendPercent(%#x) = %q", b, got)
		}
	}
}
