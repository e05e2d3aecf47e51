package hpack

import (
	"encoding/hex"
	"strings"
	"testing"
)

// The examples of RFC 7541 Appendix C, with the dynamic table's entries
// (newest first) and size after each block.

// dehex decodes the hex dumps of Appendix C, spaces and newlines allowed.
func dehex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.NewReplacer(" ", "", "\n", "", "\t", "").Replace(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hf is a field in tests: name, value, and "never" for a sensitive one.
type hf struct {
	name, value string
	sensitive   bool
}

type rfcStep struct {
	block     string
	want      []hf
	table     []hf // newest first
	tableSize uint64
}

// tableEntries returns d's dynamic table, newest first.
func (d *Decoder) tableEntries() []hf {
	var out []hf
	for i := 1; i <= d.table.len(); i++ {
		e := d.table.at(i)
		out = append(out, hf{string(d.table.appendName(nil, e)), string(d.table.appendValue(nil, e)), false})
	}
	return out
}

func fieldsOf(fs []Field) []hf {
	out := make([]hf, len(fs))
	for i, f := range fs {
		out[i] = hf{string(f.Name), string(f.Value), f.Sensitive}
	}
	return out
}

func equalHF(a, b []hf) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func runSteps(t *testing.T, maxTable uint32, steps []rfcStep) {
	t.Helper()
	var d Decoder
	d.Init(maxTable)
	var fs []Field
	for i, st := range steps {
		var err error
		fs, err = d.Decode(fs, dehex(t, st.block), 1<<20)
		if err != nil {
			t.Fatalf("block %d: %v (%v)", i+1, err, d.cause)
		}
		if got := fieldsOf(fs); !equalHF(got, st.want) {
			t.Errorf("block %d: fields %v; want %v", i+1, got, st.want)
		}
		if got := d.tableEntries(); !equalHF(got, st.table) {
			t.Errorf("block %d: table %v; want %v", i+1, got, st.table)
		}
		if d.table.size != st.tableSize {
			t.Errorf("block %d: table size %d; want %d", i+1, d.table.size, st.tableSize)
		}
	}
}

func TestRFC7541C2(t *testing.T) {
	t.Run("C.2.1 literal with indexing", func(t *testing.T) {
		runSteps(t, 4096, []rfcStep{{
			"400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
			[]hf{{"custom-key", "custom-header", false}},
			[]hf{{"custom-key", "custom-header", false}}, 55,
		}})
	})
	t.Run("C.2.2 literal without indexing", func(t *testing.T) {
		runSteps(t, 4096, []rfcStep{{
			"040c 2f73 616d 706c 652f 7061 7468",
			[]hf{{":path", "/sample/path", false}}, nil, 0,
		}})
	})
	t.Run("C.2.3 literal never indexed", func(t *testing.T) {
		runSteps(t, 4096, []rfcStep{{
			"1008 7061 7373 776f 7264 0673 6563 7265 74",
			[]hf{{"password", "secret", true}}, nil, 0,
		}})
	})
	t.Run("C.2.4 indexed", func(t *testing.T) {
		runSteps(t, 4096, []rfcStep{{"82", []hf{{":method", "GET", false}}, nil, 0}})
	})
}

var (
	c3req1 = []hf{{":method", "GET", false}, {":scheme", "http", false}, {":path", "/", false}, {":authority", "www.example.com", false}}
	c3req2 = append(append([]hf(nil), c3req1...), hf{"cache-control", "no-cache", false})
	c3req3 = []hf{{":method", "GET", false}, {":scheme", "https", false}, {":path", "/index.html", false}, {":authority", "www.example.com", false}, {"custom-key", "custom-value", false}}
	c3tab1 = []hf{{":authority", "www.example.com", false}}
	c3tab2 = []hf{{"cache-control", "no-cache", false}, {":authority", "www.example.com", false}}
	c3tab3 = []hf{{"custom-key", "custom-value", false}, {"cache-control", "no-cache", false}, {":authority", "www.example.com", false}}
)

func TestRFC7541C3RequestsPlain(t *testing.T) {
	runSteps(t, 4096, []rfcStep{
		{"8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d", c3req1, c3tab1, 57},
		{"8286 84be 5808 6e6f 2d63 6163 6865", c3req2, c3tab2, 110},
		{"8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65", c3req3, c3tab3, 164},
	})
}

func TestRFC7541C4RequestsHuffman(t *testing.T) {
	runSteps(t, 4096, []rfcStep{
		{"8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff", c3req1, c3tab1, 57},
		{"8286 84be 5886 a8eb 1064 9cbf", c3req2, c3tab2, 110},
		{"8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf", c3req3, c3tab3, 164},
	})
}

const (
	c5date1  = "Mon, 21 Oct 2013 20:13:21 GMT"
	c5date2  = "Mon, 21 Oct 2013 20:13:22 GMT"
	c5loc    = "https://www.example.com"
	c5cookie = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
)

var (
	c5resp1 = []hf{{":status", "302", false}, {"cache-control", "private", false}, {"date", c5date1, false}, {"location", c5loc, false}}
	c5resp2 = []hf{{":status", "307", false}, {"cache-control", "private", false}, {"date", c5date1, false}, {"location", c5loc, false}}
	c5resp3 = []hf{{":status", "200", false}, {"cache-control", "private", false}, {"date", c5date2, false}, {"location", c5loc, false},
		{"content-encoding", "gzip", false}, {"set-cookie", c5cookie, false}}
	c5tab1 = []hf{{"location", c5loc, false}, {"date", c5date1, false}, {"cache-control", "private", false}, {":status", "302", false}}
	c5tab2 = []hf{{":status", "307", false}, {"location", c5loc, false}, {"date", c5date1, false}, {"cache-control", "private", false}}
	c5tab3 = []hf{{"set-cookie", c5cookie, false}, {"content-encoding", "gzip", false}, {"date", c5date2, false}}
)

func TestRFC7541C5ResponsesPlain(t *testing.T) {
	runSteps(t, 256, []rfcStep{
		{`4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
		2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
		6c65 2e63 6f6d`, c5resp1, c5tab1, 222},
		{"4803 3330 37c1 c0bf", c5resp2, c5tab2, 222},
		{`88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
		54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
		5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
		3d31`, c5resp3, c5tab3, 215},
	})
}

func TestRFC7541C6ResponsesHuffman(t *testing.T) {
	runSteps(t, 256, []rfcStep{
		{`4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
		2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3`, c5resp1, c5tab1, 222},
		{"4883 640e ffc1 c0bf", c5resp2, c5tab2, 222},
		{`88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
		77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
		9587 3160 65c0 03ed 4ee5 b106 3d50 07`, c5resp3, c5tab3, 215},
	})
}

// TestRFC7541C1Integers checks the integer examples of Appendix C.1 both
// ways.
func TestRFC7541C1Integers(t *testing.T) {
	for _, c := range []struct {
		v    uint64
		n    uint8
		want string
	}{
		{10, 5, "0a"},
		{1337, 5, "1f9a0a"},
		{42, 8, "2a"},
		{31, 5, "1f00"},
		{30, 5, "1e"},
		{127, 7, "7f00"},
		{128, 7, "7f01"},
	} {
		got := appendInt(nil, 0, c.n, c.v)
		if hex.EncodeToString(got) != c.want {
			t.Errorf("appendInt(%d, prefix %d) = %x; want %s", c.v, c.n, got, c.want)
		}
		if c.n == 8 {
			continue
		}
		v, rest, err := readInt(append(got, 0xaa), c.n)
		if err != nil || v != c.v || len(rest) != 1 {
			t.Errorf("readInt(%x) = %d, %x, %v; want %d", got, v, rest, err, c.v)
		}
	}
}
