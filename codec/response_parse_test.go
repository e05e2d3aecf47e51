package codec

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// respCase is a response head ParseResponse accepts, with the fields it
// must set.
type respCase struct {
	name      string
	in        string
	version   Version
	status    int
	reason    string
	headers   []string // name, value pairs
	length    int64
	chunked   bool
	keepAlive bool
	upgrade   bool
	kind      BodyKind // Framing(false)
}

var validResponses = []respCase{
	{
		name: "typical", in: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n",
		version: HTTP11, status: 200, reason: "OK",
		headers: []string{"Content-Type", "text/plain", "Content-Length", "5"},
		length:  5, keepAlive: true, kind: BodyLength,
	},
	{
		name: "chunked", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n",
		version: HTTP11, status: 200, reason: "OK", headers: []string{"Transfer-Encoding", "Chunked"},
		length: -1, chunked: true, keepAlive: true, kind: BodyChunked,
	},
	{
		name: "until close", in: "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n",
		version: HTTP11, status: 200, reason: "OK", headers: []string{"Connection", "close"},
		length: -1, kind: BodyUntilClose,
	},
	{
		name: "HTTP/1.0 without keep-alive", in: "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
		version: HTTP10, status: 200, reason: "OK", headers: []string{"Content-Length", "0"},
		length: 0, kind: BodyLength,
	},
	{
		name: "HTTP/1.0 keep-alive", in: "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\n",
		version: HTTP10, status: 200, reason: "OK", headers: []string{"Connection", "Keep-Alive", "Content-Length", "2"},
		length: 2, keepAlive: true, kind: BodyLength,
	},
	{
		name: "no reason, no space", in: "HTTP/1.1 204\r\n\r\n",
		version: HTTP11, status: 204, length: -1, keepAlive: true, kind: BodyNone,
	},
	{
		name: "empty reason", in: "HTTP/1.1 404 \r\nContent-Length: 0\r\n\r\n",
		version: HTTP11, status: 404, headers: []string{"Content-Length", "0"}, length: 0, keepAlive: true, kind: BodyLength,
	},
	{
		name: "reason with spaces and obs-text", in: "HTTP/1.1 500 Internal \xe9rror\t x\r\n\r\n",
		version: HTTP11, status: 500, reason: "Internal \xe9rror\t x", length: -1, keepAlive: true, kind: BodyUntilClose,
	},
	{
		name: "100 continue", in: "HTTP/1.1 100 Continue\r\n\r\n",
		version: HTTP11, status: 100, reason: "Continue", length: -1, keepAlive: true, kind: BodyNone,
	},
	{
		name: "switching protocols", in: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
		version: HTTP11, status: 101, reason: "Switching Protocols",
		headers: []string{"Upgrade", "websocket", "Connection", "Upgrade"}, length: -1, keepAlive: true, upgrade: true, kind: BodyNone,
	},
	{
		name: "304 with a length", in: "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n",
		version: HTTP11, status: 304, reason: "Not Modified", headers: []string{"Content-Length", "99"},
		length: 99, keepAlive: true, kind: BodyNone,
	},
	{
		name: "OWS trimmed, empty value", in: "HTTP/1.1 200 OK\r\nX-A:  a b \t\r\nX-Empty:\r\nContent-Length:7\r\n\r\n",
		version: HTTP11, status: 200, reason: "OK", headers: []string{"X-A", "a b", "X-Empty", "", "Content-Length", "7"},
		length: 7, keepAlive: true, kind: BodyLength,
	},
	{
		name: "connection list", in: "HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Hop\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
		version: HTTP11, status: 200, reason: "OK",
		headers: []string{"Connection", "keep-alive, X-Hop", "Connection", "close", "Content-Length", "0"}, length: 0, kind: BodyLength,
	},
}

func checkResponse(t *testing.T, c respCase, r *Response, n int) {
	t.Helper()
	if n != len(c.in) {
		t.Errorf("consumed %d, want %d", n, len(c.in))
	}
	if r.Version != c.version || r.Status != c.status || string(r.Reason) != c.reason {
		t.Errorf("status line: %v %d %q, want %v %d %q", r.Version, r.Status, r.Reason, c.version, c.status, c.reason)
	}
	var got []string
	for _, h := range r.Headers {
		got = append(got, string(h.Name), string(h.Value))
	}
	if fmt.Sprint(got) != fmt.Sprint(c.headers) {
		t.Errorf("headers %q, want %q", got, c.headers)
	}
	if r.ContentLength != c.length || r.Chunked != c.chunked || r.KeepAlive != c.keepAlive || r.ConnUpgrade != c.upgrade {
		t.Errorf("length %d chunked %v keepAlive %v upgrade %v, want %d %v %v %v",
			r.ContentLength, r.Chunked, r.KeepAlive, r.ConnUpgrade, c.length, c.chunked, c.keepAlive, c.upgrade)
	}
	if k := r.Framing(false); k != c.kind {
		t.Errorf("framing %v, want %v", k, c.kind)
	}
	if r.HeadLen != len(c.in) {
		t.Errorf("HeadLen %d, want %d", r.HeadLen, len(c.in))
	}
}

func TestParseResponseValid(t *testing.T) {
	for _, c := range validResponses {
		t.Run(c.name, func(t *testing.T) {
			var r Response
			// Followed by body bytes and a second response: nothing past
			// the head may be taken.
			buf := []byte(c.in + "hello HTTP/1.1 200 OK\r\n\r\n")
			n, err := ParseResponse(buf, &r, nil)
			if err != nil {
				t.Fatalf("error %v", err)
			}
			checkResponse(t, c, &r, n)
		})
	}
}

// TestParseResponseSplit feeds every valid head at every split point and
// a byte at a time: the outcome must not depend on how bytes arrive.
func TestParseResponseSplit(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, c := range validResponses {
		for cut := 1; cut < len(c.in); cut++ {
			var r Response
			if _, err := ParseResponse([]byte(c.in[:cut]), &r, nil); err != ErrNeedMore {
				t.Fatalf("%s: cut %d: %v, want ErrNeedMore", c.name, cut, err)
			}
			n, err := ParseResponse([]byte(c.in), &r, nil)
			if err != nil {
				t.Fatalf("%s: cut %d: %v", c.name, cut, err)
			}
			checkResponse(t, c, &r, n)
		}
		var r Response
		buf := make([]byte, 0, len(c.in))
		for i := 0; i < len(c.in); {
			step := 1 + rng.Intn(3)
			buf = append(buf, c.in[i:min(i+step, len(c.in))]...)
			i += step
			n, err := ParseResponse(buf, &r, nil)
			if i < len(c.in) && err != ErrNeedMore {
				t.Fatalf("%s: prefix %d: %v", c.name, len(buf), err)
			}
			if i >= len(c.in) {
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				checkResponse(t, c, &r, n)
			}
		}
	}
}

// earlierResponse is parsed into a Response before a failing call, to
// show that the failure leaves nothing of it behind.
const earlierResponse = "HTTP/1.1 404 Gone Elsewhere\r\nContent-Length: 3\r\nX-Earlier: yes\r\n\r\n"

// checkResponseEmpty checks that r names nothing of an earlier response:
// it equals a Response that was Reset, header storage aside.
func checkResponseEmpty(t *testing.T, r *Response) {
	t.Helper()
	got := *r
	got.Headers, got.scanOff, got.scanLines = nil, 0, 0
	if !reflect.DeepEqual(got, Response{ContentLength: -1}) || len(r.Headers) != 0 {
		t.Errorf("after the failed ParseResponse r holds status %d, reason %q, %d fields", r.Status, r.Reason, len(r.Headers))
	}
}

// TestParseResponseNeedMoreLeavesResponseEmpty checks the same after a
// call that needs more bytes.
func TestParseResponseNeedMoreLeavesResponseEmpty(t *testing.T) {
	var r Response
	if _, err := ParseResponse([]byte(earlierResponse), &r, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseResponse([]byte("HTTP/1.1 200 OK\r\nA: b\r\n"), &r, nil); err != ErrNeedMore {
		t.Fatalf("%v; want ErrNeedMore", err)
	}
	checkResponseEmpty(t, &r)
}

func TestParseResponseInvalid(t *testing.T) {
	long := "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 200) + "\r\n\r\n"
	many := "HTTP/1.1 200 OK\r\n" + strings.Repeat("X: y\r\n", 5) + "\r\n"
	cases := []struct {
		name string
		in   string
		lim  *Limits
		want *Error
	}{
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", nil, errRespBareLF},
		{"bare LF in field", "HTTP/1.1 200 OK\r\nA: b\n\r\n", nil, errRespBareLF},
		{"empty line first", "\r\nHTTP/1.1 200 OK\r\n\r\n", nil, errRespEmptyLine},
		{"not HTTP", "HTTX/1.1 200 OK\r\n\r\n", nil, errStatusLine},
		{"garbage", "hello world, this is not HTTP\r\n\r\n", nil, errStatusLine},
		{"short", "HTTP/1.1 20\r\n\r\n", nil, errStatusCode},
		{"bare CR in reason", "HTTP/1.0 100 \r0\r\n\r\n", nil, errReason},
		{"bare CR line", "HTTP/1.1 200 OK\r\n\rX: y\r\n\r\n", nil, errRespFieldName},
		{"HTTP/2", "HTTP/2.0 200 OK\r\n\r\n", nil, errRespVersion},
		{"HTTP/1.2", "HTTP/1.2 200 OK\r\n\r\n", nil, errRespVersion},
		{"two spaces", "HTTP/1.1  200 OK\r\n\r\n", nil, errStatusCode},
		{"letters", "HTTP/1.1 2x0 OK\r\n\r\n", nil, errStatusCode},
		{"four digits", "HTTP/1.1 2000 OK\r\n\r\n", nil, errStatusCode},
		{"status 099", "HTTP/1.1 099 OK\r\n\r\n", nil, errStatusCode},
		{"status 600", "HTTP/1.1 600 OK\r\n\r\n", nil, errStatusCode},
		{"control in reason", "HTTP/1.1 200 O\x01K\r\n\r\n", nil, errReason},
		{"obs-fold", "HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n", nil, errRespObsFold},
		{"space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 1\r\n\r\n", nil, errRespSpaceColon},
		{"no colon", "HTTP/1.1 200 OK\r\nContent-Length\r\n\r\n", nil, errRespFieldName},
		{"empty name", "HTTP/1.1 200 OK\r\n: x\r\n\r\n", nil, errRespFieldName},
		{"bad name byte", "HTTP/1.1 200 OK\r\nA(b: x\r\n\r\n", nil, errRespFieldName},
		{"NUL in value", "HTTP/1.1 200 OK\r\nA: b\x00c\r\n\r\n", nil, errRespFieldValue},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", nil, errRespLength},
		{"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", nil, errRespLength},
		{"length list", "HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\n", nil, errRespLength},
		{"huge length", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", nil, errRespLength},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", nil, errRespDupLength},
		{"TE and CL", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n", nil, errRespTEAndLen},
		{"gzip, chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", nil, errRespCoding},
		{"two TE fields", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", nil, errRespCoding},
		{"TE in HTTP/1.0", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", nil, errRespTE10},
		{"head too large", long, &Limits{HeaderBytes: 100}, errRespHeadSize},
		{"head too large before its end", long[:150], &Limits{HeaderBytes: 100}, errRespHeadSize},
		{"too many fields", many, &Limits{MaxHeaders: 4}, errRespFields},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A response parsed before: nothing of it may be left in r
			// after the failure.
			var r Response
			if _, err := ParseResponse([]byte(earlierResponse), &r, nil); err != nil {
				t.Fatal(err)
			}
			_, err := ParseResponse([]byte(c.in), &r, c.lim)
			if err != c.want {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			checkResponseEmpty(t, &r)
			var e *Error
			if !errors.As(err, &e) || e.Status != 502 {
				t.Fatalf("error %v is not a 502 *Error", err)
			}
			// Any split gives the same error (or needs more first).
			for cut := 1; cut < len(c.in); cut++ {
				var r2 Response
				_, err := ParseResponse([]byte(c.in[:cut]), &r2, c.lim)
				if err != ErrNeedMore && err != c.want {
					t.Fatalf("cut %d: %v, want %v or ErrNeedMore", cut, err, c.want)
				}
				if err == c.want {
					continue
				}
				if _, err := ParseResponse([]byte(c.in), &r2, c.lim); err != c.want {
					t.Fatalf("cut %d then whole: %v, want %v", cut, err, c.want)
				}
			}
		})
	}
}

func TestResponseFramingAndBody(t *testing.T) {
	cases := []struct {
		in, body, payload string
		head              bool
		kind              BodyKind
	}{
		{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "hello", "hello", false, BodyLength},
		{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "", "", true, BodyNone},
		{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "", "", false, BodyLength},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "5;x=y\r\nhello\r\n1\r\n!\r\n0\r\nT: v\r\n\r\n", "hello!", false, BodyChunked},
		{"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", "", "", false, BodyNone},
		{"HTTP/1.1 200 OK\r\n\r\n", "", "", false, BodyUntilClose},
	}
	for _, c := range cases {
		var r Response
		n, err := ParseResponse([]byte(c.in+c.body+"NEXT"), &r, nil)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		var b BodyReader
		if k := b.InitResponse(&r, c.head); k != c.kind {
			t.Fatalf("%q head=%v: kind %v, want %v", c.in, c.head, k, c.kind)
		}
		rest := []byte(c.body + "NEXT")
		var payload []byte
		off := 0
		for {
			m, p, done, err := b.Next(rest[off:])
			if err != nil {
				t.Fatalf("%q: body: %v", c.in, err)
			}
			off += m
			payload = append(payload, p...)
			if done {
				break
			}
			if m == 0 {
				t.Fatalf("%q: body stalled at %d", c.in, off)
			}
		}
		if string(payload) != c.payload || off != len(c.body) {
			t.Fatalf("%q: payload %q consumed %d, want %q %d", c.in, payload, off, c.payload, len(c.body))
		}
		_ = n
	}
}

// FuzzParseResponse checks that ParseResponse never panics, gives the same
// answer however the input is split, and that every head it accepts
// net/http's ReadResponse accepts too, with the same status and framing.
func FuzzParseResponse(f *testing.F) {
	for _, c := range validResponses {
		f.Add([]byte(c.in), uint16(len(c.in)/2))
	}
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"), uint16(5))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n"), uint16(7))
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		if len(in) > 4096 {
			return
		}
		var r Response
		n, err := ParseResponse(in, &r, nil)
		// Split.
		var r2 Response
		k := int(cut) % (len(in) + 1)
		_, err2 := ParseResponse(in[:k], &r2, nil)
		if err2 == ErrNeedMore {
			n2, err3 := ParseResponse(in, &r2, nil)
			if err3 != err || n2 != n {
				t.Fatalf("split at %d: %d %v, whole: %d %v", k, n2, err3, n, err)
			}
		} else if err2 != err {
			// A prefix holds the same first problem (or the same
			// complete head) as the whole.
			t.Fatalf("prefix of %d: %v, whole: %v", k, err2, err)
		}
		if err != nil {
			return
		}
		resp, herr := http.ReadResponse(bufio.NewReader(bytes.NewReader(in[:n])), nil)
		if herr != nil {
			t.Fatalf("we accept, net/http refuses %q: %v", in[:n], herr)
		}
		defer resp.Body.Close()
		if resp.StatusCode != r.Status {
			t.Fatalf("status %d, net/http %d", r.Status, resp.StatusCode)
		}
		if r.Chunked != (len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked") {
			t.Fatalf("chunked %v, net/http %v", r.Chunked, resp.TransferEncoding)
		}
		if r.Framing(false) == BodyLength && resp.ContentLength != r.ContentLength && r.Status != 304 {
			t.Fatalf("length %d, net/http %d", r.ContentLength, resp.ContentLength)
		}
	})
}

// benchResponse is a typical upstream response head: 7 fields.
const benchResponse = "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\n" +
	"Content-Type: text/html; charset=utf-8\r\nContent-Length: 128\r\nConnection: keep-alive\r\n" +
	"Cache-Control: no-cache\r\nVary: Accept-Encoding\r\n\r\n"

func BenchmarkParseResponse(b *testing.B) {
	buf := []byte(benchResponse)
	var r Response
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for i := 0; i < b.N; i++ {
		if _, err := ParseResponse(buf, &r, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseResponseNetHTTP is the baseline: net/http's ReadResponse
// on the same head.
func BenchmarkParseResponseNetHTTP(b *testing.B) {
	buf := []byte(benchResponse)
	rd := bytes.NewReader(buf)
	br := bufio.NewReader(rd)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for i := 0; i < b.N; i++ {
		rd.Reset(buf)
		br.Reset(rd)
		if _, err := http.ReadResponse(br, nil); err != nil {
			b.Fatal(err)
		}
	}
}
