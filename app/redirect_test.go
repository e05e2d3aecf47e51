package app

import "testing"

// hostOnly keeps what may go into a redirect's Location and drops the
// port and trailing dots; an empty result is refused (400).
func TestHostOnly(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"example.com", "example.com"},
		{"Example.COM:8443", "Example.COM"},
		{"example.com.:80", "example.com"},
		{"example.com..", "example.com"},
		{"a.b:8 0", "a.b"},
		{"a_b-c.d", "a_b-c.d"},
		{"[::1]:443", "[::1]"},
		{"[::1]", "[::1]"},
		{"[::1]]", "[::1]"},
		{"[]", "[]"},
		{"[::FFFF:1.2.3.4]", "[::FFFF:1.2.3.4]"},
		{".", ""},
		{":80", ""},
		{"", ""},
		{"[", ""},
		{"[::1", ""},
		{"[::1.", ""},
		{"[::g]", ""},
		{"a b:80", ""},
		{"a/b", ""},
		{"a@b", ""},
		{"\xffa", ""},
	} {
		if got := hostOnly([]byte(tt.in)); string(got) != tt.want {
			t.Errorf("hostOnly(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
