package handlers

import (
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gale/cache"
	"gale/config"
)

// siteRouter serves files (name -> content, all with mtime) from a temp
// root on route "/" with sc, through a cache of its own, and returns
// the router, the cache and the root.
func siteRouter(t testing.TB, sc config.Static, co cache.Options, mtime time.Time, files map[string]string) (*Router, *cache.Cache, string) {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	sc.Root = root
	if sc.Index == nil {
		sc.Index = []string{"index.html"}
	}
	if sc.Compress.Encodings == nil {
		sc.Compress = config.Compress{Encodings: []string{"zstd", "br", "gzip"}, MinBytes: 1024}
	}
	if co.Workers == 0 {
		co.Workers = 1
	}
	c := cache.New(co)
	t.Cleanup(c.Close)
	rt, err := Build(&config.Config{Routes: []config.Route{{Path: "/", Static: &sc}}}, WithCache(c))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, c, root
}

var condTime = time.Date(2024, 2, 29, 12, 4, 5, 123456789, time.UTC)

func etagOf(mtime time.Time, size int) string {
	return `"` + strconv.FormatInt(mtime.UnixNano(), 16) + "-" + strconv.FormatInt(int64(size), 16) + `"`
}

// Preconditions follow RFC 9110 13.2.2 as net/http's checkPreconditions
// does.
func TestStaticPreconditions(t *testing.T) {
	rt, _, _ := siteRouter(t, config.Static{CacheControl: "max-age=60"}, cache.Options{}, condTime, map[string]string{"a.txt": "alpha"})
	E := etagOf(condTime, 5)
	M := "Thu, 29 Feb 2024 12:04:05 GMT"
	tests := []struct {
		name    string
		method  string
		headers []string
		status  int
	}{
		{"none", "GET", nil, 200},
		{"INM match", "GET", []string{"If-None-Match", E}, 304},
		{"INM weak match", "GET", []string{"If-None-Match", "W/" + E}, 304},
		{"INM list", "GET", []string{"If-None-Match", `"x", ` + E}, 304},
		{"INM star", "GET", []string{"If-None-Match", "*"}, 304},
		{"INM other", "GET", []string{"If-None-Match", `"x"`}, 200},
		{"INM malformed", "GET", []string{"If-None-Match", `x`}, 200},
		{"INM other ignores IMS", "GET", []string{"If-None-Match", `"x"`, "If-Modified-Since", M}, 200},
		{"HEAD INM match", "HEAD", []string{"If-None-Match", E}, 304},
		{"IMS equal", "GET", []string{"If-Modified-Since", M}, 304},
		{"IMS later", "GET", []string{"If-Modified-Since", "Thu, 29 Feb 2024 12:04:06 GMT"}, 304},
		{"IMS earlier", "GET", []string{"If-Modified-Since", "Thu, 29 Feb 2024 12:04:04 GMT"}, 200},
		{"IMS RFC 850", "GET", []string{"If-Modified-Since", "Thursday, 29-Feb-24 12:04:05 GMT"}, 304},
		{"IMS asctime", "GET", []string{"If-Modified-Since", "Thu Feb 29 12:04:05 2024"}, 304},
		{"IMS garbage", "GET", []string{"If-Modified-Since", "yesterday"}, 200},
		{"IMS bad day", "GET", []string{"If-Modified-Since", "Thu, 30 Feb 2024 12:04:05 GMT"}, 200},
		{"IM match", "GET", []string{"If-Match", E}, 200},
		{"IM weak is no match", "GET", []string{"If-Match", "W/" + E}, 412},
		{"IM other", "GET", []string{"If-Match", `"x"`}, 412},
		{"IM star", "GET", []string{"If-Match", "*"}, 200},
		{"IM list", "GET", []string{"If-Match", `"x",` + E}, 200},
		{"IUS equal", "GET", []string{"If-Unmodified-Since", M}, 200},
		{"IUS earlier", "GET", []string{"If-Unmodified-Since", "Thu, 29 Feb 2024 12:04:04 GMT"}, 412},
		{"IUS garbage ignored", "GET", []string{"If-Unmodified-Since", "never"}, 200},
		{"IM overrides IUS", "GET", []string{"If-Match", E, "If-Unmodified-Since", "Thu, 29 Feb 2024 12:04:04 GMT"}, 200},
		{"IM first", "GET", []string{"If-Match", `"x"`, "If-None-Match", E}, 412},
		{"IM then INM", "GET", []string{"If-Match", E, "If-None-Match", E}, 304},
		{"IUS then IMS", "GET", []string{"If-Unmodified-Since", M, "If-Modified-Since", M}, 304},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := serve(t, rt, request(tt.method, "", "/a.txt", tt.headers...))
			resp, body := wire(t, c)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d; want %d", resp.StatusCode, tt.status)
			}
			switch tt.status {
			case 304:
				if resp.Header.Get("ETag") != E || resp.Header.Get("Vary") != "Accept-Encoding" ||
					resp.Header.Get("Cache-Control") != "max-age=60" || resp.Header.Get("Content-Type") != "" ||
					resp.Header.Get("Last-Modified") != "" || len(body) != 0 {
					t.Errorf("304 fields %v body %q", resp.Header, body)
				}
			case 200:
				if tt.method == "GET" && string(body) != "alpha" {
					t.Errorf("body %q", body)
				}
			case 412:
				if resp.Header.Get("Vary") != "Accept-Encoding" || resp.Header.Get("ETag") != "" {
					t.Errorf("412 fields %v", resp.Header)
				}
			}
		})
	}
}

const rangeBody = "0123456789abcdefghij"

func TestStaticRanges(t *testing.T) {
	files := map[string]string{"r.txt": rangeBody}
	cached, _, _ := siteRouter(t, config.Static{}, cache.Options{}, condTime, files)
	// With max_file_bytes below the file's size, ranges come from the
	// file on disk (Response.File and Parts with file regions).
	large, _, _ := siteRouter(t, config.Static{}, cache.Options{MaxFileBytes: 8}, condTime, files)
	E := etagOf(condTime, len(rangeBody))
	seventeen := "bytes=" + strings.Repeat("0-0,", 16) + "1-1"
	tests := []struct {
		name    string
		headers []string
		status  int
		body    string // 206/200: the body
		cr      string // Content-Range
	}{
		{"first", []string{"Range", "bytes=0-4"}, 206, "01234", "bytes 0-4/20"},
		{"open", []string{"Range", "bytes=5-"}, 206, "56789abcdefghij", "bytes 5-19/20"},
		{"suffix", []string{"Range", "bytes=-3"}, 206, "hij", "bytes 17-19/20"},
		{"suffix longer", []string{"Range", "bytes=-30"}, 206, rangeBody, "bytes 0-19/20"},
		{"end clamped", []string{"Range", "bytes=15-100"}, 206, "fghij", "bytes 15-19/20"},
		{"last byte", []string{"Range", "bytes=19-19"}, 206, "j", "bytes 19-19/20"},
		{"unit case", []string{"Range", "BYTES=0-0"}, 206, "0", "bytes 0-0/20"},
		{"spaces", []string{"Range", "bytes= 1-1 , "}, 206, "1", "bytes 1-1/20"},
		{"one satisfiable", []string{"Range", "bytes=30-40,0-1"}, 206, "01", "bytes 0-1/20"},
		{"start past end", []string{"Range", "bytes=20-"}, 416, "", "bytes */20"},
		{"suffix zero", []string{"Range", "bytes=-0"}, 416, "", "bytes */20"},
		{"reversed", []string{"Range", "bytes=5-4"}, 416, "", "bytes */20"},
		{"garbage", []string{"Range", "bytes=x-y"}, 416, "", "bytes */20"},
		{"no dash", []string{"Range", "bytes=5"}, 416, "", "bytes */20"},
		{"other unit", []string{"Range", "items=0-4"}, 200, rangeBody, ""},
		{"empty set", []string{"Range", "bytes="}, 200, rangeBody, ""},
		{"more than the file", []string{"Range", "bytes=0-14,5-19"}, 200, rangeBody, ""},
		{"too many", []string{"Range", seventeen}, 200, rangeBody, ""},
		{"If-Range etag", []string{"Range", "bytes=0-1", "If-Range", E}, 206, "01", "bytes 0-1/20"},
		{"If-Range other etag", []string{"Range", "bytes=0-1", "If-Range", `"x"`}, 200, rangeBody, ""},
		{"If-Range weak etag", []string{"Range", "bytes=0-1", "If-Range", "W/" + E}, 200, rangeBody, ""},
		{"If-Range date", []string{"Range", "bytes=0-1", "If-Range", "Thu, 29 Feb 2024 12:04:05 GMT"}, 206, "01", "bytes 0-1/20"},
		{"If-Range other date", []string{"Range", "bytes=0-1", "If-Range", "Thu, 29 Feb 2024 12:04:06 GMT"}, 200, rangeBody, ""},
		{"If-Range garbage", []string{"Range", "bytes=0-1", "If-Range", "soon"}, 200, rangeBody, ""},
		{"If-None-Match wins", []string{"Range", "bytes=0-1", "If-None-Match", E}, 304, "", ""},
	}
	for _, rt := range []struct {
		name string
		r    *Router
	}{{"cached", cached}, {"large", large}} {
		for _, tt := range tests {
			t.Run(rt.name+"/"+tt.name, func(t *testing.T) {
				c := serve(t, rt.r, request("GET", "", "/r.txt", tt.headers...))
				resp, body := wire(t, c)
				if resp.StatusCode != tt.status {
					t.Fatalf("status %d; want %d", resp.StatusCode, tt.status)
				}
				if got := resp.Header.Get("Content-Range"); got != tt.cr {
					t.Errorf("Content-Range %q; want %q", got, tt.cr)
				}
				if tt.status != 416 && tt.status != 304 && string(body) != tt.body {
					t.Errorf("body %q; want %q", body, tt.body)
				}
				if tt.status == 206 && (resp.Header.Get("ETag") != E || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
					resp.ContentLength != int64(len(tt.body))) {
					t.Errorf("206 fields %v", resp.Header)
				}
				if rt.name == "large" && tt.status == 206 && c.Resp.File == nil {
					t.Error("a large file's range is not read from the file")
				}
			})
		}
		t.Run(rt.name+"/multipart", func(t *testing.T) {
			c := serve(t, rt.r, request("GET", "", "/r.txt", "Range", "bytes=0-0,-1, 4-6"))
			resp, body := wire(t, c)
			mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if resp.StatusCode != 206 || err != nil || mt != "multipart/byteranges" || resp.Header.Get("Content-Range") != "" {
				t.Fatalf("status %d Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if resp.ContentLength != int64(len(body)) {
				t.Errorf("Content-Length %d, body %d", resp.ContentLength, len(body))
			}
			mr := multipart.NewReader(strings.NewReader(string(body)), params["boundary"])
			want := []struct{ body, cr string }{{"0", "bytes 0-0/20"}, {"j", "bytes 19-19/20"}, {"456", "bytes 4-6/20"}}
			for i, w := range want {
				p, err := mr.NextPart()
				if err != nil {
					t.Fatalf("part %d: %v", i, err)
				}
				b, _ := io.ReadAll(p)
				if string(b) != w.body || p.Header.Get("Content-Range") != w.cr || p.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
					t.Errorf("part %d: %q %v", i, b, p.Header)
				}
			}
			if _, err := mr.NextPart(); err != io.EOF {
				t.Errorf("after the parts: %v", err)
			}
			if rt.name == "large" && (c.Resp.Parts == nil || c.Resp.File == nil) {
				t.Error("a large file's parts are not read from the file")
			}
		})
		t.Run(rt.name+"/HEAD", func(t *testing.T) {
			c := serve(t, rt.r, request("HEAD", "", "/r.txt", "Range", "bytes=0-4"))
			resp, body := wire(t, c)
			if resp.StatusCode != 206 || len(body) != 0 || resp.Header.Get("Content-Range") != "bytes 0-4/20" {
				t.Errorf("HEAD: %d %q %v", resp.StatusCode, body, resp.Header)
			}
		})
	}
	// An empty file has no satisfiable range.
	empty, _, _ := siteRouter(t, config.Static{}, cache.Options{}, condTime, map[string]string{"e.txt": ""})
	c := serve(t, empty, request("GET", "", "/e.txt", "Range", "bytes=0-"))
	if resp, _ := wire(t, c); resp.StatusCode != 416 || resp.Header.Get("Content-Range") != "bytes */0" {
		t.Errorf("empty file: %d %q", resp.StatusCode, resp.Header.Get("Content-Range"))
	}
}

func TestParseHTTPDate(t *testing.T) {
	want := time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC).Unix()
	for _, s := range []string{"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", " Sun, 06 Nov 1994 08:49:37 GMT "} {
		if got, ok := parseHTTPDate([]byte(s)); !ok || got != want {
			t.Errorf("%q: %d %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "Sun, 06 Nov 1994 08:49:37 UTC", "Xyz, 06 Nov 1994 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT",
		"Sun, 06 Nov 1994 24:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT", "1994-11-06"} {
		if _, ok := parseHTTPDate([]byte(s)); ok {
			t.Errorf("%q parsed", s)
		}
	}
	// Every day of a leap year and around the epoch agrees with package time.
	for d := time.Date(1969, 12, 1, 0, 0, 0, 0, time.UTC); d.Year() < 2025; d = d.Add(97 * time.Hour) {
		s := d.Format(http.TimeFormat)
		if got, ok := parseHTTPDate([]byte(s)); !ok || got != d.Unix() {
			t.Fatalf("%q: %d %v; want %d", s, got, ok, d.Unix())
		}
	}
}
