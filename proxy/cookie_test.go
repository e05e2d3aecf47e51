package proxy

import (
	"testing"

	"gale/codec"
)

func TestCookieValue(t *testing.T) {
	hs := func(values ...string) []codec.Header {
		var out []codec.Header
		for _, v := range values {
			out = append(out, codec.Header{Name: []byte("Cookie"), Value: []byte(v)})
		}
		return out
	}
	for _, c := range []struct {
		hs   []codec.Header
		want string
	}{
		{hs("sid=abc"), "abc"},
		{hs("a=b; sid=abc; c=d"), "abc"},
		{hs("a=b;sid=abc"), "abc"},
		{hs("xsid=1; sid=2"), "2"},
		{hs("sidx=1"), ""},
		{hs("sid="), ""},
		{hs("a=b", "sid=crumb"), "crumb"}, // HTTP/2 cookie crumbs
		{[]codec.Header{{Name: []byte("cookie"), Value: []byte("sid=lower")}}, "lower"},
		{[]codec.Header{{Name: []byte("X-Cookie"), Value: []byte("sid=no")}}, ""},
	} {
		if got := string(cookieValue(c.hs, "sid")); got != c.want {
			t.Errorf("cookieValue(%q) = %q, want %q", c.hs, got, c.want)
		}
	}
}
