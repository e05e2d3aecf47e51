package codec

import "testing"

func TestAppendFieldLines(t *testing.T) {
	fs := []Header{
		{[]byte("Content-Type"), []byte("text/plain")},
		{[]byte("X-Empty"), nil},
		{[]byte("ETag"), []byte(`"a-b"`)},
	}
	got := string(AppendFieldLines([]byte("x"), fs))
	if want := "xContent-Type: text/plain\r\nX-Empty: \r\nETag: \"a-b\"\r\n"; got != want {
		t.Errorf("AppendFieldLines = %q; want %q", got, want)
	}
	if got := string(AppendContentLength(nil, 0)); got != "Content-Length: 0\r\n" {
		t.Errorf("AppendContentLength(0) = %q", got)
	}
	for _, tt := range []struct {
		closeConn, keep10 bool
		want              string
	}{
		{false, false, ""},
		{true, false, "Connection: close\r\n"},
		{true, true, "Connection: close\r\n"},
		{false, true, "Connection: keep-alive\r\n"},
	} {
		if got := string(AppendConnection(nil, tt.closeConn, tt.keep10)); got != tt.want {
			t.Errorf("AppendConnection(%v, %v) = %q; want %q", tt.closeConn, tt.keep10, got, tt.want)
		}
	}
}
