package proxy_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// lineRecorder is an upstream that records the request line of every
// request it receives.
type lineRecorder struct {
	*upstream
	mu    sync.Mutex
	lines []string
}

func newLineRecorder(t *testing.T) *lineRecorder {
	lr := &lineRecorder{}
	lr.upstream = newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		lr.mu.Lock()
		lr.lines = append(lr.lines, r.Method+" "+r.RequestURI+" "+r.Proto)
		lr.mu.Unlock()
		w.Write([]byte("upstream"))
	})
	return lr
}

// seen returns the request lines received so far.
func (lr *lineRecorder) seen() []string {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return append([]string(nil), lr.lines...)
}

// normalPath reports why a path an upstream received could be read as
// something other than what gale routed, or "" when it cannot: a dot or
// empty segment, also once "%2F" is decoded or path parameters are
// dropped; a backslash or NUL, raw or encoded; an escape of an unreserved
// character; a byte outside the path grammar.
func normalPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		return "not absolute"
	}
	up := strings.ToUpper(p)
	for _, bad := range []string{"\\", "%5C", "%00", "%2E", "%7E", "%2D", "%5F", "//"} {
		if strings.Contains(up, bad) {
			return "holds " + bad
		}
	}
	d, err := url.PathUnescape(p)
	if err != nil {
		return err.Error()
	}
	segs := strings.Split(d[1:], "/")
	for i, seg := range segs {
		stem, _, _ := strings.Cut(seg, ";")
		if stem == "." || stem == ".." || seg == "" && i < len(segs)-1 {
			return fmt.Sprintf("segment %q", seg)
		}
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>^`{|}#", c) >= 0 {
			return fmt.Sprintf("raw byte %q", c)
		}
	}
	return ""
}

// TestProxyForwardsNormalPath sends spellings of paths that climb out of
// a proxy route's prefix, or that a normalising upstream reads
// differently, and checks that the upstream, which records the request
// line it received, only ever sees the normal path inside the prefix;
// otherwise gale answers from the "/" route or with 400.
func TestProxyForwardsNormalPath(t *testing.T) {
	t.Parallel()
	up := newLineRecorder(t)
	g := startGale(t, fmt.Sprintf(`routes:
  - path: /app/
    proxy: {to: [%q]}
  - path: /strip/
    proxy: {to: [%q], strip_prefix: true}
  - path: /v1
    proxy: {to: [%q], rewrite: /v2}
  - path: /dec/
    encoded_slashes: decode
    proxy: {to: [%q]}
  - path: /rej/
    encoded_slashes: reject
    proxy: {to: [%q]}
  - path: /
    respond: {status: 200, body: "root"}
`, up.hostport(), up.hostport(), up.hostport(), up.hostport(), up.hostport()))
	const root, refused = "ROOT", "400"
	tests := []struct {
		target string
		want   string // the request target the upstream must see, or root, or refused
	}{
		{"/app/x", "/app/x"},
		{"/app//x", "/app/x"},
		{"//app/x", "/app/x"},
		{"/app/./x", "/app/x"},
		{"/app/a/../x", "/app/x"},
		{"/app/a/%2e%2e/x", "/app/x"},
		{"/app/%61%2fb", "/app/a%2fb"},
		{"/app/a%2fb", "/app/a%2fb"},
		{"/admin%2Fsecret", root},
		{"/app%2Fx", "/app%2Fx"},
		{"/app/group%2Fsub%2Fproject/x", "/app/group%2Fsub%2Fproject/x"},
		{"/app/a%2F%2Fb", refused},
		{"/app/%2Fb", refused},
		{"/app/a%2Fb/../x", refused},
		{"/app/%252F", "/app/%252F"},
		{"/app/caf\xc3\xa9", "/app/caf%C3%A9"},
		{"/app/./x?a=../b", "/app/x?a=../b"},
		{"/app/x;jsessionid=1", "/app/x;jsessionid=1"},
		{"/app;x/secret", "/app;x/secret"},
		{"/app%3Bx/secret", "/app%3Bx/secret"},
		{"/app/;jsessionid=1", "/app/;jsessionid=1"},
		{"/;x/app/y", "/;x/app/y"},
		{"/app/../admin", root},
		{"/app/%2e%2e/admin", root},
		{"/app/.%2E/admin", root},
		{"/app/..;/admin", refused},
		{"/app/..;x=y/admin", refused},
		{"/app/.;/admin", refused},
		{"/app/..%3B/admin", refused},
		{"/app/..%2Fadmin", refused},
		{"/app/%2e%2e%2fadmin", refused},
		{"/app/..\\admin", refused},
		{"/app/..%5Cadmin", refused},
		{"/app/%c0%ae%c0%ae/admin", refused},
		{"/app/%e0%80%ae%e0%80%ae/admin", refused},
		{"/app/../../admin", refused},
		{"/strip/x", "/x"},
		{"/strip/", "/"},
		{"/strip/%2e", "/"},
		{"/strip//x", "/x"},
		{"/strip/x/%2E%2E/y", "/y"},
		{"/strip/../admin", root},
		{"/strip/%2e%2e/admin", root},
		{"/strip/a/../../admin", root},
		{"/strip/..;/admin", refused},
		{"/strip/.;/admin", refused},
		{"/strip/..%2F/admin", refused},
		{"/strip/..\\admin", refused},
		{"/strip%2Fx", "/x"},
		{"/strip/a%2Fb;c", refused},
		{"/strip/a%2fb/c;d", "/a%2fb/c;d"},
		{"/strip;v=1/x", "/x"},
		{"/strip/;j=1", "/;j=1"},
		{"/dec/a%2Fb/c;d=e", "/dec/a/b/c;d=e"},
		{"/dec/a%2Fb;c=d/e", refused},
		{"/dec%2fa%2Fb", "/dec/a/b"},
		{"/rej/a%2Fb", refused},
		{"/rej/a;b", "/rej/a;b"},
		{"/v1/x/%2e%2e/y", "/v2/y"},
		{"/v1/./y", "/v2/y"},
		{"/v1;x/y", "/v2/y"},
		{"/v1%2Fy", "/v2/y"},
		{"/v1;x", "/v2"},
		{"/v1/../admin", root},
		{"/v1/..;/admin", refused},
		{"http://example.com//app/./x", "/app/x"},
	}
	for _, tt := range tests {
		before := len(up.seen())
		rc := g.dial()
		rc.send("GET " + tt.target + " HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
		resp, body := rc.response("GET")
		seen := up.seen()[before:]
		switch tt.want {
		case root:
			if resp.StatusCode != 200 || body != "root" || len(seen) != 0 {
				t.Errorf("GET %s: %d %q, upstream saw %q; want the root route", tt.target, resp.StatusCode, body, seen)
			}
		case refused:
			if resp.StatusCode != 400 || len(seen) != 0 {
				t.Errorf("GET %s: %d %q, upstream saw %q; want 400", tt.target, resp.StatusCode, body, seen)
			}
		default:
			want := "GET " + tt.want + " HTTP/1.1"
			if resp.StatusCode != 200 || body != "upstream" || len(seen) != 1 || seen[0] != want {
				t.Errorf("GET %s: %d %q, upstream saw %q; want %q", tt.target, resp.StatusCode, body, seen, want)
			}
		}
	}
	for _, line := range up.seen() {
		target := strings.Split(line, " ")[1]
		p, _, _ := strings.Cut(target, "?")
		if why := normalPath(p); why != "" {
			t.Errorf("upstream saw %q: %s", line, why)
		}
	}
}
