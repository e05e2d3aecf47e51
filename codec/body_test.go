package codec

import (
	"bytes"
	"io"
	"math/rand"
	"net/http/httputil"
	"strings"
	"testing"
)

// bodyResult is what framing a whole body yields.
type bodyResult struct {
	consumed int
	payload  string
	done     bool
	err      error
	trailers string // the trailer section BodyReader.Keep received
}

// frameBody feeds in to a BodyReader in pieces ending at cuts (then
// len(in)), the way a connection would: bytes not consumed stay at the
// front of the next piece.
func frameBody(r *Request, max int64, in []byte, cuts []int) (res bodyResult) {
	var b BodyReader
	b.Init(r, max)
	var kept []byte
	b.Keep = &kept
	defer func() { res.trailers = string(kept) }()
	var payload []byte
	for _, k := range append(cuts, len(in)) {
		for {
			n, p, done, err := b.Next(in[res.consumed:k])
			if n < 0 || n > k-res.consumed || len(p) > n {
				panic("Next consumed out of range")
			}
			if len(p) > 0 && &p[0] != &in[res.consumed+n-len(p)] {
				panic("payload does not alias the end of what was consumed")
			}
			res.consumed += n
			payload = append(payload, p...)
			if err != nil {
				res.err = err
				res.payload = string(payload)
				return res
			}
			if done {
				res.done = true
				res.payload = string(payload)
				return res
			}
			if n == 0 {
				break
			}
		}
	}
	res.payload = string(payload)
	return res
}

var chunkedReq = Request{Chunked: true, ContentLength: -1}

func lengthReq(n int64) *Request { return &Request{ContentLength: n} }

type bodyCase struct {
	name     string
	req      *Request
	max      int64
	in       string
	payload  string
	consumed int   // of a done body; -1: all of in
	err      error // nil: done
}

var bodyCases = []bodyCase{
	{"length", lengthReq(5), 0, "helloGET / ...", "hello", 5, nil},
	{"length exact", lengthReq(3), 0, "abc", "abc", -1, nil},
	{"no body", lengthReq(-1), 0, "GET / HTTP/1.1\r\n", "", 0, nil},
	{"zero length", lengthReq(0), 0, "x", "", 0, nil},
	{"length at max", lengthReq(4), 4, "abcd", "abcd", -1, nil},
	{"length over max", lengthReq(5), 4, "abcde", "", 0, errBodyTooLarge},

	{"chunked", &chunkedReq, 0, "5\r\nhello\r\n0\r\n\r\nNEXT", "hello", 15, nil},
	{"chunked empty", &chunkedReq, 0, "0\r\n\r\n", "", -1, nil},
	{"chunked hex sizes", &chunkedReq, 0, "a\r\n0123456789\r\nA\r\n0123456789\r\n1F\r\n" + strings.Repeat("x", 31) + "\r\n000\r\n\r\n",
		"0123456789" + "0123456789" + strings.Repeat("x", 31), -1, nil},
	{"sixteen digits", &chunkedReq, 0, "0000000000000003\r\nabc\r\n0\r\n\r\n", "abc", -1, nil},
	{"extensions", &chunkedReq, 0, "3;a\r\nabc\r\n3 ; a = b ;c=\"x;y\\\"z\" ;d\r\ndef\r\n0;e=f\r\n\r\n", "abcdef", -1, nil},
	{"extension quoted-pair and obs-text", &chunkedReq, 0, "1;a=\"\\\t\xff\"\r\nx\r\n0\r\n\r\n", "x", -1, nil},
	{"trailers", &chunkedReq, 0, "2\r\nab\r\n0\r\nExpires: never\r\nX-Empty:\r\nX-Sum:\tabc \r\n\r\n", "ab", -1, nil},
	{"chunked at max", &chunkedReq, 6, "3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n", "abcdef", -1, nil},

	{"chunked over max", &chunkedReq, 5, "3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n", "abc", 0, errBodyTooLarge},
	{"size overflows max", &chunkedReq, 0, "ffffffffffffffff\r\n", "", 0, errBodyTooLarge},
	{"seventeen digits", &chunkedReq, 0, "00000000000000003\r\nabc\r\n0\r\n\r\n", "", 0, errChunkSize},
	{"no size", &chunkedReq, 0, "\r\nabc\r\n0\r\n\r\n", "", 0, errChunkSize},
	{"negative size", &chunkedReq, 0, "-1\r\nabc\r\n", "", 0, errChunkSize},
	{"0x prefix", &chunkedReq, 0, "0x3\r\nabc\r\n", "", 0, errChunkSize},
	{"size bare LF", &chunkedReq, 0, "3\nabc\r\n0\r\n\r\n", "", 0, errChunkSize},
	{"size bare CR", &chunkedReq, 0, "3\rabc\r\n0\r\n\r\n", "", 0, errChunkSize},
	{"space after size", &chunkedReq, 0, "3 \r\nabc\r\n0\r\n\r\n", "", 0, errChunkExt},
	{"leading space", &chunkedReq, 0, " 3\r\nabc\r\n0\r\n\r\n", "", 0, errChunkSize},
	{"data too long", &chunkedReq, 0, "3\r\nabcd\r\n0\r\n\r\n", "abc", 0, errChunkEnd},
	{"data bare LF", &chunkedReq, 0, "3\r\nabc\n0\r\n\r\n", "abc", 0, errChunkEnd},
	{"empty extension", &chunkedReq, 0, "3;\r\nabc\r\n0\r\n\r\n", "", 0, errChunkExt},
	{"extension without name", &chunkedReq, 0, "3;=a\r\nabc\r\n0\r\n\r\n", "", 0, errChunkExt},
	{"extension without value", &chunkedReq, 0, "3;a=\r\nabc\r\n0\r\n\r\n", "", 0, errChunkExt},
	{"extension bad byte", &chunkedReq, 0, "3;a@b\r\nabc\r\n0\r\n\r\n", "", 0, errChunkExt},
	{"extension unterminated quote", &chunkedReq, 0, "3;a=\"b\r\nabc\r\n0\r\n\r\n", "", 0, errChunkExt},
	{"extension CTL in quote", &chunkedReq, 0, "3;a=\"\x01\"\r\nabc\r\n0\r\n\r\n", "", 0, errChunkExt},
	{"extension after quote", &chunkedReq, 0, "3;a=\"b\"c\r\nabc\r\n0\r\n\r\n", "", 0, errChunkExt},
	{"extension BWS then CRLF", &chunkedReq, 0, "3;a \r\nabc\r\n0\r\n\r\n", "", 0, errChunkExt},
	{"extensions too long", &chunkedReq, 0, "1;a=" + strings.Repeat("b", MaxChunkExtBytes) + "\r\nx\r\n0\r\n\r\n", "", 0, errChunkExtSize},
	{"extensions too long over chunks", &chunkedReq, 0, strings.Repeat("1;"+strings.Repeat("b", 98)+"\r\nx\r\n", 21) + "0\r\n\r\n", strings.Repeat("x", 20), 0, errChunkExtSize},
	{"trailer obs-fold", &chunkedReq, 0, "0\r\nA: b\r\n c\r\n\r\n", "", 0, errTrailer},
	{"trailer space before colon", &chunkedReq, 0, "0\r\nA : b\r\n\r\n", "", 0, errTrailer},
	{"trailer empty name", &chunkedReq, 0, "0\r\n: b\r\n\r\n", "", 0, errTrailer},
	{"trailer no colon", &chunkedReq, 0, "0\r\nAb\r\n\r\n", "", 0, errTrailer},
	{"trailer bare LF", &chunkedReq, 0, "0\r\nA: b\n\r\n", "", 0, errTrailer},
	{"trailer CTL", &chunkedReq, 0, "0\r\nA: \x00\r\n\r\n", "", 0, errTrailer},
	{"final bare LF", &chunkedReq, 0, "0\r\n\n", "", 0, errTrailer},
	{"final CR junk", &chunkedReq, 0, "0\r\n\rx", "", 0, errTrailer},
	{"trailers too long", &chunkedReq, 0, "0\r\nA: " + strings.Repeat("b", MaxTrailerBytes) + "\r\n\r\n", "", 0, errTrailerSize},
}

func TestBodyReader(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, c := range bodyCases {
		in := []byte(c.in)
		want := bodyResult{payload: c.payload, err: c.err}
		if c.err == nil {
			want.done = true
			want.consumed = c.consumed
			if c.consumed < 0 {
				want.consumed = len(in)
			}
		}
		check := func(how string, got bodyResult) {
			t.Helper()
			if c.err != nil {
				got.consumed = 0 // not part of the contract after an error
			}
			if got.done {
				checkKeptTrailers(t, got.trailers)
			}
			got.trailers = "" // TestBodyReaderKeepsTrailers checks what is kept
			if got != want {
				t.Errorf("%s %s: got %+v; want %+v", c.name, how, got, want)
			}
		}
		check("whole", frameBody(c.req, c.max, in, nil))
		check("byte by byte", frameBody(c.req, c.max, in, byteCuts(len(in))))
		for trial := 0; trial < 50; trial++ {
			check("random cuts", frameBody(c.req, c.max, in, randomCuts(rng, len(in))))
		}
	}
}

func TestBodyReaderIncomplete(t *testing.T) {
	for _, c := range []struct {
		req *Request
		in  string
	}{
		{lengthReq(5), "abcd"},
		{&chunkedReq, "5\r\nab"},
		{&chunkedReq, "5\r\nabcde\r\n0\r\nX: y\r\n"},
		{&chunkedReq, "5;a=\"b"},
	} {
		got := frameBody(c.req, 0, []byte(c.in), nil)
		if got.done || got.err != nil || got.consumed != len(c.in) {
			t.Errorf("%q: %+v; want all consumed, not done", c.in, got)
		}
	}
	// Errors are sticky.
	var b BodyReader
	b.Init(&chunkedReq, 0)
	if _, _, _, err := b.Next([]byte("x")); err != errChunkSize {
		t.Fatal(err)
	}
	if n, _, done, err := b.Next([]byte("0\r\n\r\n")); n != 0 || done || err != errChunkSize {
		t.Errorf("after an error: %d %v %v", n, done, err)
	}
	// The zero BodyReader is a finished empty body.
	var z BodyReader
	if n, p, done, err := z.Next([]byte("x")); n != 0 || p != nil || !done || err != nil {
		t.Errorf("zero value: %d %q %v %v", n, p, done, err)
	}
}

// FuzzBody checks that framing a body gives the same result however its
// bytes are split, and, for chunked bodies that both accept, the same
// payload as net/http's chunked reader.
func FuzzBody(f *testing.F) {
	for _, c := range bodyCases {
		f.Add([]byte(c.in), c.req.Chunked, uint64(c.req.ContentLength), uint64(len(c.in)/2))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunked bool, length, seed uint64) {
		if len(data) > 16<<10 {
			return
		}
		req := &Request{Chunked: chunked, ContentLength: int64(length % uint64(len(data)+2))}
		if chunked {
			req.ContentLength = -1
		}
		const max = 4 << 10
		whole := frameBody(req, max, data, nil)
		if whole.err != nil {
			whole.consumed = 0
		}
		rng := rand.New(rand.NewSource(int64(seed)))
		splits := [][]int{randomCuts(rng, len(data)), randomCuts(rng, len(data))}
		if len(data) <= 2048 {
			splits = append(splits, byteCuts(len(data)))
		}
		for _, cuts := range splits {
			got := frameBody(req, max, data, cuts)
			if got.err != nil {
				got.consumed = 0
			}
			if got != whole {
				t.Fatalf("cuts %v: %+v; whole: %+v", cuts, got, whole)
			}
		}
		if whole.err != nil {
			if _, ok := whole.err.(*Error); !ok {
				t.Fatalf("error %v is not an *Error", whole.err)
			}
		}
		if whole.done && chunked {
			p, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(data[:whole.consumed])))
			if err == nil && string(p) != whole.payload {
				t.Fatalf("payload %q; net/http: %q", whole.payload, p)
			}
			checkKeptTrailers(t, whole.trailers)
		}
	})
}

// TestBodyReaderKeepsTrailers: with Keep set, the trailer section's field
// lines reach it whole, however the body is split, and ParseTrailers
// reads them back; without it nothing is kept.
func TestBodyReaderKeepsTrailers(t *testing.T) {
	body := "5\r\nhello\r\n0\r\nX-Sum: 5 \r\ngrpc-status:0\r\n\r\n"
	for split := 1; split <= len(body); split++ {
		var b BodyReader
		b.Init(&Request{Chunked: true}, 0)
		var kept []byte
		b.Keep = &kept
		in, payload := []byte(body), ""
		for done := false; !done; {
			chunk := in[:min(split, len(in))]
			n, p, d, err := b.Next(chunk)
			if err != nil {
				t.Fatalf("split %d: %v", split, err)
			}
			payload += string(p)
			in, done = in[n:], d
			if n == 0 && !d {
				t.Fatalf("split %d: stuck", split)
			}
		}
		if payload != "hello" || string(kept) != "X-Sum: 5 \r\ngrpc-status:0\r\n" {
			t.Fatalf("split %d: payload %q kept %q", split, payload, kept)
		}
		fs := ParseTrailers(kept, nil)
		if len(fs) != 2 || string(fs[0].Name) != "X-Sum" || string(fs[0].Value) != "5" ||
			string(fs[1].Name) != "grpc-status" || string(fs[1].Value) != "0" {
			t.Fatalf("split %d: fields %q", split, fs)
		}
	}
}

// checkKeptTrailers checks a trailer section a BodyReader kept for a body
// it framed whole: field lines each ending in CRLF, within the bound, and
// ParseTrailers reads one token-named field per line, with no CR or LF in
// a value.
func checkKeptTrailers(t *testing.T, section string) {
	t.Helper()
	if len(section) > MaxTrailerBytes || section != "" && !strings.HasSuffix(section, "\r\n") {
		t.Fatalf("kept trailer section %q", section)
	}
	fs := ParseTrailers([]byte(section), nil)
	if len(fs) != strings.Count(section, "\r\n") {
		t.Fatalf("%d fields from %q", len(fs), section)
	}
	for _, f := range fs {
		if len(f.Name) == 0 || bytes.ContainsAny(f.Name, " \t:\r\n") || bytes.ContainsAny(f.Value, "\r\n") {
			t.Fatalf("field %q: %q from %q", f.Name, f.Value, section)
		}
	}
}
