package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReverseProxyUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"reverse-proxy"}, 2, "usage: gale reverse-proxy"},
		{[]string{"reverse-proxy", "--to", ","}, 1, "to: expected at least one upstream"},
		{[]string{"reverse-proxy", "--to", "ftp://x.example"}, 1, "the scheme must be http or https"},
		{[]string{"reverse-proxy", "--from", "nowhere", "--to", "127.0.0.1:1"}, 1, "listen: expected an address"},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.err) {
			t.Errorf("%v: exit %d stderr %q, want %d and %q", tc.args, code, errOut.String(), tc.code, tc.err)
		}
	}
}

// TestReverseProxyBinary runs `gale reverse-proxy` in front of two
// upstreams and takes requests through it.
func TestReverseProxyBinary(t *testing.T) {
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "a"+r.URL.Path) }))
	defer a.Close()
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "b"+r.URL.Path) }))
	defer b.Close()
	p := startGale(t, "reverse-proxy", "--from", "127.0.0.1:0", "--to", a.URL+", "+strings.TrimPrefix(b.URL, "http://"))
	base := p.base
	got := map[string]bool{}
	for range 4 {
		resp, err := http.Get(base + "/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got[string(body)] = true
	}
	if !got["a/x"] || !got["b/x"] || len(got) != 2 {
		t.Errorf("answers %v, want a/x and b/x", got)
	}
	p.stop(t)
}

// TestReverseProxyHostHeader: gale reverse-proxy forwards the client's
// Host as received (Caddy's default), and the upstream's with
// --change-host-header; --access-log writes a line per request.
func TestReverseProxyHostHeader(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Host) }))
	defer up.Close()
	upHost := strings.TrimPrefix(up.URL, "http://")
	for _, tc := range []struct {
		flags []string
		want  func(client string) string
	}{
		{nil, func(client string) string { return client }},
		{[]string{"--change-host-header"}, func(string) string { return upHost }},
	} {
		logFile := filepath.Join(t.TempDir(), "access.log")
		args := append([]string{"reverse-proxy", "--from", "127.0.0.1:0", "--to", up.URL, "--access-log", logFile}, tc.flags...)
		p := startGale(t, args...)
		resp, err := http.Get(p.base + "/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := tc.want(strings.TrimPrefix(p.base, "http://")); string(body) != want {
			t.Errorf("%v: upstream saw Host %q, want %q", tc.flags, body, want)
		}
		p.stop(t) // the access log is flushed by the time gale exits
		if b, _ := os.ReadFile(logFile); !strings.Contains(string(b), `"GET /x HTTP/1.1" 200 `) {
			t.Errorf("%v: access log %q, want the request's line", tc.flags, b)
		}
	}
}
