package cache

import (
	"testing"
)

func TestNegotiate(t *testing.T) {
	all := EncodingSet(0).With(Gzip).With(Zstd).With(Brotli)
	prefs := []Encoding{Zstd, Brotli, Gzip}
	tests := []struct {
		name  string
		value string // "<nil>" = field absent
		prefs []Encoding
		avail EncodingSet
		want  Encoding
	}{
		{"absent", "<nil>", prefs, all, Identity},
		{"empty", "", prefs, all, Identity},
		{"browser", "gzip, deflate, br, zstd", prefs, all, Zstd},
		{"route order breaks ties", "gzip, br", prefs, all, Brotli},
		{"route order gzip first", "gzip, br", []Encoding{Gzip, Brotli}, all, Gzip},
		{"only available", "gzip, br, zstd", prefs, EncodingSet(0).With(Gzip), Gzip},
		{"none available", "gzip", prefs, 0, Identity},
		{"not in route", "br", []Encoding{Gzip}, all, Identity},
		{"q orders", "gzip;q=1.0, br;q=0.9, zstd;q=0.5", prefs, all, Gzip},
		{"q=0 excludes", "zstd;q=0, br;q=0, gzip", prefs, all, Gzip},
		{"all excluded", "zstd;q=0, br;q=0, gzip;q=0", prefs, all, Identity},
		{"star", "*", prefs, all, Zstd},
		{"star excluded but listed", "*;q=0, gzip", prefs, all, Gzip},
		{"star with exclusion", "*, zstd;q=0", prefs, all, Brotli},
		{"star q below listed", "*;q=0.1, gzip;q=0.5", prefs, all, Gzip},
		{"identity preferred", "identity;q=1, gzip;q=0.5", prefs, all, Identity},
		{"identity below", "identity;q=0.2, gzip;q=0.5", prefs, all, Gzip},
		{"identity tie goes to coding", "identity, gzip", prefs, all, Gzip},
		{"identity excluded, nothing else", "identity;q=0", prefs, all, Identity},
		{"identity only", "identity", prefs, all, Identity},
		{"unlisted identity does not compete", "gzip;q=0.5, br;q=0.8", prefs, all, Brotli},
		{"star covers identity", "*;q=1, gzip;q=0.5", prefs, EncodingSet(0).With(Gzip), Identity},
		{"star covers other codings", "*;q=1, gzip;q=0.5", prefs, all, Zstd},
		{"x-gzip", "x-gzip", prefs, all, Gzip},
		{"case", "GZip;Q=0.5, BR;q=0.4", prefs, all, Gzip},
		{"ows", "  gzip ;  q=0.3 ,\tbr ; q=0.4  ", prefs, all, Brotli},
		{"empty elements", ",,, ,gzip,,", prefs, all, Gzip},
		{"unknown coding", "compress, deflate", prefs, all, Identity},
		{"invalid q ignored", "br;q=2, gzip", prefs, all, Gzip},
		{"invalid q digits", "br;q=0.1234, gzip;q=0.001", prefs, all, Gzip},
		{"q without value", "br;q=, gzip", prefs, all, Gzip},
		{"q=1.000", "br;q=1.000", prefs, all, Brotli},
		{"q=1.001 invalid", "br;q=1.001", prefs, all, Identity},
		{"q=0.000", "br;q=0.000, gzip;q=0.001", prefs, all, Gzip},
		{"other params skipped", "br;level=5;q=0.5, gzip;q=0.4", prefs, all, Brotli},
		{"first occurrence wins", "br;q=0, br, gzip", prefs, all, Gzip},
		{"garbage", "\x00\xff;;==,;q", prefs, all, Identity},
		{"junk after coding", "br junk, gzip", prefs, all, Gzip},
		{"quoted param value", `br;x="a,b", gzip`, prefs, all, Gzip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v []byte
			if tt.value != "<nil>" {
				v = []byte(tt.value)
			}
			if got := Negotiate(v, tt.prefs, tt.avail); got != tt.want {
				t.Errorf("Negotiate(%q) = %v, want %v", tt.value, got, tt.want)
			}
		})
	}
}

func TestAcceptEncodingQ(t *testing.T) {
	var none AcceptEncoding
	if none.Q(Identity) != 1000 || none.Q(Gzip) != 0 {
		t.Fatal("zero value")
	}
	var a AcceptEncoding
	a.Add([]byte("gzip;q=0.5"))
	a.Add([]byte("*;q=0.2, identity;q=0"))
	for enc, want := range map[Encoding]int{Gzip: 500, Brotli: 200, Zstd: 200, Identity: 0} {
		if got := a.Q(enc); got != want {
			t.Errorf("Q(%v) = %d, want %d", enc, got, want)
		}
	}
}

func TestParseQ(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "1": 1000, "0.5": 500, "0.25": 250, "0.125": 125, "1.": 1000, "0.": 0, "1.0": 1000, "1.00": 1000} {
		if got, ok := parseQ([]byte(in)); !ok || got != want {
			t.Errorf("parseQ(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "2", ".5", "0.1234", "1.5", "1.01", "0,5", "01", "q", "0.a"} {
		if _, ok := parseQ([]byte(in)); ok {
			t.Errorf("parseQ(%q) accepted", in)
		}
	}
}

func TestEncodingNames(t *testing.T) {
	for _, e := range []Encoding{Gzip, Zstd, Brotli} {
		got, ok := ParseEncoding(e.String())
		if !ok || got != e {
			t.Errorf("ParseEncoding(%q) = %v, %v", e.String(), got, ok)
		}
	}
	if _, ok := ParseEncoding("identity"); ok {
		t.Error("identity parsed as a coding")
	}
	if Brotli.Suffix() != ".br" || Zstd.Suffix() != ".zst" || Gzip.Suffix() != ".gz" || Identity.Suffix() != "" {
		t.Error("suffixes")
	}
}

func TestCompressible(t *testing.T) {
	for ct, want := range map[string]bool{
		"text/html; charset=utf-8": true, "text/css": true, "TEXT/Plain": true,
		"application/javascript": true, "text/javascript": true, "application/json": true,
		"application/ld+json": true, "application/manifest+json": true, "image/svg+xml": true,
		"application/xml": true, "application/wasm": true, "font/ttf": true,
		"image/png": false, "image/jpeg": false, "font/woff2": false, "application/zip": false,
		"application/octet-stream": false, "": false, "video/mp4": false,
	} {
		if got := Compressible(ct); got != want {
			t.Errorf("Compressible(%q) = %v", ct, got)
		}
	}
}

func FuzzAcceptEncoding(f *testing.F) {
	for _, s := range []string{"gzip, br;q=0.5", "*;q=0, identity", "x-gzip;q=1.000", ";;,,q=", "br;q=0.", `a;b="c,d"`} {
		f.Add([]byte(s))
	}
	prefs := []Encoding{Zstd, Brotli, Gzip}
	all := EncodingSet(0).With(Gzip).With(Zstd).With(Brotli)
	f.Fuzz(func(t *testing.T, v []byte) {
		var a AcceptEncoding
		a.Add(v)
		got := a.Choose(prefs, all)
		if got >= numEncodings {
			t.Fatalf("Choose = %d", got)
		}
		if got != Identity && a.Q(got) == 0 {
			t.Fatalf("chose %v with q=0 for %q", got, v)
		}
		for _, e := range []Encoding{Identity, Gzip, Zstd, Brotli} {
			if q := a.Q(e); q < 0 || q > 1000 {
				t.Fatalf("Q(%v) = %d", e, q)
			}
		}
	})
}
