package fastcgi

import (
	"bytes"
	"errors"
	"testing"
)

func TestParseRecord(t *testing.T) {
	var b []byte
	b = AppendHeader(b, TypeStdout, 1, 5)
	b = append(b, "hello"...)
	b = append(b, Version, TypeEndRequest, 0, 1, 0, 8, 3, 0) // 3 bytes of padding
	b = append(b, 0, 0, 0, 7, StatusRequestComplete, 0, 0, 0, 0xff, 0xff, 0xff)
	r, n, err := Parse(b)
	if err != nil || n != 13 || r.Type != TypeStdout || r.ID != 1 || string(r.Content) != "hello" {
		t.Fatalf("first record: %+v %d %v", r, n, err)
	}
	if cap(r.Content) != len(r.Content) {
		t.Fatalf("content capacity not clipped: %d", cap(r.Content))
	}
	r, m, err := Parse(b[n:])
	if err != nil || m != 19 || r.Type != TypeEndRequest {
		t.Fatalf("second record: %+v %d %v", r, m, err)
	}
	app, proto, err := ParseEndRequest(r.Content)
	if err != nil || app != 7 || proto != StatusRequestComplete {
		t.Fatalf("end request: %d %d %v", app, proto, err)
	}
	// Every prefix short of a record needs more.
	for i := 0; i < n; i++ {
		if _, _, err := Parse(b[:i]); err != ErrNeedMore {
			t.Fatalf("prefix %d: %v", i, err)
		}
	}
	for i := n; i < n+m; i++ {
		if _, _, err := Parse(b[n:i]); err != ErrNeedMore {
			t.Fatalf("second record prefix %d: %v", i-n, err)
		}
	}
}

func TestParseRecordRejects(t *testing.T) {
	cases := []struct {
		in  []byte
		err error
	}{
		{[]byte{2}, ErrVersion},
		{[]byte{0, TypeStdout, 0, 1, 0, 0, 0, 0}, ErrVersion},
		{[]byte{1, TypeBeginRequest, 0, 1, 0, 0, 0, 0}, ErrRecordType},
		{[]byte{1, TypeParams, 0, 1, 0, 0, 0, 0}, ErrRecordType},
		{[]byte{1, TypeStdin, 0, 1, 0, 0, 0, 0}, ErrRecordType},
		{[]byte{1, 0, 0, 1, 0, 0, 0, 0}, ErrRecordType},
		{[]byte{1, 12, 0, 1, 0, 0, 0, 0}, ErrRecordType},
		{[]byte{1, 255, 0, 1, 0, 0, 0, 0}, ErrRecordType},
	}
	for _, c := range cases {
		if _, _, err := Parse(c.in); err != c.err {
			t.Errorf("%v: %v, want %v", c.in, err, c.err)
		}
	}
	if _, _, err := ParseEndRequest(make([]byte, 7)); err != ErrEndRequest {
		t.Errorf("short end request: %v", err)
	}
}

func TestAppendStream(t *testing.T) {
	p := bytes.Repeat([]byte("x"), MaxContent*2+10)
	b := AppendStream(nil, TypeStdin, 3, p)
	var got []byte
	recs := 0
	for len(b) > 0 {
		// The web server's own records are not Parse's to accept: read
		// the header by hand.
		if b[0] != Version || b[1] != TypeStdin || b[2] != 0 || b[3] != 3 {
			t.Fatalf("header %v", b[:8])
		}
		n := int(b[4])<<8 | int(b[5])
		got = append(got, b[8:8+n]...)
		b = b[8+n:]
		recs++
	}
	if recs != 3 || !bytes.Equal(got, p) {
		t.Fatalf("%d records, %d bytes", recs, len(got))
	}
	if b := AppendStream(nil, TypeStdin, 1, nil); len(b) != 0 {
		t.Fatalf("empty stream appended %v", b)
	}
	begin := AppendBeginRequest(nil, 1, RoleResponder, FlagKeepConn)
	want := []byte{1, TypeBeginRequest, 0, 1, 0, 8, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0}
	if !bytes.Equal(begin, want) {
		t.Fatalf("begin request %v", begin)
	}
	if a := AppendAbortRequest(nil, 258); !bytes.Equal(a, []byte{1, TypeAbortRequest, 1, 2, 0, 0, 0, 0}) {
		t.Fatalf("abort request %v", a)
	}
}

func TestPairs(t *testing.T) {
	long := bytes.Repeat([]byte("v"), 300)
	var b []byte
	b = AppendPair(b, []byte("SCRIPT_NAME"), []byte("/index.php"))
	b = AppendPairString(b, "LONG", long)
	b = AppendPair(b, bytes.Repeat([]byte("N"), 128), nil)
	type kv struct{ k, v string }
	var got []kv
	for len(b) > 0 {
		k, v, n, err := NextPair(b)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, kv{string(k), string(v)})
		b = b[n:]
	}
	if len(got) != 3 || got[0] != (kv{"SCRIPT_NAME", "/index.php"}) || got[1].v != string(long) || len(got[2].k) != 128 || got[2].v != "" {
		t.Fatalf("%q", got)
	}
	for _, bad := range [][]byte{{}, {5}, {1, 1, 'a'}, {0x80, 0, 0}, {0, 0x80, 0, 0, 1}, {0xff, 0xff, 0xff, 0xff, 0}} {
		if _, _, _, err := NextPair(bad); !errors.Is(err, ErrParams) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
