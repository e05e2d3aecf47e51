package codec

import (
	"bufio"
	"bytes"
	"errors"
	"net/http"
	"net/textproto"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"gale/config"
)

// stricterThanNetHTTP lists every class of input that Parse rejects and
// net/http's ReadRequest accepts, by the error Parse returns for it (the
// same list is on Parse's doc comment). FuzzParse fails when Parse rejects
// something net/http accepts with an error that is not listed here, and
// TestStricterThanNetHTTP checks every example: Parse rejects it with that
// error, ReadRequest accepts it.
//
// Some of these errors also cover inputs net/http rejects (a CTL in the
// target is errTargetByte too); listing them says only that some inputs of
// the class are accepted by net/http.
var stricterThanNetHTTP = []struct {
	err      *Error
	why      string
	examples []string
}{
	{errBareLF, "RFC 9112 2.2 lets a recipient accept a bare LF as a line ending; net/http does, we do not",
		[]string{"GET / HTTP/1.1\nHost: a\n\n", "GET / HTTP/1.1\r\nHost: a\n\r\n"}},
	{errRequestLine, "an empty request-target (two spaces after the method): for CONNECT, net/http makes it \"http://\" and accepts it",
		[]string{"CONNECT  HTTP/1.1\r\nHost: a\r\n\r\n"}},
	{errTargetByte, `"#" is not a request-target byte (RFC 9112 3.2, RFC 3986 3); net/url takes it into the path`,
		[]string{"GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n"}},
	{errPercent, "net/url does not check pct-encoding in the query (RFC 3986 2.1)",
		[]string{"GET /?q=%zz HTTP/1.1\r\nHost: a\r\n\r\n", "GET /?q=100% HTTP/1.1\r\nHost: a\r\n\r\n"}},
	{errTargetForm, `"*" only for OPTIONS, CONNECT only with authority-form, absolute-form only http(s)://authority (RFC 9112 3.2.2-3.2.4)`,
		[]string{"GET * HTTP/1.1\r\nHost: a\r\n\r\n", "CONNECT /rpc HTTP/1.1\r\nHost: a\r\n\r\n",
			"GET ftp://a/b HTTP/1.1\r\nHost: a\r\n\r\n", "GET mailto:a HTTP/1.1\r\nHost: a\r\n\r\n"}},
	{errAuthority, "no userinfo (RFC 9110 4.2.4), no empty host (RFC 9110 4.2.1), no pct-encoding or bytes outside RFC 3986 in the host, a port for CONNECT (RFC 9112 3.2.3)",
		[]string{"GET http://u@a/ HTTP/1.1\r\nHost: a\r\n\r\n", "GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n",
			"GET http://[fe80::1%25en0]/ HTTP/1.1\r\nHost: a\r\n\r\n", "GET http://a]b/ HTTP/1.1\r\nHost: a\r\n\r\n",
			"CONNECT a.example HTTP/1.1\r\nHost: a\r\n\r\n", "CONNECT a:1/x HTTP/1.1\r\nHost: a\r\n\r\n"}},
	{errFieldName, "a field name is a token (RFC 9110 5.1); net/textproto accepts spaces inside it",
		[]string{"GET / HTTP/1.1\r\nHost: a\r\nX Y: z\r\n\r\n"}},
	{errSpaceColon, "no whitespace between field name and colon (RFC 9112 5.1: MUST reject); net/textproto accepts spaces",
		[]string{"GET / HTTP/1.1\r\nHost : a\r\n\r\n", "GET / HTTP/1.1\r\nHost: a\r\nX : y\r\n\r\n"}},
	{errObsFold, "obs-fold (RFC 9112 5.2 allows rejecting it); net/textproto unfolds",
		[]string{"GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n z\r\n\r\n"}},
	{errNoHost, "HTTP/1.1 needs Host (RFC 9112 3.2); net/http's server checks it, ReadRequest does not",
		[]string{"GET / HTTP/1.1\r\n\r\n", "GET http://a/ HTTP/1.1\r\n\r\n"}},
	{errBadHost, "Host is uri-host [\":\" port] (RFC 9110 7.2); net/http's server checks it, ReadRequest does not",
		[]string{"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n"}},
	{errDupLength, "two Content-Length fields, even equal (RFC 9112 6.3 allows collapsing them; net/http does)",
		[]string{"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx"}},
	{errTEAndLength, "Transfer-Encoding with Content-Length (RFC 9112 6.1 allows dropping Content-Length; net/http does)",
		[]string{"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n"}},
	{errTE10, "Transfer-Encoding in HTTP/1.0 (RFC 9112 6.1: faulty framing); net/http ignores it",
		[]string{"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"}},
	{errHTTPVersion, "only HTTP/1.0 and HTTP/1.1 are served (505); ReadRequest parses any HTTP/x.y",
		[]string{"GET / HTTP/1.2\r\nHost: a\r\n\r\n", "PRI * HTTP/2.0\r\n\r\n"}},
	{errExpectation, "expectations other than 100-continue (RFC 9110 10.1.1: 417); net/http's server does the same, ReadRequest does not",
		[]string{"GET / HTTP/1.1\r\nHost: a\r\nExpect: nothing\r\n\r\n"}},
	{errLineTooLong, "Limits.RequestLine (414); ReadRequest has no limit",
		[]string{"GET /" + strings.Repeat("a", config.DefaultRequestLine) + " HTTP/1.1\r\nHost: a\r\n\r\n"}},
	{errHeadTooLarge, "Limits.HeaderBytes (431); ReadRequest has no limit",
		[]string{"GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("a", config.DefaultHeaderBytes) + "\r\n\r\n"}},
	{errTooManyFields, "Limits.MaxHeaders (431); ReadRequest has no limit",
		[]string{"GET / HTTP/1.1\r\nHost: a\r\n" + strings.Repeat("X: y\r\n", DefaultMaxHeaders) + "\r\n"}},
	{errBodyTooLarge, "a Content-Length over Limits.BodyBytes (413)",
		[]string{"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10485761\r\n\r\n"}},
}

func TestStricterThanNetHTTP(t *testing.T) {
	for _, s := range stricterThanNetHTTP {
		for _, ex := range s.examples {
			var r Request
			if _, err := Parse([]byte(ex), &r, nil); err != s.err {
				t.Errorf("%q: Parse: %v; want %v", ex, err, s.err)
			}
			if _, err := http.ReadRequest(bufio.NewReader(strings.NewReader(ex))); err != nil {
				t.Errorf("%q: net/http rejects it too (%v): not stricter", ex, err)
			}
		}
	}
}

func isStricter(err error) bool {
	for _, s := range stricterThanNetHTTP {
		if err == s.err {
			return true
		}
	}
	return false
}

// FuzzParse feeds the same bytes to Parse and to net/http's ReadRequest.
// Parse must never accept what ReadRequest rejects; when it rejects what
// ReadRequest accepts, its error must be listed in stricterThanNetHTTP;
// when both accept, they must agree on the method, target, version, Host,
// framing, keep-alive and every header field. The answer must not depend
// on how the bytes are split.
func FuzzParse(f *testing.F) {
	for _, c := range validRequests {
		f.Add([]byte(c.in + c.body))
	}
	for _, c := range rejectedRequests {
		if c.lim == nil {
			f.Add([]byte(c.in))
		}
	}
	for _, s := range stricterThanNetHTTP {
		for _, ex := range s.examples {
			if len(ex) <= 4096 {
				f.Add([]byte(ex))
			}
		}
	}
	for _, s := range []string{
		"GET /a/b/../c?x=1&y=%20 HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://a:/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://[::1]:8080/x HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://a?b/c HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET //x/y HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /%00 HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nPragma: no-cache\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: \xff\xfe\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTrailer: Content-Length\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n\r",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length:  42 \r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n",
		"GET / HTTP/1.0\r\nConnection: ,keep-alive,\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 8<<10 {
			return
		}
		var r Request
		n, err := Parse(data, &r, nil)

		// Split invariance: byte by byte for small inputs, at thirds
		// otherwise, with one Request as a connection would.
		var r2 Request
		cuts := []int{len(data) / 3, 2 * len(data) / 3}
		if len(data) <= 1024 {
			cuts = byteCuts(len(data))
		}
		n2, err2 := parseSplit(data, cuts, &r2, nil)
		if n2 != n || err2 != err {
			t.Fatalf("split: %d, %v; whole: %d, %v", n2, err2, n, err)
		}

		req, nerr := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
		switch {
		case err == ErrNeedMore:
			if nerr == nil {
				t.Fatalf("Parse needs more; net/http accepts %q", data)
			}
			return
		case err != nil:
			var ce *Error
			if !errors.As(err, &ce) || http.StatusText(ce.Status) == "" {
				t.Fatalf("error %v is not an *Error with a status", err)
			}
			if nerr == nil && !isStricter(err) {
				t.Fatalf("Parse rejects (%v) what net/http accepts, and stricterThanNetHTTP does not list it: %q", err, data)
			}
			return
		case nerr != nil:
			t.Fatalf("Parse accepts what net/http rejects (%v): %q", nerr, data)
		}
		if n != r.HeadLen || n <= 0 || n > len(data) || !reflect.DeepEqual(r.Headers, r2.Headers) {
			t.Fatalf("n = %d, HeadLen = %d, len = %d", n, r.HeadLen, len(data))
		}
		compareNetHTTP(t, data, &r, req)
	})
}

// compareNetHTTP checks that r, parsed from data, says what req, read by
// net/http from the same bytes, says.
func compareNetHTTP(t *testing.T, data []byte, r *Request, req *http.Request) {
	t.Helper()
	fail := func(what string, got, want any) {
		t.Helper()
		t.Fatalf("%s: gale %q, net/http %q; input %q", what, got, want, data)
	}
	if string(r.Method) != req.Method {
		fail("method", r.Method, req.Method)
	}
	if string(r.Target) != req.RequestURI {
		fail("target", r.Target, req.RequestURI)
	}
	if req.ProtoMajor != 1 || int(r.Version) != 10+req.ProtoMinor {
		fail("version", r.Version, req.Proto)
	}
	if string(r.Host) != req.Host {
		fail("host", r.Host, req.Host)
	}
	switch r.Form {
	case OriginForm, AbsoluteForm:
		p, err := url.PathUnescape(string(r.Path))
		want := req.URL.Path
		if r.Form == AbsoluteForm && want == "" {
			want = "/"
		}
		if err != nil || p != want {
			fail("path", p, want)
		}
		if string(r.Query) != req.URL.RawQuery || (r.Query == nil) != (req.URL.RawQuery == "" && !req.URL.ForceQuery) {
			fail("query", r.Query, req.URL.RawQuery)
		}
	case AsteriskForm:
		if req.URL.Path != "*" {
			fail("asterisk", "*", req.URL.Path)
		}
	}

	// net/http's header map, rebuilt from our fields the way ReadRequest
	// builds it: canonical keys, Host moved to req.Host, Transfer-Encoding
	// and (when chunked) Trailer moved to their own fields, and Pragma:
	// no-cache implying Cache-Control: no-cache.
	want := http.Header{}
	for _, h := range r.Headers {
		k := textproto.CanonicalMIMEHeaderKey(string(h.Name))
		want[k] = append(want[k], string(h.Value))
	}
	delete(want, "Host")
	delete(want, "Transfer-Encoding")
	if r.Chunked {
		delete(want, "Trailer")
	}
	if p := want["Pragma"]; len(p) > 0 && p[0] == "no-cache" && want["Cache-Control"] == nil {
		want["Cache-Control"] = []string{"no-cache"}
	}
	if len(want) == 0 && len(req.Header) == 0 {
		want = req.Header
	}
	if !reflect.DeepEqual(want, req.Header) {
		fail("header", want, req.Header)
	}

	if r.Chunked != (len(req.TransferEncoding) == 1 && req.TransferEncoding[0] == "chunked") {
		fail("chunked", r.Chunked, req.TransferEncoding)
	}
	length := r.ContentLength
	if length < 0 && !r.Chunked {
		length = 0 // net/http: no body
	}
	if length != req.ContentLength {
		fail("content length", length, req.ContentLength)
	}
	if r.KeepAlive == req.Close {
		fail("keep-alive", r.KeepAlive, !req.Close)
	}
}
