package codec

import "testing"

func TestHostName(t *testing.T) {
	for _, tt := range []struct{ in, name, normal string }{
		{"", "", ""},
		{"example.com", "example.com", "example.com"},
		{"Example.COM.:8080", "Example.COM", "example.com"},
		{"example.com.", "example.com", "example.com"},
		{"example.com..", "example.com.", "example.com."},
		{"a:b:c", "a", "a"},
		{":80", "", ""},
		{".", "", ""},
		{"[::1]:443", "[::1]", "[::1]"},
		{"[::1]", "[::1]", "[::1]"},
		{"[::1].", "[::1]", "[::1]"},
		{"[FE80::1]]", "[FE80::1]", "[fe80::1]"},
		{"[::1", "[::1", "[::1"},
		{"[::1.", "[::1", "[::1"},
		{"127.0.0.1:80", "127.0.0.1", "127.0.0.1"},
	} {
		if got := string(HostName([]byte(tt.in))); got != tt.name {
			t.Errorf("HostName(%q) = %q; want %q", tt.in, got, tt.name)
		}
		if got := string(AppendNormalHost([]byte("x"), []byte(tt.in))); got != "x"+tt.normal {
			t.Errorf("AppendNormalHost(%q) = %q; want %q", tt.in, got, "x"+tt.normal)
		}
	}
}
