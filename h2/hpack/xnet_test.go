package hpack

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// x/net's hpack package is the oracle these tests compare with.

// xnetEncode encodes each list as one block with one x/net Encoder, so
// that later blocks reference the dynamic table earlier ones filled.
func xnetEncode(t testing.TB, lists ...[]hpack.HeaderField) [][]byte {
	t.Helper()
	var buf bytes.Buffer
	e := hpack.NewEncoder(&buf)
	var out [][]byte
	for _, l := range lists {
		for _, f := range l {
			if err := e.WriteField(f); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, append([]byte(nil), buf.Bytes()...))
		buf.Reset()
	}
	return out
}

func xf(name, value string) hpack.HeaderField { return hpack.HeaderField{Name: name, Value: value} }

// browserRequests are two requests a browser sends on one connection,
// the second for a subresource; x/net's encoder codes them with Huffman
// strings, and the second mostly as references to the first's entries.
var browserRequests = [][]hpack.HeaderField{{
	xf(":method", "GET"), xf(":authority", "www.example.com"), xf(":scheme", "https"), xf(":path", "/"),
	xf("sec-ch-ua", `"Chromium";v="131", "Not_A Brand";v="24"`), xf("sec-ch-ua-mobile", "?0"),
	xf("sec-ch-ua-platform", `"Linux"`), xf("upgrade-insecure-requests", "1"),
	xf("user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"),
	xf("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"),
	xf("sec-fetch-site", "none"), xf("sec-fetch-mode", "navigate"), xf("sec-fetch-user", "?1"), xf("sec-fetch-dest", "document"),
	xf("accept-encoding", "gzip, deflate, br, zstd"), xf("accept-language", "en-US,en;q=0.9"),
	{Name: "cookie", Value: "session=4f2a9c1be07d4e55a1c3; theme=dark", Sensitive: true},
	xf("priority", "u=0, i"),
}, {
	xf(":method", "GET"), xf(":authority", "www.example.com"), xf(":scheme", "https"), xf(":path", "/static/app.3f9c2b.js"),
	xf("sec-ch-ua-platform", `"Linux"`),
	xf("user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"),
	xf("sec-ch-ua", `"Chromium";v="131", "Not_A Brand";v="24"`), xf("sec-ch-ua-mobile", "?0"), xf("accept", "*/*"),
	xf("sec-fetch-site", "same-origin"), xf("sec-fetch-mode", "no-cors"), xf("sec-fetch-dest", "script"),
	xf("referer", "https://www.example.com/"), xf("accept-encoding", "gzip, deflate, br, zstd"),
	xf("accept-language", "en-US,en;q=0.9"),
	{Name: "cookie", Value: "session=4f2a9c1be07d4e55a1c3; theme=dark", Sensitive: true},
	xf("priority", "u=1"),
}}

func sameFields(got []Field, want []hpack.HeaderField) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d fields; want %d", len(got), len(want))
	}
	for i, f := range got {
		w := want[i]
		if string(f.Name) != w.Name || string(f.Value) != w.Value || f.Sensitive != w.Sensitive {
			return fmt.Errorf("field %d = %q: %q (sensitive %v); want %q: %q (%v)", i, f.Name, f.Value, f.Sensitive, w.Name, w.Value, w.Sensitive)
		}
	}
	return nil
}

// TestStaticTableMatchesXNet checks Appendix A against x/net's copy: an
// x/net Encoder codes each entry as a one-octet indexed field.
func TestStaticTableMatchesXNet(t *testing.T) {
	for i := 1; i <= staticLen; i++ {
		e := staticEntries[i]
		got := xnetEncode(t, []hpack.HeaderField{xf(e[0], e[1])})[0]
		if !bytes.Equal(got, []byte{0x80 | byte(i)}) {
			t.Errorf("entry %d (%s: %s): x/net encodes %x", i, e[0], e[1], got)
		}
		f := staticFields[i]
		if string(f.Name) != e[0] || string(f.Value) != e[1] || cap(f.Name) != len(f.Name) || cap(f.Value) != len(f.Value) {
			t.Errorf("staticFields[%d] = %q: %q", i, f.Name, f.Value)
		}
		first := i
		for first > 1 && staticEntries[first-1][0] == e[0] {
			first--
		}
		if n := StaticNameIndex([]byte(e[0])); n != first {
			t.Errorf("StaticNameIndex(%q) = %d; want %d", e[0], n, first)
		}
	}
	for _, name := range []string{"", "Host", "x-forwarded-for", ":protocol", "content-typ"} {
		if n := StaticNameIndex([]byte(name)); n != 0 {
			t.Errorf("StaticNameIndex(%q) = %d; want 0", name, n)
		}
	}
}

// TestHuffmanCodeMatchesXNet checks Appendix B against x/net's copy, one
// symbol at a time and in a long string.
func TestHuffmanCodeMatchesXNet(t *testing.T) {
	var all []byte
	for i := 0; i < 256; i++ {
		s := []byte{byte(i)}
		if got, want := huffmanAppendEncoded(nil, s), hpack.AppendHuffmanString(nil, string(s)); !bytes.Equal(got, want) {
			t.Errorf("symbol %d: %x; x/net %x", i, got, want)
		}
		all = append(all, byte(i), byte(i*7))
	}
	if got, want := huffmanAppendEncoded(nil, all), hpack.AppendHuffmanString(nil, string(all)); !bytes.Equal(got, want) {
		t.Errorf("all symbols: codes differ from x/net's")
	}
}

// TestRoundTripXNet decodes what x/net's Encoder produces: the browser
// requests, then many random lists over one connection, with table size
// changes that make it send size updates, sensitive fields, and entries
// that wrap the table's ring and are evicted.
func TestRoundTripXNet(t *testing.T) {
	var d Decoder
	d.Init(4096)
	var fs []Field
	for i, b := range xnetEncode(t, browserRequests...) {
		var err error
		if fs, err = d.Decode(fs, b, 1<<16); err != nil {
			t.Fatalf("browser request %d: %v (%v)", i, err, d.cause)
		}
		if err := sameFields(fs, browserRequests[i]); err != nil {
			t.Fatalf("browser request %d: %v", i, err)
		}
	}

	rng := rand.New(rand.NewSource(1))
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	d.Init(4096)
	names := []string{":path", "cookie", "x-a", "x-bb", "content-type", "accept", "x-long-name-of-a-custom-field", "etag"}
	for blk := 0; blk < 2000; blk++ {
		if rng.Intn(20) == 0 {
			enc.SetMaxDynamicTableSize(uint32(rng.Intn(4097)))
		}
		var list []hpack.HeaderField
		for n := rng.Intn(12); n > 0; n-- {
			v := make([]byte, rng.Intn(300))
			const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789/;=-_ \x01\xff"
			for i := range v {
				v[i] = alphabet[rng.Intn(len(alphabet))]
			}
			if rng.Intn(3) == 0 {
				v = v[:rng.Intn(min(4, len(v)+1))]
			}
			f := hpack.HeaderField{Name: names[rng.Intn(len(names))], Value: string(v), Sensitive: rng.Intn(10) == 0}
			list = append(list, f)
			if err := enc.WriteField(f); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		if fs, err = d.Decode(fs, buf.Bytes(), 1<<16); err != nil {
			t.Fatalf("block %d: %v (%v)", blk, err, d.cause)
		}
		if err := sameFields(fs, list); err != nil {
			t.Fatalf("block %d: %v", blk, err)
		}
		buf.Reset()
	}
}

// TestEncodeDecodedByXNet checks the Append functions against x/net's
// Decoder, and that they leave its dynamic table empty.
func TestEncodeDecodedByXNet(t *testing.T) {
	var b []byte
	var want []hpack.HeaderField
	b = AppendTableSizeZero(b)
	for _, s := range []int{200, 204, 206, 304, 400, 404, 500, 100, 103, 301, 418, 503, 999, 1000, 42} {
		b = AppendStatus(b, s)
		want = append(want, xf(":status", fmt.Sprint(s)))
	}
	long := string(bytes.Repeat([]byte("0123456789"), 40))
	for _, c := range [][2]string{
		{"content-type", "text/html; charset=utf-8"}, {"date", "Tue, 01 Dec 2026 23:23:18 GMT"},
		{"x-custom", ""}, {"server", "gale"}, {"www-authenticate", long}, {"x-long-" + long, long},
		{":authority", "a"}, {"set-cookie", "id=1; HttpOnly"},
	} {
		b = AppendField(b, []byte(c[0]), []byte(c[1]))
		b = AppendFieldHuffman(b, []byte(c[0]), []byte(c[1]))
		b = AppendFieldNeverIndexed(b, []byte(c[0]), []byte(c[1]))
		want = append(want, xf(c[0], c[1]), xf(c[0], c[1]), hpack.HeaderField{Name: c[0], Value: c[1], Sensitive: true})
	}
	got, err := hpack.NewDecoder(4096, nil).DecodeFull(b)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("x/net decodes\n%v\nwant\n%v", got, want)
	}
	var d Decoder
	d.Init(4096)
	fs, err := d.Decode(nil, b, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameFields(fs, want); err != nil {
		t.Fatal(err)
	}
	if d.table.len() != 0 || d.table.maxSize != 0 {
		t.Errorf("the encoder left %d entries, maximum size %d", d.table.len(), d.table.maxSize)
	}
}
