package fastcgi

import (
	"strings"
	"testing"
)

func TestParseHead(t *testing.T) {
	in := "Status: 404 Not Found\r\nX-Powered-By: PHP/8.2\r\nContent-type: text/html; charset=UTF-8\r\n\r\nbody"
	var h Head
	if err := ParseHead([]byte(in), &h, 0, 0); err != nil {
		t.Fatal(err)
	}
	if h.Status != 404 || string(h.Reason) != "Not Found" || h.Len != len(in)-4 || len(h.Fields) != 2 ||
		string(h.Fields[1].Name) != "Content-type" || string(h.Fields[1].Value) != "text/html; charset=UTF-8" {
		t.Fatalf("%+v", h)
	}
	// Bare LF line endings (RFC 3875 allows them), Location, no Status.
	in = "Location: https://example.com/x\nContent-Type: text/plain\n\n"
	if err := ParseHead([]byte(in), &h, 0, 0); err != nil {
		t.Fatal(err)
	}
	if h.Status != 0 || string(h.Location) != "https://example.com/x" || h.Len != len(in) || len(h.Fields) != 2 {
		t.Fatalf("%+v", h)
	}
	// Status without a reason; OWS trimmed.
	if err := ParseHead([]byte("Status:   201  \r\n\r\n"), &h, 0, 0); err != nil || h.Status != 201 || len(h.Reason) != 0 {
		t.Fatalf("%+v %v", h, err)
	}
	// Every prefix of a head needs more.
	in = "Status: 200 OK\r\nA: b\r\n\r\n"
	for i := 0; i < len(in); i++ {
		if err := ParseHead([]byte(in[:i]), &h, 0, 0); err != ErrNeedMore {
			t.Fatalf("prefix %q: %v", in[:i], err)
		}
	}
}

func TestParseHeadRejects(t *testing.T) {
	cases := []struct {
		in  string
		err error
	}{
		{"\r\n", ErrEmptyHead},
		{"\n", ErrEmptyHead},
		{"A b: c\r\n\r\n", ErrFieldName},
		{"A : c\r\n\r\n", ErrFieldName},
		{": c\r\n\r\n", ErrFieldName},
		{"Ab\r\n\r\n", ErrNoSeparator},
		{" A: c\r\n\r\n", ErrFieldName},
		{"A: c\x00d\r\n\r\n", ErrFieldValue},
		{"A: c\x7f\r\n\r\n", ErrFieldValue},
		{"A: c\rd\r\n\r\n", ErrBareCR},
		{"Status: 20\r\n\r\n", ErrStatus},
		{"Status: 2000\r\n\r\n", ErrStatus},
		{"Status: abc\r\n\r\n", ErrStatus},
		{"Status: 100 Continue\r\n\r\n", ErrStatus},
		{"Status: 101\r\n\r\n", ErrStatus},
		{"Status: 600\r\n\r\n", ErrStatus},
		{"Status: 200\r\nstatus: 200\r\n\r\n", ErrDupStatus},
		{"Location: /a\r\nLocation: /b\r\n\r\n", ErrDupStatus},
	}
	var h Head
	for _, c := range cases {
		if err := ParseHead([]byte(c.in), &h, 0, 0); err != c.err {
			t.Errorf("%q: %v, want %v", c.in, err, c.err)
		}
	}
	big := "A: " + strings.Repeat("x", 100) + "\r\n"
	if err := ParseHead([]byte(big), &h, 64, 0); err != ErrHeadSize {
		t.Errorf("long head without an end: %v", err)
	}
	if err := ParseHead([]byte(big+"\r\n"), &h, 64, 0); err != ErrHeadSize {
		t.Errorf("long head: %v", err)
	}
	if err := ParseHead([]byte(strings.Repeat("A: b\r\n", 4)+"\r\n"), &h, 0, 3); err != ErrHeadFields {
		t.Errorf("many fields: %v", err)
	}
}
