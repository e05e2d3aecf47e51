package codec

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func ptr(s string) *string { return &s }

// validCase is a request the parser accepts, with every field it must set.
// body is sent after the head (framed as the head says) and payload is
// what framing it yields.
type validCase struct {
	name    string
	in      string
	body    string
	payload string

	method, target string
	form           TargetForm
	path, query    *string // nil: the field must be nil
	version        Version
	host           *string
	headers        []string // name, value pairs
	length         int64
	chunked        bool
	keepAlive      bool
	expect100      bool
	upgrade        bool
}

// typicalGET is a browser-like GET with 8 header fields.
const typicalGET = "GET /static/app.js?v=3 HTTP/1.1\r\n" +
	"Host: www.example.com\r\n" +
	"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n" +
	"Accept: */*\r\n" +
	"Accept-Language: en-US,en;q=0.5\r\n" +
	"Accept-Encoding: gzip, deflate, br, zstd\r\n" +
	"Referer: https://www.example.com/\r\n" +
	"Connection: keep-alive\r\n" +
	"Cookie: session=0123456789abcdef; theme=dark\r\n" +
	"\r\n"

var validRequests = []validCase{
	{
		name: "typical GET", in: typicalGET,
		method: "GET", target: "/static/app.js?v=3", form: OriginForm, path: ptr("/static/app.js"), query: ptr("v=3"),
		version: HTTP11, host: ptr("www.example.com"),
		headers: []string{
			"Host", "www.example.com",
			"User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
			"Accept", "*/*",
			"Accept-Language", "en-US,en;q=0.5",
			"Accept-Encoding", "gzip, deflate, br, zstd",
			"Referer", "https://www.example.com/",
			"Connection", "keep-alive",
			"Cookie", "session=0123456789abcdef; theme=dark",
		},
		length: -1, keepAlive: true,
	},
	{
		name: "minimal HTTP/1.1", in: "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		method: "GET", target: "/", path: ptr("/"), version: HTTP11, host: ptr("a"),
		headers: []string{"Host", "a"}, length: -1, keepAlive: true,
	},
	{
		name: "raw UTF-8 in the target, as curl sends it", in: "GET /caf\xc3\xa9?q=\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
		method: "GET", target: "/caf\xc3\xa9?q=\xc3\xa9", path: ptr("/caf\xc3\xa9"), query: ptr("q=\xc3\xa9"), version: HTTP11, host: ptr("a"),
		headers: []string{"Host", "a"}, length: -1, keepAlive: true,
	},
	{
		name: "empty query", in: "GET /a? HTTP/1.1\r\nHost: a\r\n\r\n",
		method: "GET", target: "/a?", path: ptr("/a"), query: ptr(""), version: HTTP11, host: ptr("a"),
		headers: []string{"Host", "a"}, length: -1, keepAlive: true,
	},
	{
		name: "second question mark stays in the query", in: "GET /a?b?c=%2F HTTP/1.1\r\nHost: a\r\n\r\n",
		method: "GET", target: "/a?b?c=%2F", path: ptr("/a"), query: ptr("b?c=%2F"), version: HTTP11, host: ptr("a"),
		headers: []string{"Host", "a"}, length: -1, keepAlive: true,
	},
	{
		name: "percent-encoding and lenient target bytes", in: "GET /a%20b/{x}|y^z[1]\"<>\\`;=@:!$&'()*+,~ HTTP/1.1\r\nHost: a\r\n\r\n",
		method: "GET", target: "/a%20b/{x}|y^z[1]\"<>\\`;=@:!$&'()*+,~", path: ptr("/a%20b/{x}|y^z[1]\"<>\\`;=@:!$&'()*+,~"),
		version: HTTP11, host: ptr("a"), headers: []string{"Host", "a"}, length: -1, keepAlive: true,
	},
	{
		name: "HTTP/1.0 without Host", in: "GET /x HTTP/1.0\r\n\r\n",
		method: "GET", target: "/x", path: ptr("/x"), version: HTTP10, length: -1,
	},
	{
		name: "HTTP/1.0 keep-alive", in: "HEAD /x HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: a.example:8080\r\n\r\n",
		method: "HEAD", target: "/x", path: ptr("/x"), version: HTTP10, host: ptr("a.example:8080"),
		headers: []string{"Connection", "Keep-Alive", "Host", "a.example:8080"}, length: -1, keepAlive: true,
	},
	{
		name: "close wins over keep-alive", in: "GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: foo, CLOSE\r\n\r\n",
		method: "GET", target: "/", path: ptr("/"), version: HTTP10,
		headers: []string{"Connection", "keep-alive", "Connection", "foo, CLOSE"}, length: -1,
	},
	{
		name: "HTTP/1.1 close", in: "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
		method: "GET", target: "/", path: ptr("/"), version: HTTP11, host: ptr("a"),
		headers: []string{"Host", "a", "Connection", "close"}, length: -1,
	},
	{
		name: "Content-Length body", in: "POST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\nContent-Type: text/plain\r\n\r\n",
		body: "hello world", payload: "hello world",
		method: "POST", target: "/form", path: ptr("/form"), version: HTTP11, host: ptr("a"),
		headers: []string{"Host", "a", "Content-Length", "11", "Content-Type", "text/plain"}, length: 11, keepAlive: true,
	},
	{
		name: "Content-Length zero and leading zeros", in: "PUT /x HTTP/1.1\r\nHost: a\r\ncontent-length: 000\r\n\r\n",
		method: "PUT", target: "/x", path: ptr("/x"), version: HTTP11, host: ptr("a"),
		headers: []string{"Host", "a", "content-length", "000"}, length: 0, keepAlive: true,
	},
	{
		name:    "chunked with extensions and trailers",
		in:      "POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \t Chunked \r\nTrailer: Expires\r\n\r\n",
		body:    "5;name=value;q=\"a \\\"b\\\"\"\r\nhello\r\n" + "1 ; x\r\n,\r\n" + "00000006\r\n world\r\n" + "0;last\r\nExpires: never\r\nX-Sum: abc \r\n\r\n",
		payload: "hello, world",
		method:  "POST", target: "/up", path: ptr("/up"), version: HTTP11, host: ptr("a"),
		headers: []string{"Host", "a", "Transfer-Encoding", "Chunked", "Trailer", "Expires"}, length: -1, chunked: true, keepAlive: true,
	},
	{
		name: "absolute-form authority replaces Host", in: "GET http://origin.example:8080/p/q?x=1 HTTP/1.1\r\nHost: other\r\n\r\n",
		method: "GET", target: "http://origin.example:8080/p/q?x=1", form: AbsoluteForm, path: ptr("/p/q"), query: ptr("x=1"),
		version: HTTP11, host: ptr("origin.example:8080"), headers: []string{"Host", "other"}, length: -1, keepAlive: true,
	},
	{
		name: "absolute-form https with empty path", in: "GET HTTPS://[2001:db8::1]?q HTTP/1.1\r\nHost: x\r\n\r\n",
		method: "GET", target: "HTTPS://[2001:db8::1]?q", form: AbsoluteForm, path: ptr("/"), query: ptr("q"),
		version: HTTP11, host: ptr("[2001:db8::1]"), headers: []string{"Host", "x"}, length: -1, keepAlive: true,
	},
	{
		name: "absolute-form HTTP/1.0 without Host", in: "GET http://10.0.0.1 HTTP/1.0\r\n\r\n",
		method: "GET", target: "http://10.0.0.1", form: AbsoluteForm, path: ptr("/"),
		version: HTTP10, host: ptr("10.0.0.1"), length: -1,
	},
	{
		name: "CONNECT authority-form", in: "CONNECT [::ffff:192.0.2.1]:443 HTTP/1.1\r\nHost: [::ffff:192.0.2.1]:443\r\n\r\n",
		method: "CONNECT", target: "[::ffff:192.0.2.1]:443", form: AuthorityForm, version: HTTP11,
		host: ptr("[::ffff:192.0.2.1]:443"), headers: []string{"Host", "[::ffff:192.0.2.1]:443"}, length: -1, keepAlive: true,
	},
	{
		name: "CONNECT host name", in: "CONNECT example.com:80 HTTP/1.1\r\nHost: proxy\r\n\r\n",
		method: "CONNECT", target: "example.com:80", form: AuthorityForm, version: HTTP11,
		host: ptr("example.com:80"), headers: []string{"Host", "proxy"}, length: -1, keepAlive: true,
	},
	{
		name: "OPTIONS asterisk", in: "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
		method: "OPTIONS", target: "*", form: AsteriskForm, version: HTTP11, host: ptr("a"),
		headers: []string{"Host", "a"}, length: -1, keepAlive: true,
	},
	{
		name: "upgrade", in: "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\r\n",
		method: "GET", target: "/ws", path: ptr("/ws"), version: HTTP11, host: ptr("a"),
		headers: []string{"Host", "a", "Connection", "keep-alive, Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13"},
		length:  -1, keepAlive: true, upgrade: true,
	},
	{
		name: "upgrade ignored in HTTP/1.0", in: "GET /ws HTTP/1.0\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n",
		method: "GET", target: "/ws", path: ptr("/ws"), version: HTTP10,
		headers: []string{"Connection", "upgrade", "Upgrade", "websocket"}, length: -1,
	},
	{
		name: "Connection upgrade without Upgrade field", in: "GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\n\r\n",
		method: "GET", target: "/", path: ptr("/"), version: HTTP11, host: ptr("a"),
		headers: []string{"Host", "a", "Connection", "upgrade"}, length: -1, keepAlive: true,
	},
	{
		name: "expect 100-continue", in: "PUT /f HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n",
		body: "abc", payload: "abc",
		method: "PUT", target: "/f", path: ptr("/f"), version: HTTP11, host: ptr("a"),
		headers: []string{"Host", "a", "Expect", "100-Continue", "Content-Length", "3"}, length: 3, keepAlive: true, expect100: true,
	},
	{
		name: "expect ignored in HTTP/1.0", in: "PUT /f HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n",
		body: "x", payload: "x",
		method: "PUT", target: "/f", path: ptr("/f"), version: HTTP10,
		headers: []string{"Expect", "100-continue", "Content-Length", "1"}, length: 1,
	},
	{
		name: "values trimmed, empty and obs-text values", in: "GET / HTTP/1.1\r\nHost:a\r\nX-Empty:\r\nX-Blank: \t \r\nX-Tabs:\tin  side\t\r\nX-Latin1: caf\xe9\r\n\r\n",
		method: "GET", target: "/", path: ptr("/"), version: HTTP11, host: ptr("a"),
		headers: []string{"Host", "a", "X-Empty", "", "X-Blank", "", "X-Tabs", "in  side", "X-Latin1", "caf\xe9"},
		length:  -1, keepAlive: true,
	},
	{
		name: "empty Host", in: "GET / HTTP/1.1\r\nHost: \r\n\r\n",
		method: "GET", target: "/", path: ptr("/"), version: HTTP11, host: ptr(""),
		headers: []string{"Host", ""}, length: -1, keepAlive: true,
	},
	{
		name: "token method and field names", in: "M-SEARCH! /x HTTP/1.1\r\nHOST: a\r\n!#$%&'*+-.^_`|~09azAZ: v\r\n\r\n",
		method: "M-SEARCH!", target: "/x", path: ptr("/x"), version: HTTP11, host: ptr("a"),
		headers: []string{"HOST", "a", "!#$%&'*+-.^_`|~09azAZ", "v"}, length: -1, keepAlive: true,
	},
	{
		name: "Trailer not checked without chunked", in: "GET / HTTP/1.1\r\nHost: a\r\nTrailer: Content-Length\r\n\r\n",
		method: "GET", target: "/", path: ptr("/"), version: HTTP11, host: ptr("a"),
		headers: []string{"Host", "a", "Trailer", "Content-Length"}, length: -1, keepAlive: true,
	},
}

// checkRequest compares every field of r with c.
func checkRequest(t *testing.T, where string, c *validCase, r *Request, n int) {
	t.Helper()
	fail := func(field string, got, want any) {
		t.Helper()
		t.Errorf("%s: %s = %q; want %q", where, field, got, want)
	}
	if n != len(c.in) || r.HeadLen != len(c.in) {
		t.Errorf("%s: n = %d, HeadLen = %d; want %d", where, n, r.HeadLen, len(c.in))
	}
	if string(r.Method) != c.method {
		fail("Method", r.Method, c.method)
	}
	if string(r.Target) != c.target {
		fail("Target", r.Target, c.target)
	}
	if r.Form != c.form {
		fail("Form", fmt.Sprint(r.Form), fmt.Sprint(c.form))
	}
	checkOpt := func(field string, got []byte, want *string) {
		t.Helper()
		switch {
		case want == nil && got != nil:
			fail(field, got, "<nil>")
		case want != nil && (got == nil || string(got) != *want):
			fail(field, fmt.Sprint(got == nil, string(got)), fmt.Sprint(false, *want))
		}
	}
	checkOpt("Path", r.Path, c.path)
	checkOpt("Query", r.Query, c.query)
	checkOpt("Host", r.Host, c.host)
	if r.Version != c.version {
		fail("Version", fmt.Sprint(r.Version), fmt.Sprint(c.version))
	}
	var hs []string
	for _, h := range r.Headers {
		hs = append(hs, string(h.Name), string(h.Value))
	}
	if strings.Join(hs, "|") != strings.Join(c.headers, "|") || len(hs) != len(c.headers) {
		fail("Headers", hs, c.headers)
	}
	if r.ContentLength != c.length {
		fail("ContentLength", fmt.Sprint(r.ContentLength), fmt.Sprint(c.length))
	}
	flags := fmt.Sprint(r.Chunked, r.KeepAlive, r.Expect100, r.Upgrade)
	if want := fmt.Sprint(c.chunked, c.keepAlive, c.expect100, c.upgrade); flags != want {
		fail("Chunked, KeepAlive, Expect100, Upgrade", flags, want)
	}
}

func TestParseValid(t *testing.T) {
	for i := range validRequests {
		c := &validRequests[i]
		var r Request
		buf := []byte(c.in + c.body)
		n, err := Parse(buf, &r, nil)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		checkRequest(t, c.name, c, &r, n)
		if got := readBody(t, c.name, &r, buf[n:], 0); got != c.payload {
			t.Errorf("%s: payload %q; want %q", c.name, got, c.payload)
		}
	}
}

// readBody frames the body at the start of in and returns its payload,
// checking that exactly len(c.body) bytes are consumed when want >= 0.
func readBody(t *testing.T, where string, r *Request, in []byte, max int64) string {
	t.Helper()
	var b BodyReader
	b.Init(r, max)
	var payload []byte
	off := 0
	for {
		n, p, done, err := b.Next(in[off:])
		if err != nil {
			t.Fatalf("%s: body: %v", where, err)
		}
		payload = append(payload, p...)
		off += n
		if done {
			break
		}
		if n == 0 {
			t.Fatalf("%s: body incomplete after %d bytes", where, off)
		}
	}
	return string(payload)
}

// parseSplit feeds in to Parse in pieces ending at cuts (increasing, then
// len(in)), with one Request as a connection would, and returns the result
// of the first call that did not need more.
func parseSplit(in []byte, cuts []int, r *Request, lim *Limits) (int, error) {
	for _, k := range append(cuts, len(in)) {
		n, err := Parse(in[:k], r, lim)
		if err != ErrNeedMore {
			return n, err
		}
		if n != 0 {
			return n, fmt.Errorf("ErrNeedMore with n = %d", n)
		}
	}
	return 0, ErrNeedMore
}

func byteCuts(n int) []int {
	cuts := make([]int, 0, n)
	for k := 0; k < n; k++ {
		cuts = append(cuts, k)
	}
	return cuts
}

func randomCuts(rng *rand.Rand, n int) []int {
	if n < 2 {
		return nil
	}
	cuts := make([]int, 1+rng.Intn(3))
	for i := range cuts {
		cuts[i] = rng.Intn(n)
	}
	for i := range cuts { // sort a handful
		for j := i + 1; j < len(cuts); j++ {
			if cuts[j] < cuts[i] {
				cuts[i], cuts[j] = cuts[j], cuts[i]
			}
		}
	}
	return cuts
}

func TestParseValidSplit(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := range validRequests {
		c := &validRequests[i]
		in := []byte(c.in)
		var r Request
		n, err := parseSplit(in, byteCuts(len(in)), &r, nil)
		if err != nil {
			t.Errorf("%s: byte by byte: %v", c.name, err)
		} else {
			checkRequest(t, c.name+" byte by byte", c, &r, n)
		}
		for trial := 0; trial < 50; trial++ {
			cuts := randomCuts(rng, len(in))
			r.Reset()
			n, err := parseSplit(in, cuts, &r, nil)
			if err != nil {
				t.Errorf("%s: cuts %v: %v", c.name, cuts, err)
				continue
			}
			checkRequest(t, fmt.Sprintf("%s cuts %v", c.name, cuts), c, &r, n)
		}
	}
}

// TestParsePipelined parses 50 copies of each request, body included, out
// of one buffer, back to back.
func TestParsePipelined(t *testing.T) {
	for i := range validRequests {
		c := &validRequests[i]
		buf := []byte(strings.Repeat(c.in+c.body, 50))
		var r Request
		off := 0
		for k := 0; k < 50; k++ {
			n, err := Parse(buf[off:], &r, nil)
			if err != nil {
				t.Fatalf("%s: copy %d: %v", c.name, k, err)
			}
			checkRequest(t, fmt.Sprintf("%s copy %d", c.name, k), c, &r, n)
			off += n
			var b BodyReader
			b.Init(&r, 0)
			var payload []byte
			for {
				m, p, done, err := b.Next(buf[off:])
				if err != nil {
					t.Fatalf("%s: copy %d body: %v", c.name, k, err)
				}
				payload = append(payload, p...)
				off += m
				if done {
					break
				}
				if m == 0 {
					t.Fatalf("%s: copy %d: body incomplete", c.name, k)
				}
			}
			if string(payload) != c.payload {
				t.Fatalf("%s: copy %d: payload %q; want %q", c.name, k, payload, c.payload)
			}
		}
		if off != len(buf) {
			t.Errorf("%s: consumed %d of %d bytes", c.name, off, len(buf))
		}
	}
}

// rejectCase is a head the parser refuses with err.
type rejectCase struct {
	name string
	in   string
	err  *Error
	lim  *Limits
}

func h11(fields string) string { return "GET / HTTP/1.1\r\nHost: a\r\n" + fields + "\r\n" }

var rejectedRequests = []rejectCase{
	// Line endings.
	{"bare LF after request line", "GET / HTTP/1.1\nHost: a\r\n\r\n", errBareLF, nil},
	{"bare LF after field", "GET / HTTP/1.1\r\nHost: a\n\r\n", errBareLF, nil},
	{"bare LF as empty line", "GET / HTTP/1.1\r\nHost: a\r\n\n", errBareLF, nil},
	{"bare LF only", "GET / HTTP/1.1\n\n", errBareLF, nil},
	{"empty line first", "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", errEmptyLine, nil},
	{"bare CR in value", h11("X: a\rb\r\n"), errFieldValue, nil},
	{"CR before CRLF", h11("X: a\r\r\n"), errFieldValue, nil},
	{"bare CR in request line", "GET /\r HTTP/1.1\r\nHost: a\r\n\r\n", errRequestLine, nil},

	// Request line.
	{"empty method", " / HTTP/1.1\r\nHost: a\r\n\r\n", errRequestLine, nil},
	{"bad method byte", "G@T / HTTP/1.1\r\nHost: a\r\n\r\n", errMethod, nil},
	{"non-ASCII method", "G\xc9T / HTTP/1.1\r\nHost: a\r\n\r\n", errMethod, nil},
	{"method only", "GET\r\nHost: a\r\n\r\n", errRequestLine, nil},
	{"double space", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", errRequestLine, nil},
	{"missing version", "GET /\r\nHost: a\r\n\r\n", errRequestLine, nil},
	{"tab separator", "GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", errMethod, nil},
	{"space after version", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", errVersion, nil},
	{"lowercase version", "GET / http/1.1\r\nHost: a\r\n\r\n", errVersion, nil},
	{"long version", "GET / HTTP/1.10\r\nHost: a\r\n\r\n", errVersion, nil},
	{"short version", "GET / HTTP/1\r\nHost: a\r\n\r\n", errVersion, nil},
	{"version letters", "GET / HTTP/x.y\r\nHost: a\r\n\r\n", errVersion, nil},
	{"HTTP/2.0", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", errHTTPVersion, nil},
	{"HTTP/0.9", "GET / HTTP/0.9\r\n\r\n", errHTTPVersion, nil},
	{"HTTP/1.2", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", errHTTPVersion, nil},

	// Request-target.
	{"fragment", "GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", errTargetByte, nil},
	{"CTL in target", "GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n", errTargetByte, nil},
	{"DEL in target", "GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n", errTargetByte, nil},
	{"bad percent in path", "GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n", errPercent, nil},
	{"short percent", "GET /a%2 HTTP/1.1\r\nHost: a\r\n\r\n", errPercent, nil},
	{"bad percent in query", "GET /?a=%g0 HTTP/1.1\r\nHost: a\r\n\r\n", errPercent, nil},
	{"asterisk with GET", "GET * HTTP/1.1\r\nHost: a\r\n\r\n", errTargetForm, nil},
	{"CONNECT origin-form", "CONNECT /x HTTP/1.1\r\nHost: a\r\n\r\n", errTargetForm, nil},
	{"CONNECT asterisk", "CONNECT * HTTP/1.1\r\nHost: a\r\n\r\n", errTargetForm, nil},
	{"other scheme", "GET ftp://a/ HTTP/1.1\r\nHost: a\r\n\r\n", errTargetForm, nil},
	{"opaque http", "GET http:a HTTP/1.1\r\nHost: a\r\n\r\n", errTargetForm, nil},
	{"authority-form with GET", "GET a.example:80 HTTP/1.1\r\nHost: a\r\n\r\n", errTargetForm, nil},
	{"relative path", "GET a/b HTTP/1.1\r\nHost: a\r\n\r\n", errTargetForm, nil},
	{"userinfo", "GET http://u:p@a/ HTTP/1.1\r\nHost: a\r\n\r\n", errAuthority, nil},
	{"empty host", "GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", errAuthority, nil},
	{"empty host with port", "GET http://:80/ HTTP/1.1\r\nHost: a\r\n\r\n", errAuthority, nil},
	{"percent in host", "GET http://a%41/ HTTP/1.1\r\nHost: a\r\n\r\n", errAuthority, nil},
	{"unclosed IP literal", "GET http://[::1/ HTTP/1.1\r\nHost: a\r\n\r\n", errAuthority, nil},
	{"IPv4 literal", "GET http://[1.2.3.4]/ HTTP/1.1\r\nHost: a\r\n\r\n", errAuthority, nil},
	{"IPv6 zone", "GET http://[fe80::1%25eth0]/ HTTP/1.1\r\nHost: a\r\n\r\n", errAuthority, nil},
	{"bad port", "GET http://a:8x/ HTTP/1.1\r\nHost: a\r\n\r\n", errAuthority, nil},
	{"two colons", "GET http://a:1:2/ HTTP/1.1\r\nHost: a\r\n\r\n", errAuthority, nil},
	{"bracket in host", "GET http://a]b/ HTTP/1.1\r\nHost: a\r\n\r\n", errAuthority, nil},
	{"CONNECT without port", "CONNECT a.example HTTP/1.1\r\nHost: a\r\n\r\n", errAuthority, nil},
	{"CONNECT empty port", "CONNECT a.example: HTTP/1.1\r\nHost: a\r\n\r\n", errAuthority, nil},
	{"CONNECT empty host", "CONNECT :443 HTTP/1.1\r\nHost: a\r\n\r\n", errAuthority, nil},
	{"CONNECT with path", "CONNECT a:443/x HTTP/1.1\r\nHost: a\r\n\r\n", errAuthority, nil},

	// Field lines.
	{"obs-fold", h11("X: a\r\n b\r\n"), errObsFold, nil},
	{"obs-fold with tab", h11("X: a\r\n\tb\r\n"), errObsFold, nil},
	{"leading whitespace on first field", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", errObsFold, nil},
	{"empty name", h11(": x\r\n"), errEmptyName, nil},
	{"space before colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", errSpaceColon, nil},
	{"tab before colon", h11("X\t: a\r\n"), errSpaceColon, nil},
	{"space in name", h11("X Y: a\r\n"), errFieldName, nil},
	{"bad name byte", h11("X@Y: a\r\n"), errFieldName, nil},
	{"non-ASCII name", h11("X\xc3\xa9: a\r\n"), errFieldName, nil},
	{"no colon", h11("X-No-Colon\r\n"), errNoColon, nil},
	{"NUL in value", h11("X: a\x00b\r\n"), errFieldValue, nil},
	{"DEL in value", h11("X: a\x7fb\r\n"), errFieldValue, nil},
	{"CTL in value", h11("X: a\x1bb\r\n"), errFieldValue, nil},

	// Host.
	{"missing Host", "GET / HTTP/1.1\r\nX: a\r\n\r\n", errNoHost, nil},
	{"missing Host absolute-form", "GET http://a/ HTTP/1.1\r\n\r\n", errNoHost, nil},
	{"duplicate Host", h11("host: a\r\n"), errDupHost, nil},
	{"duplicate Host HTTP/1.0", "GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", errDupHost, nil},
	{"Host with space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", errBadHost, nil},
	{"Host with path", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", errBadHost, nil},
	{"Host with userinfo", "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", errBadHost, nil},
	{"Host with bad port", "GET / HTTP/1.1\r\nHost: a:http\r\n\r\n", errBadHost, nil},
	{"Host port only", "GET / HTTP/1.1\r\nHost: :80\r\n\r\n", errBadHost, nil},

	// Content-Length.
	{"Content-Length letters", h11("Content-Length: abc\r\n"), errBadLength, nil},
	{"Content-Length negative", h11("Content-Length: -1\r\n"), errBadLength, nil},
	{"Content-Length plus", h11("Content-Length: +1\r\n"), errBadLength, nil},
	{"Content-Length empty", h11("Content-Length: \r\n"), errBadLength, nil},
	{"Content-Length list", h11("Content-Length: 1,1\r\n"), errBadLength, nil},
	{"Content-Length inner space", h11("Content-Length: 1 2\r\n"), errBadLength, nil},
	{"Content-Length hex", h11("Content-Length: 0x10\r\n"), errBadLength, nil},
	{"Content-Length overflow", h11("Content-Length: 9223372036854775808\r\n"), errBadLength, nil},
	{"Content-Length huge", h11("Content-Length: 99999999999999999999999\r\n"), errBadLength, nil},
	{"duplicate equal Content-Length", h11("Content-Length: 5\r\ncontent-length: 5\r\n"), errDupLength, nil},
	{"duplicate different Content-Length", h11("Content-Length: 5\r\nContent-Length: 6\r\n"), errDupLength, nil},
	{"Content-Length over limit", h11("Content-Length: 1025\r\n"), errBodyTooLarge, &Limits{BodyBytes: 1024}},
	{"Content-Length over default limit", h11("Content-Length: 10485761\r\n"), errBodyTooLarge, nil},

	// Transfer-Encoding.
	{"Transfer-Encoding with Content-Length", h11("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"), errTEAndLength, nil},
	{"Content-Length with Transfer-Encoding", h11("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"), errTEAndLength, nil},
	{"Transfer-Encoding in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", errTE10, nil},
	{"gzip", h11("Transfer-Encoding: gzip\r\n"), errTransferCoding, nil},
	{"gzip, chunked", h11("Transfer-Encoding: gzip, chunked\r\n"), errTransferCoding, nil},
	{"chunked, chunked", h11("Transfer-Encoding: chunked, chunked\r\n"), errTransferCoding, nil},
	{"two Transfer-Encoding fields", h11("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"), errTransferCoding, nil},
	{"empty Transfer-Encoding", h11("Transfer-Encoding: \r\n"), errTransferCoding, nil},
	{"chunked with parameter", h11("Transfer-Encoding: chunked;x=1\r\n"), errTransferCoding, nil},
	{"Trailer names Content-Length", h11("Transfer-Encoding: chunked\r\nTrailer: X, content-length\r\n"), errTrailerField, nil},
	{"Trailer names Transfer-Encoding", h11("Trailer: Transfer-Encoding\r\nTransfer-Encoding: chunked\r\n"), errTrailerField, nil},

	// Expect.
	{"unknown expectation", h11("Expect: 200-ok\r\n"), errExpectation, nil},
	{"expectation list", h11("Expect: 100-continue, x\r\n"), errExpectation, nil},

	// Limits.
	{"request line too long", "GET /" + strings.Repeat("a", 64) + " HTTP/1.1\r\nHost: a\r\n\r\n", errLineTooLong, &Limits{RequestLine: 64}},
	{"head too large", h11("X: " + strings.Repeat("v", 200) + "\r\n"), errHeadTooLarge, &Limits{HeaderBytes: 128}},
	{"too many fields", h11(strings.Repeat("X: v\r\n", 4)), errTooManyFields, &Limits{MaxHeaders: 4}},
}

func TestParseRejected(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, c := range rejectedRequests {
		in := []byte(c.in)
		var r Request
		n, err := Parse(in, &r, c.lim)
		if err != c.err || n != 0 {
			t.Errorf("%s: Parse = %d, %v; want %v (%d)", c.name, n, err, c.err, c.err.Status)
			continue
		}
		var ce *Error
		if !errors.As(err, &ce) || ce.Status != c.err.Status {
			t.Errorf("%s: error %v is not an *Error with status %d", c.name, err, c.err.Status)
		}
		// However the bytes arrive, the answer is the same.
		r.Reset()
		if _, err := parseSplit(in, byteCuts(len(in)), &r, c.lim); err != c.err {
			t.Errorf("%s: byte by byte: %v; want %v", c.name, err, c.err)
		}
		for trial := 0; trial < 10; trial++ {
			cuts := randomCuts(rng, len(in))
			r.Reset()
			if _, err := parseSplit(in, cuts, &r, c.lim); err != c.err {
				t.Errorf("%s: cuts %v: %v; want %v", c.name, cuts, err, c.err)
			}
		}
	}
}

// TestParseLimitsEarly checks that limits fail before the end of the
// request line or head arrives, and hold exactly at the limit.
func TestParseLimitsEarly(t *testing.T) {
	lim := &Limits{RequestLine: 32, HeaderBytes: 64, MaxHeaders: 2}
	var r Request
	line := "GET /" + strings.Repeat("a", 32-len("GET / HTTP/1.1")) + " HTTP/1.1" // exactly 32 bytes
	if _, err := Parse([]byte(line+"\r"), &r, lim); err != ErrNeedMore {
		t.Errorf("request line at the limit: %v", err)
	}
	r.Reset()
	if _, err := Parse([]byte(line+"x"), &r, lim); err != errLineTooLong {
		t.Errorf("request line over the limit, no CRLF yet: %v", err)
	}
	r.Reset()
	if _, err := Parse([]byte(strings.Repeat("G", 33)), &r, lim); err != errLineTooLong {
		t.Errorf("33 bytes of method: %v", err)
	}

	// A head of exactly HeaderBytes is fine; one byte more is not, and
	// shows before the empty line arrives.
	head := "GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("v", 64-len("GET / HTTP/1.1\r\nHost: a\r\nX: \r\n\r\n")) + "\r\n\r\n"
	if len(head) != 64 {
		t.Fatalf("head is %d bytes", len(head))
	}
	r.Reset()
	if n, err := Parse([]byte(head), &r, lim); err != nil || n != 64 {
		t.Errorf("head at the limit: %d, %v", n, err)
	}
	r.Reset()
	if _, err := Parse([]byte(head[:len(head)-2]+"\r"), &r, lim); err != ErrNeedMore {
		t.Errorf("64 bytes, no end yet: %v", err)
	}
	r.Reset()
	if _, err := Parse([]byte(head[:len(head)-2]+"xxx"), &r, lim); err != errHeadTooLarge {
		t.Errorf("65 bytes, no end yet: %v", err)
	}

	// Too many fields shows before the head ends.
	r.Reset()
	if _, err := Parse([]byte("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n"), &r, lim); err != errTooManyFields {
		t.Errorf("third field: %v", err)
	}
	r.Reset()
	if n, err := Parse([]byte("GET / HTTP/1.1\r\nHost: 1\r\nB: 2\r\n\r\n"), &r, lim); err != nil || n == 0 {
		t.Errorf("two fields: %d, %v", n, err)
	}
}

// TestParseResumeAfterReset checks that a Request reused for unrelated
// bytes after Reset parses them from the start.
func TestParseResumeAfterReset(t *testing.T) {
	var r Request
	if _, err := Parse([]byte("GET /first HTTP/1.1\r\nHost: a\r\nX-Long-Field: 0123456789"), &r, nil); err != ErrNeedMore {
		t.Fatal(err)
	}
	r.Reset()
	n, err := Parse([]byte("GET /b HTTP/1.1\r\nHost: b\r\n\r\n"), &r, nil)
	if err != nil || string(r.Path) != "/b" || string(r.Host) != "b" || n != 28 {
		t.Errorf("after Reset: %d, %v, %q %q", n, err, r.Path, r.Host)
	}
	// A shorter buffer than the remembered offset also starts over.
	if _, err := Parse([]byte("GET /first HTTP/1.1\r\nHost: a\r\nX-Long-Field: 0123456789"), &r, nil); err != ErrNeedMore {
		t.Fatal(err)
	}
	if n, err := Parse([]byte("GET / HTTP/1.1\r\nHost: c\r\n\r\n"), &r, nil); err != nil || string(r.Host) != "c" || n != 27 {
		t.Errorf("shorter buffer: %d, %v, %q", n, err, r.Host)
	}
}

// TestParseFailureLeavesRequestEmpty checks that a Parse that fails, or
// needs more bytes, leaves nothing of the request parsed before it in r:
// those bytes may since belong to another connection, and whatever reads
// r after a failed call (an access log line, an error answer) must not
// name them. Every rejected head is tried, with a request parsed into r
// first, and r must then equal a Request that was Reset, header storage
// aside.
func TestParseFailureLeavesRequestEmpty(t *testing.T) {
	prev := []byte(typicalGET)
	check := func(name string, r *Request) {
		t.Helper()
		want := Request{ContentLength: -1}
		got := *r
		got.Headers, got.scanOff, got.scanLines = nil, 0, 0
		if !reflect.DeepEqual(got, want) || len(r.Headers) != 0 {
			t.Errorf("%s: after the failed Parse r holds method %q, target %q, host %q, %d fields, head %d",
				name, r.Method, r.Target, r.Host, len(r.Headers), r.HeadLen)
		}
		if cap(r.Headers) == 0 {
			t.Errorf("%s: header storage was dropped", name)
		}
	}
	for _, c := range rejectedRequests {
		var r Request
		if _, err := Parse(prev, &r, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := Parse([]byte(c.in), &r, c.lim); err != c.err {
			t.Fatalf("%s: %v; want %v", c.name, err, c.err)
		}
		check(c.name, &r)
	}
	for _, in := range []string{"", "GET", "GET / HTTP/1.1\r\nHost: a\r\n"} {
		var r Request
		if _, err := Parse(prev, &r, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := Parse([]byte(in), &r, nil); err != ErrNeedMore {
			t.Fatalf("%q: %v; want ErrNeedMore", in, err)
		}
		check(fmt.Sprintf("need more after %q", in), &r)
	}
}

// TestParseAliases checks that parsed fields point into the buffer.
func TestParseAliases(t *testing.T) {
	buf := []byte(typicalGET)
	var r Request
	if _, err := Parse(buf, &r, nil); err != nil {
		t.Fatal(err)
	}
	in := func(b []byte) bool {
		if len(b) == 0 {
			return true
		}
		start := &buf[0]
		end := &buf[len(buf)-1]
		p := &b[0]
		return bytes.Contains(buf, b) && uintptrOf(p) >= uintptrOf(start) && uintptrOf(p) <= uintptrOf(end)
	}
	for _, f := range [][]byte{r.Method, r.Target, r.Path, r.Query, r.Host} {
		if !in(f) {
			t.Errorf("%q does not alias the buffer", f)
		}
	}
	for _, h := range r.Headers {
		if !in(h.Name) || !in(h.Value) {
			t.Errorf("%q: %q does not alias the buffer", h.Name, h.Value)
		}
		if cap(h.Name) != len(h.Name) || cap(h.Value) != len(h.Value) {
			t.Errorf("%q: capacity reaches past the field", h.Name)
		}
	}
}

func TestRequestHeader(t *testing.T) {
	var r Request
	if _, err := Parse([]byte("GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nx-a: 2\r\n\r\n"), &r, nil); err != nil {
		t.Fatal(err)
	}
	if got := r.Header("X-a"); string(got) != "1" {
		t.Errorf("Header(X-a) = %q", got)
	}
	if got := r.Header("X-B"); got != nil {
		t.Errorf("Header(X-B) = %q", got)
	}
	if r.HasBody() {
		t.Error("HasBody")
	}
}

func TestValidIPv6(t *testing.T) {
	for s, want := range map[string]bool{
		"::": true, "::1": true, "1::": true, "1:2:3:4:5:6:7:8": true, "1:2:3:4:5:6:7::": true,
		"::2:3:4:5:6:7:8": true, "fe80::1:2": true, "::ffff:1.2.3.4": true, "1:2:3:4:5:6:1.2.3.4": true,
		"ABCD:ef01::": true, "1::1.2.3.4": true,
		"": false, ":": false, ":1": false, "1:": false, "1:2:3:4:5:6:7": false, "1:2:3:4:5:6:7:8:9": false,
		"1:2:3:4:5:6:7:8::": false, "1::2::3": false, "12345::": false, "g::": false, ":::": false,
		"1.2.3.4": false, "::1.2.3": false, "::1.2.3.4.5": false, "::256.1.1.1": false, "::01.1.1.1": false,
		"1:2:3:4:5:6:7:1.2.3.4": false, "1:2:3:4:5:1.2.3.4": false, "::1.2.3.4:1": false, "fe80::1%eth0": false,
		"::a.1.2.3": false, "::1234.1.1.1": false, "1:::2": false,
	} {
		if got := validIPv6([]byte(s)); got != want {
			t.Errorf("validIPv6(%q) = %v; want %v", s, got, want)
		}
	}
}

// TestValidIPv6Random compares validIPv6 with netip.ParseAddr (which
// net/url uses for IP literals) on random strings over the IPv6 alphabet:
// they must agree except on IPv4 addresses, which are not IP literals.
func TestValidIPv6Random(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	const alphabet = "0123456789abcdefABCDEF::::...."
	buf := make([]byte, 0, 48)
	valid := 0
	for i := 0; i < 200000; i++ {
		buf = buf[:0]
		for n := rng.Intn(40); n > 0; n-- {
			buf = append(buf, alphabet[rng.Intn(len(alphabet))])
		}
		if i%4 == 0 { // bias towards well-formed addresses
			buf = netip.AddrFrom16([16]byte{0, 0, 0, 0, byte(rng.Intn(2)), 0, 0, byte(rng.Intn(3)), 0, 0, byte(rng.Intn(256)), byte(rng.Intn(256)), byte(rng.Intn(256)), 0, 0, byte(rng.Intn(256))}).AppendTo(buf[:0])
		}
		addr, err := netip.ParseAddr(string(buf))
		want := err == nil && !addr.Is4()
		if want {
			valid++
		}
		if got := validIPv6(buf); got != want {
			t.Fatalf("validIPv6(%q) = %v; netip: %v, %v", buf, got, addr, err)
		}
	}
	if valid < 50000 {
		t.Errorf("only %d valid addresses generated", valid)
	}
}

// TestScanValue compares the word-at-a-time scan with the byte table on
// every single-byte stop at every offset of a word.
func TestScanValue(t *testing.T) {
	naive := func(b []byte, p int) int {
		for p < len(b) && charClass[b[p]]&cValue != 0 {
			p++
		}
		return p
	}
	for c := 0; c < 256; c++ {
		for at := 0; at < 20; at++ {
			for start := 0; start < 3; start++ {
				b := []byte(strings.Repeat("v\x80~ ", 6))
				b[at] = byte(c)
				if got, want := scanValue(b, start), naive(b, start); got != want {
					t.Fatalf("byte %#x at %d from %d: %d; want %d", c, at, start, got, want)
				}
			}
		}
	}
	rng := rand.New(rand.NewSource(5))
	b := make([]byte, 64)
	for i := 0; i < 20000; i++ {
		for j := range b {
			b[j] = byte(0x20 + rng.Intn(0xe0))
			if rng.Intn(64) == 0 {
				b[j] = byte(rng.Intn(0x20))
			}
		}
		if got, want := scanValue(b, 0), naive(b, 0); got != want {
			t.Fatalf("%q: %d; want %d", b, got, want)
		}
	}
}
