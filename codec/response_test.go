package codec

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var dateRE = regexp.MustCompile(`^Date: (Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-3][0-9] (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-2][0-9]:[0-5][0-9]:[0-6][0-9] GMT\r\n$`)

func TestAppendDate(t *testing.T) {
	before := time.Now().Truncate(time.Second)
	line := string(AppendDate(nil))
	after := time.Now()
	if !dateRE.MatchString(line) {
		t.Fatalf("AppendDate = %q", line)
	}
	d, err := http.ParseTime(strings.TrimSuffix(strings.TrimPrefix(line, "Date: "), "\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	// Rendered once a second: it may lag the clock by up to a second.
	if d.Before(before.Add(-time.Second)) || d.After(after) {
		t.Errorf("Date %v not within [%v, %v]", d, before.Add(-time.Second), after)
	}
	if got := string(AppendDate([]byte("x"))); got != "x"+line && !dateRE.MatchString(got[1:]) {
		t.Errorf("AppendDate appends: %q", got)
	}
}

// TestAppendDateConcurrent reads the date from several goroutines while it
// is refreshed (run with -race).
func TestAppendDateConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 64)
			for i := 0; i < 1000; i++ {
				if line := AppendDate(buf[:0]); !dateRE.Match(line) {
					t.Errorf("AppendDate = %q", line)
					return
				}
			}
		}()
	}
	refreshDate()
	wg.Wait()
}

func TestAppendHTTPDate(t *testing.T) {
	tm := time.Date(1994, 11, 6, 8, 49, 37, 0, time.FixedZone("X", 3600))
	if got := string(AppendHTTPDate(nil, tm)); got != "Sun, 06 Nov 1994 07:49:37 GMT" {
		t.Errorf("AppendHTTPDate = %q", got)
	}
}

func TestStatusText(t *testing.T) {
	for code := -1; code < 700; code++ {
		if got, want := StatusText(code), http.StatusText(code); got != want {
			// net/http names a few differently; we follow RFC 9110.
			if code == 413 || code == 414 || code == 416 || code == 422 {
				continue
			}
			t.Errorf("StatusText(%d) = %q; net/http says %q", code, got, want)
		}
	}
	if StatusText(413) != "Content Too Large" || StatusText(422) != "Unprocessable Content" {
		t.Errorf("413: %q, 422: %q", StatusText(413), StatusText(422))
	}
}

func TestAppendStatusLine(t *testing.T) {
	for _, c := range []struct {
		status int
		want   string
	}{
		{200, "HTTP/1.1 200 OK\r\n"},
		{404, "HTTP/1.1 404 Not Found\r\n"},
		{431, "HTTP/1.1 431 Request Header Fields Too Large\r\n"},
		{599, "HTTP/1.1 599 \r\n"},
		{299, "HTTP/1.1 299 \r\n"},
		{100, "HTTP/1.1 100 Continue\r\n"},
		{99, "HTTP/1.1 500 Internal Server Error\r\n"},
		{600, "HTTP/1.1 500 Internal Server Error\r\n"},
		{-1, "HTTP/1.1 500 Internal Server Error\r\n"},
	} {
		if got := string(AppendStatusLine([]byte("x"), c.status)); got != "x"+c.want {
			t.Errorf("AppendStatusLine(%d) = %q; want %q", c.status, got, c.want)
		}
	}
	// Entries are capacity-limited: appending to one copies.
	l := statusLines[200]
	_ = append(l, "junk"...)
	if string(statusLines[201]) != "HTTP/1.1 201 Created\r\n" {
		t.Errorf("appending to an entry clobbered its neighbour: %q", statusLines[201])
	}
}

func TestAppendResponseHead(t *testing.T) {
	h := &ResponseHead{
		Status:        200,
		Version:       HTTP11,
		Headers:       []Header{{[]byte("Content-Type"), []byte("text/html")}, {[]byte("ETag"), []byte(`"abc"`)}},
		ContentLength: 5,
		Server:        []byte("gale"),
	}
	head := string(AppendResponseHead(nil, h))
	want := "HTTP/1.1 200 OK\r\nDATE\r\nServer: gale\r\nContent-Type: text/html\r\nETag: \"abc\"\r\nContent-Length: 5\r\n\r\n"
	if got := regexp.MustCompile(`Date: [^\r]*\r\n`).ReplaceAllString(head, "DATE\r\n"); got != want {
		t.Errorf("head:\n%q\nwant\n%q", head, want)
	}
	// net/http reads it back.
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(head+"hello")), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "hello" || resp.Header.Get("Etag") != `"abc"` || resp.Header.Get("Date") == "" || resp.Close {
		t.Errorf("read back: %d %q %v close=%v", resp.StatusCode, body, resp.Header, resp.Close)
	}

	for _, c := range []struct {
		h    ResponseHead
		has  []string
		hasn []string
	}{
		{ResponseHead{Status: 204, ContentLength: 0}, nil, []string{"Content-Length", "Server", "Connection"}},
		{ResponseHead{Status: 101, ContentLength: 0}, nil, []string{"Content-Length"}},
		{ResponseHead{Status: 304, ContentLength: 10}, []string{"Content-Length: 10\r\n"}, nil},
		{ResponseHead{Status: 200, ContentLength: -1}, nil, []string{"Content-Length"}},
		{ResponseHead{Status: 200, ContentLength: 0}, []string{"Content-Length: 0\r\n"}, nil},
		{ResponseHead{Status: 0, ContentLength: 3}, []string{"HTTP/1.1 500 Internal Server Error\r\n", "Content-Length: 3\r\n"}, nil},
		{ResponseHead{Status: 200, ContentLength: 1 << 40, Close: true}, []string{"Content-Length: 1099511627776\r\n", "Connection: close\r\n"}, nil},
		{ResponseHead{Status: 200, Version: HTTP10, KeepAlive10: true}, []string{"Connection: keep-alive\r\n"}, []string{"close"}},
		{ResponseHead{Status: 200, Version: HTTP10, KeepAlive10: true, Close: true}, []string{"Connection: close\r\n"}, []string{"keep-alive"}},
	} {
		got := string(AppendResponseHead(nil, &c.h))
		if !strings.HasSuffix(got, "\r\n\r\n") || strings.Count(got, "\r\n\r\n") != 1 {
			t.Errorf("%+v: %q does not end the head once", c.h, got)
		}
		for _, s := range c.has {
			if !strings.Contains(got, s) {
				t.Errorf("%+v: %q lacks %q", c.h, got, s)
			}
		}
		for _, s := range c.hasn {
			if strings.Contains(got, s) {
				t.Errorf("%+v: %q has %q", c.h, got, s)
			}
		}
	}
}

func TestErrorBody(t *testing.T) {
	for _, c := range []struct {
		status     int
		text, json string
	}{
		{404, "404 Not Found\n", `{"status":404,"error":"Not Found"}` + "\n"},
		{400, "400 Bad Request\n", `{"status":400,"error":"Bad Request"}` + "\n"},
		{418, "418 I'm a teapot\n", `{"status":418,"error":"I'm a teapot"}` + "\n"},
		{599, "599 Server Error\n", `{"status":599,"error":"Server Error"}` + "\n"},
		{460, "460 Client Error\n", `{"status":460,"error":"Client Error"}` + "\n"},
		{0, "500 Internal Server Error\n", `{"status":500,"error":"Internal Server Error"}` + "\n"},
		{1000, "500 Internal Server Error\n", `{"status":500,"error":"Internal Server Error"}` + "\n"},
	} {
		if got := string(ErrorBody(c.status, false)); got != c.text {
			t.Errorf("ErrorBody(%d, false) = %q; want %q", c.status, got, c.text)
		}
		if got := string(ErrorBody(c.status, true)); got != c.json {
			t.Errorf("ErrorBody(%d, true) = %q; want %q", c.status, got, c.json)
		}
	}
	for code := 100; code < 600; code++ {
		b := ErrorBody(code, true)
		if cap(b) != len(b) || cap(ErrorBody(code, false)) != len(ErrorBody(code, false)) {
			t.Errorf("%d: body capacity reaches past the body", code)
		}
	}
	if string(ErrorContentType(false)) != "text/plain; charset=utf-8" || string(ErrorContentType(true)) != "application/json" {
		t.Errorf("ErrorContentType: %q %q", ErrorContentType(false), ErrorContentType(true))
	}
}

func TestAppendErrorResponse(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		for _, closeConn := range []bool{false, true} {
			out := AppendErrorResponse(nil, 431, asJSON, closeConn, []byte("gale"))
			resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 431 || !bytes.Equal(body, ErrorBody(431, asJSON)) || resp.Close != closeConn ||
				resp.Header.Get("Content-Type") != string(ErrorContentType(asJSON)) ||
				resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Server") != "gale" {
				t.Errorf("json=%v close=%v: %d %q %v close=%v", asJSON, closeConn, resp.StatusCode, body, resp.Header, resp.Close)
			}
		}
	}
	out := string(AppendErrorResponse(nil, 304, false, false, nil))
	if strings.Contains(out, "Content-") || !strings.HasSuffix(out, "\r\n\r\n") || strings.Contains(out, "Server") {
		t.Errorf("304: %q", out)
	}
}

func TestAcceptsJSONOnly(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                                         false,
		"application/json":                         true,
		"Application/JSON; charset=utf-8":          true,
		"application/json, text/html":              false,
		"text/html,application/json;q=0.9":         false,
		"application/json, text/html;q=0":          true,
		"application/json, text/*;q=0.000":         true,
		"application/json, text/*;q=0.001":         false,
		"application/json, */*;q=0.1":              false,
		"application/json, */*; Q = 0":             true,
		"*/*":                                      false,
		"application/json;q=0":                     false,
		"application/json;q=0., text/plain;q=0":    false,
		"application/xml, application/json":        true,
		"text/plain":                               false,
		"application/*":                            false,
		" , ,application/json ,":                   true,
		"image/webp, application/json;level=1;q=1": true,
	} {
		if got := AcceptsJSONOnly([]byte(accept)); got != want {
			t.Errorf("AcceptsJSONOnly(%q) = %v; want %v", accept, got, want)
		}
	}
}
