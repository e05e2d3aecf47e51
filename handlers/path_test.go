package handlers

import (
	"path"
	"strings"
	"testing"
)

func TestDecodeAndClean(t *testing.T) {
	tests := []struct {
		in     string
		status int    // from decoding or cleaning; 0 = ok
		clean  string // when ok
		dir    bool
	}{
		{"/", 0, "/", true},
		{"/a", 0, "/a", false},
		{"/a/", 0, "/a", true},
		{"//a//b//", 0, "/a/b", true},
		{"/a/./b", 0, "/a/b", false},
		{"/a/.", 0, "/a", true},
		{"/a/b/..", 0, "/a", true},
		{"/a/b/../", 0, "/a", true},
		{"/a/../..", 400, "", false},
		{"/..", 400, "", false},
		{"/../a", 400, "", false},
		{"/a/%2e%2e/%2E%2e/b", 400, "", false},
		{"/a/%2e%2e/b", 0, "/b", false},
		{"/...", 0, "/...", false},
		{"/..a/a..", 0, "/..a/a..", false},
		{"/%41%62%20c", 0, "/Ab c", false},
		{"/a%2fb", 404, "", false},
		{"/a%2Fb", 404, "", false},
		{"/a%5cb", 404, "", false},
		{"/a\\b", 404, "", false},
		{"/a%00", 400, "", false},
		{"/a\x00", 400, "", false},
		{"/a%", 400, "", false},
		{"/a%4", 400, "", false},
		{"/a%g0", 400, "", false},
		{"/a%0g", 400, "", false},
		{"/%252e%252e", 0, "/%2e%2e", false},
		{"/caf%C3%A9", 0, "/caf\xc3\xa9", false},
	}
	for _, tt := range tests {
		dec, status := appendDecodedPath(nil, []byte(tt.in))
		var clean []byte
		var dir, ok bool
		if status == 0 {
			clean, dir, ok = cleanPath(dec)
			if !ok {
				status = 400
			}
		}
		if status != tt.status {
			t.Errorf("%q: status %d; want %d", tt.in, status, tt.status)
			continue
		}
		if status == 0 && (string(clean) != tt.clean || dir != tt.dir) {
			t.Errorf("%q: clean %q dir %v; want %q %v", tt.in, clean, dir, tt.clean, tt.dir)
		}
	}
}

func TestHasHiddenSegment(t *testing.T) {
	for p, want := range map[string]bool{
		"/": false, "/a": false, "/a.b/c.d": false, "/.a": true, "/a/.b": true, "/a/.b/c": true, "/a./b": false,
	} {
		if got := hasHiddenSegment([]byte(p)); got != want {
			t.Errorf("hasHiddenSegment(%q) = %v", p, got)
		}
	}
}

// FuzzCleanPath checks that whatever a request path decodes to, the clean
// path stays under the root and agrees with path.Clean.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/", "/a/../b", "/%2e%2e/x", "//a//./b/", "/a/b/../../..", "/.%2e/", "/%252e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 4096 {
			return
		}
		p := "/" + in
		dec, status := appendDecodedPath(nil, []byte(p))
		if status != 0 {
			return
		}
		clean, _, ok := cleanPath(append([]byte(nil), dec...))
		if !ok {
			// Only refused when path.Clean of the relative form climbs.
			segs := 0
			for _, s := range strings.Split(string(dec), "/") {
				switch s {
				case "", ".":
				case "..":
					segs--
				default:
					segs++
				}
				if segs < 0 {
					return
				}
			}
			t.Fatalf("%q refused but never climbs", dec)
		}
		if want := path.Clean(string(dec)); string(clean) != want {
			t.Fatalf("clean(%q) = %q; path.Clean says %q", dec, clean, want)
		}
		for _, s := range strings.Split(string(clean), "/") {
			if s == ".." || s == "." {
				t.Fatalf("clean(%q) = %q has a dot segment", dec, clean)
			}
		}
	})
}
