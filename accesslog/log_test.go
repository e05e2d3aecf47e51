package accesslog

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/valyala/bytebufferpool"

	"gale/codec"
	"gale/config"
)

// testNow is the time every line below is stamped with.
var testNow = time.Date(2026, 11, 30, 7, 24, 22, 0, time.UTC).UnixNano()

var testRemote = netip.MustParseAddr("192.0.2.7")

// openLog opens a log in format at a temporary path, closed when the
// test ends.
func openLog(t *testing.T, format string) *Log {
	t.Helper()
	a, err := Open(config.AccessLog{Path: filepath.Join(t.TempDir(), "access.log"), Format: format}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// parse parses raw, which must be one whole request head.
func parse(t testing.TB, raw string, r *codec.Request) {
	t.Helper()
	if _, err := codec.Parse([]byte(raw), r, nil); err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
}

// combinedStamp is testNow as the combined format renders it, in the
// local time zone.
func combinedStamp() string {
	return time.Unix(0, testNow).Format("02/Jan/2006:15:04:05 -0700")
}

// TestLineFormats checks every field of a line, in both formats, for
// requests of each version and for a request that could not be parsed.
func TestLineFormats(t *testing.T) {
	ts := combinedStamp()
	cases := []struct {
		name     string
		raw      string // "" = the zero record
		h2       bool   // mark the request as HTTP/2, as the HTTP/2 engine fills it
		combined string
		json     string
	}{
		{
			name:     "HTTP/1.1 with fields",
			raw:      "GET /a?b=1 HTTP/1.1\r\nHost: example.com\r\nReferer: http://r/\r\nUser-Agent: ua/1\r\n\r\n",
			combined: `192.0.2.7 - - [` + ts + `] "GET /a?b=1 HTTP/1.1" 200 1234 "http://r/" "ua/1"` + "\n",
			json:     `{"level":"info","ts":1796023462.000000000,"logger":"http.log.access","msg":"handled request","request":{"remote_ip":"192.0.2.7","client_ip":"192.0.2.7","proto":"HTTP/1.1","method":"GET","host":"example.com","uri":"/a?b=1","headers":{"Referer":["http://r/"],"User-Agent":["ua/1"]}},"bytes_read":0,"duration":0.000000000,"size":1234,"status":200}` + "\n",
		},
		{
			name:     "HTTP/1.0 without fields",
			raw:      "HEAD / HTTP/1.0\r\n\r\n",
			combined: `192.0.2.7 - - [` + ts + `] "HEAD / HTTP/1.0" 200 1234 "-" "-"` + "\n",
			json:     `{"level":"info","ts":1796023462.000000000,"logger":"http.log.access","msg":"handled request","request":{"remote_ip":"192.0.2.7","client_ip":"192.0.2.7","proto":"HTTP/1.0","method":"HEAD","host":"","uri":"/","headers":{}},"bytes_read":0,"duration":0.000000000,"size":1234,"status":200}` + "\n",
		},
		{
			name:     "HTTP/2",
			raw:      "POST /up HTTP/1.1\r\nHost: h\r\n\r\n",
			h2:       true,
			combined: `192.0.2.7 - - [` + ts + `] "POST /up HTTP/2.0" 200 1234 "-" "-"` + "\n",
			json:     `{"level":"info","ts":1796023462.000000000,"logger":"http.log.access","msg":"handled request","request":{"remote_ip":"192.0.2.7","client_ip":"192.0.2.7","proto":"HTTP/2.0","method":"POST","host":"h","uri":"/up","headers":{}},"bytes_read":0,"duration":0.000000000,"size":1234,"status":200}` + "\n",
		},
		{
			name:     "not parsed",
			combined: `192.0.2.7 - - [` + ts + `] "-" 200 1234 "-" "-"` + "\n",
			json:     `{"level":"info","ts":1796023462.000000000,"logger":"http.log.access","msg":"handled request","request":{"remote_ip":"192.0.2.7","client_ip":"192.0.2.7","proto":"","method":"","host":"","uri":"","headers":{}},"bytes_read":0,"duration":0.000000000,"size":1234,"status":200}` + "\n",
		},
	}
	combined, json := openLog(t, "combined"), openLog(t, "json")
	for _, tc := range cases {
		var rec Record
		if tc.raw != "" {
			var r codec.Request
			parse(t, tc.raw, &r)
			if tc.h2 {
				r.Version = codec.HTTP20
			}
			rec.FromRequest(&r, nil)
		}
		if got := string(combined.AppendLine(nil, testRemote, &rec, 200, 1234, testNow)); got != tc.combined {
			t.Errorf("%s, combined:\n got %q\nwant %q", tc.name, got, tc.combined)
		}
		if got := string(json.AppendLine(nil, testRemote, &rec, 200, 1234, testNow)); got != tc.json {
			t.Errorf("%s, json:\n got %q\nwant %q", tc.name, got, tc.json)
		}
	}
}

// TestLineEscaping checks that no byte a client sends can end a line,
// close a quoted field or pass unescaped: quotes, backslashes, control
// bytes (a newline among them), DEL and bytes above ASCII, in every field
// a client names and in both formats (the combined format has no host).
func TestLineEscaping(t *testing.T) {
	hostile := "a\"b\\c\x01d\x7fe\xe9f"
	combinedWant := `a\"b\\c\x01d\x7fe\xe9f`
	jsonWant := `a\"b\\c\u0001d\u007fe\u00e9f`
	rec := Record{
		method:    []byte("GET"),
		target:    []byte("/" + hostile),
		host:      []byte(hostile),
		referer:   []byte(hostile + "\n127.0.0.1 - - forged"),
		userAgent: []byte(hostile + "\r\n"),
		version:   codec.HTTP11,
	}
	rec.headers = []codec.Header{{Name: []byte("Referer"), Value: rec.referer}, {Name: []byte("User-Agent"), Value: rec.userAgent}}
	for _, format := range []string{"combined", "json"} {
		line := string(openLog(t, format).AppendLine(nil, testRemote, &rec, 400, 0, testNow))
		want, fields := combinedWant, 3 // target, referer, user agent
		if format == "json" {
			want, fields = jsonWant, 4 // host, target, and the two among the headers
		}
		if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
			t.Errorf("%s: not one line: %q", format, line)
		}
		for _, c := range []byte(strings.TrimSuffix(line, "\n")) {
			if c < 0x20 || c >= 0x7f {
				t.Errorf("%s: raw byte %#x in %q", format, c, line)
				break
			}
		}
		if n := strings.Count(line, want); n != fields {
			t.Errorf("%s: %d escaped copies of the hostile bytes in %q, want %d", format, n, line, fields)
		}
	}
}

// TestKeepOutlivesTheRequest checks that a kept record names its own
// request after the bytes it was parsed from hold another, whether the
// copy fits the buffer given or moves it, and that each kept field is cut
// to its length so that nothing appended to one reaches the next.
func TestKeepOutlivesTheRequest(t *testing.T) {
	a := openLog(t, "combined")
	raw := "GET /own HTTP/1.1\r\nHost: own.example\r\nReferer: http://own/\r\nUser-Agent: own-agent\r\n\r\n"
	other := "GET /xyz HTTP/1.1\r\nHost: xyz.example\r\nReferer: http://xyz/\r\nUser-Agent: xyz-agent\r\n\r\n"
	for _, size := range []int{0, 8, 256} {
		buf := []byte(raw) // stands for the loop's read buffer
		var r codec.Request
		if _, err := codec.Parse(buf, &r, nil); err != nil {
			t.Fatal(err)
		}
		var rec Record
		rec.FromRequest(&r, nil)
		want := string(a.AppendLine(nil, testRemote, &rec, 200, 1, testNow))
		own := rec.Keep(make([]byte, 0, size))
		copy(buf, other) // another connection's request in the same bytes
		if got := string(a.AppendLine(nil, testRemote, &rec, 200, 1, testNow)); got != want {
			t.Errorf("kept into %d bytes: %q, want %q", size, got, want)
		}
		for _, f := range [][]byte{rec.method, rec.target, rec.host, rec.referer, rec.userAgent} {
			if cap(f) != len(f) {
				t.Errorf("kept into %d bytes: field %q has capacity %d", size, f, cap(f))
			}
		}
		if !bytes.Contains(own, []byte("own-agent")) {
			t.Errorf("kept into %d bytes: Keep returned %q", size, own)
		}
		// Keeping again into the buffer it returned changes nothing.
		rec.Keep(own)
		if got := string(a.AppendLine(nil, testRemote, &rec, 200, 1, testNow)); got != want {
			t.Errorf("kept twice into %d bytes: %q, want %q", size, got, want)
		}
	}
}

// TestWriteAndRotate checks that the writer writes what was submitted in
// order, rotates before a batch that would take the file past max_bytes
// (counting what the file held when it was opened), keeps keep rotated
// files with path.1 the newest, and writes everything queued before Close
// returns.
func TestWriteAndRotate(t *testing.T) {
	batch := func(i int) string { return strings.Repeat(string(rune('a'+i)), 39) + "\n" } // 40 bytes
	for _, keep := range []int{0, 2} {
		path := filepath.Join(t.TempDir(), "access.log")
		// 60 bytes already there: the first batch still fits, the
		// second does not.
		if err := os.WriteFile(path, []byte(strings.Repeat("-", 59)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		a, err := Open(config.AccessLog{Path: path, Format: "combined", MaxBytes: 100, Keep: keep}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var lines []byte
		for i := 0; i < 7; i++ {
			lines = append(lines, batch(i)...)
			if lines = a.Submit(lines); len(lines) != 0 {
				t.Fatalf("Submit left %d bytes in the buffer", len(lines))
			}
		}
		a.Close()
		// Files in the order written: "-"+b0, b1 b2, b3 b4, b5 b6.
		want := map[string]string{path: batch(5) + batch(6)}
		if keep == 2 {
			want[path+".1"] = batch(3) + batch(4)
			want[path+".2"] = batch(1) + batch(2)
		}
		entries, err := os.ReadDir(filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != len(want) {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("keep %d: files %v, want %d", keep, names, len(want))
		}
		for name, w := range want {
			got, err := os.ReadFile(name)
			if err != nil || string(got) != w {
				t.Errorf("keep %d: %s holds %q (%v), want %q", keep, filepath.Base(name), got, err, w)
			}
		}
	}
}

// TestSubmitNeverBlocks checks that Submit drops and counts lines when
// the writer's queue is full, rather than waiting for it.
func TestSubmitNeverBlocks(t *testing.T) {
	a := &Log{queue: make(chan *bytebufferpool.ByteBuffer, 1)} // no writer drains it
	lines := []byte("line\n")
	lines = a.Submit(lines)
	lines = append(lines, "next\n"...)
	if lines = a.Submit(lines); len(lines) != 0 {
		t.Fatalf("Submit left %q", lines)
	}
	if n := a.dropped.Load(); n != 1 {
		t.Fatalf("%d lines dropped, want 1", n)
	}
	if b := <-a.queue; string(b.B) != "line\n" {
		t.Fatalf("queued %q, want the first batch", b.B)
	}
}

// TestCloseTwice checks that a second Close returns at once.
func TestCloseTwice(t *testing.T) {
	a := openLog(t, "json")
	a.Close()
	a.Close()
}

// The JSON layout is Caddy's: it decodes into Caddy's field names, with
// every request field but Host under its canonical name (repeated ones
// together), the credentials redacted, and the timing given.
func TestJSONLayout(t *testing.T) {
	var r codec.Request
	parse(t, "GET /a?x=1 HTTP/1.1\r\nHost: example.com\r\nuser-agent: ua/1\r\nAuthorization: Basic c2VjcmV0\r\n"+
		"Cookie: session=secret1\r\nAccept: */*\r\ncookie: other=secret2\r\nproxy-authorization: Bearer secret3\r\nX-ID: 7\r\n\r\n", &r)
	var rec Record
	rec.FromRequest(&r, nil)
	rec.SetTiming(1_500_000, 42)
	line := openLog(t, "json").AppendLine(nil, testRemote, &rec, 404, 99, testNow)
	if bytes.Contains(line, []byte("secret")) {
		t.Errorf("credentials logged: %s", line)
	}
	var got struct {
		Level, Logger, Msg string
		TS                 float64
		Request            struct {
			RemoteIP string `json:"remote_ip"`
			ClientIP string `json:"client_ip"`
			Proto    string
			Method   string
			Host     string
			URI      string
			Headers  map[string][]string
		}
		BytesRead int64 `json:"bytes_read"`
		Duration  float64
		Size      int64
		Status    int
	}
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	want := map[string][]string{
		"User-Agent":          {"ua/1"},
		"Authorization":       {"REDACTED"},
		"Cookie":              {"REDACTED", "REDACTED"},
		"Accept":              {"*/*"},
		"Proxy-Authorization": {"REDACTED"},
		"X-Id":                {"7"},
	}
	if !reflect.DeepEqual(got.Request.Headers, want) {
		t.Errorf("headers %v, want %v", got.Request.Headers, want)
	}
	if got.Level != "info" || got.Logger != "http.log.access" || got.TS != float64(testNow)/1e9 ||
		got.Request.RemoteIP != "192.0.2.7" || got.Request.ClientIP != "192.0.2.7" || got.Request.Proto != "HTTP/1.1" ||
		got.Request.Method != "GET" || got.Request.Host != "example.com" || got.Request.URI != "/a?x=1" ||
		got.BytesRead != 42 || got.Duration != 0.0015 || got.Size != 99 || got.Status != 404 {
		t.Errorf("decoded %+v from %s", got, line)
	}
	// A kept record logs the same line.
	rec.Keep(nil)
	if again := openLog(t, "json").AppendLine(nil, testRemote, &rec, 404, 99, testNow); !bytes.Equal(again, line) {
		t.Errorf("kept record:\n%s\nwant\n%s", again, line)
	}
}
