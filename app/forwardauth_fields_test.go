package app

import (
	"bufio"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestForwardAuthClientFields: the subrequest carries the client's
// fields as they came, over HTTP/1.1 (plain and TLS), h2 (TLS and h2c)
// and HTTP/3, repeated ones each; not the framing of a body it does not
// send, nor Expect, Proxy, nor the forwarding fields a client is not
// trusted for: its X-Forwarded-For and X-Original-URL are replaced by
// gale's own.
func TestForwardAuthClientFields(t *testing.T) {
	t.Parallel()
	fs := startFauthServer(t)
	for name, cl := range fs.clients(t) {
		c, base := cl.c, cl.base
		host := strings.TrimPrefix(strings.TrimPrefix(base, "https://"), "http://")
		proto := "http"
		if strings.HasPrefix(base, "https:") {
			proto = "https"
		}
		resp, _ := fauthDo(t, c, "POST", base+"/page/x?y=1", "abc",
			"X-Custom", "one", "X-Custom", "two", "Accept-Language", "fr", "User-Agent", "agent/1", "X-Requested-With", "XMLHttpRequest",
			"Content-Type", "text/plain", "Expect", "100-continue", "Proxy", "http://evil.example", "X-User", "mallory",
			"X-Forwarded-For", "203.0.113.9", "X-Original-Url", "/admin", "X-Original-Method", "DELETE",
			"X-Forwarded-Uri", "/admin", "X-Forwarded-Port", "1", "X-Real-Ip", "203.0.113.9", "Forwarded", "for=203.0.113.9")
		if resp.StatusCode != 302 {
			t.Fatalf("%s: %d", name, resp.StatusCode)
		}
		sub, n := fs.auth.last()
		if n != 0 || sub.ContentLength > 0 || len(sub.TransferEncoding) != 0 {
			t.Errorf("%s: subrequest with a body: %d bytes, length %d, %v", name, n, sub.ContentLength, sub.TransferEncoding)
		}
		want := map[string][]string{
			"X-Custom": {"one", "two"}, "Accept-Language": {"fr"}, "User-Agent": {"agent/1"}, "X-Requested-With": {"XMLHttpRequest"},
			"X-Forwarded-For": {"127.0.0.1"}, "X-Original-Url": {proto + "://" + host + "/page/x?y=1"}, "X-Original-Method": {"POST"},
			"X-Forwarded-Uri": {"/page/x?y=1"}, "X-Forwarded-Method": {"POST"},
		}
		for k, v := range want {
			if got := sub.Header.Values(k); !slices.Equal(got, v) {
				t.Errorf("%s: subrequest %s = %q, want %q", name, k, got, v)
			}
		}
		for _, k := range []string{"Content-Type", "Content-Length", "Expect", "Proxy", "X-User", "X-Forwarded-Port", "X-Real-Ip", "Forwarded"} {
			if got := sub.Header.Values(k); len(got) != 0 {
				t.Errorf("%s: subrequest carries the client's %s %q", name, k, got)
			}
		}
		if sub.Host != fs.auth.addr {
			t.Errorf("%s: subrequest Host %q, want the service's %q", name, sub.Host, fs.auth.addr)
		}
	}
}

// TestForwardAuthClientFieldsH1: over HTTP/1.1 every spelling of a
// field passes as sent, and none of the hop-by-hop fields (those
// Connection names too), the body's framing, names with an underscore,
// or spellings of the forwarding fields does.
func TestForwardAuthClientFieldsH1(t *testing.T) {
	t.Parallel()
	fs := startFauthServer(t)
	c := fs.dial()
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "POST /page/x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Type: text/plain\r\n"+
		"Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nUpgrade: websocket\r\n"+
		"Proxy-Authorization: Basic eDp5\r\nProxy-Connection: keep-alive\r\nproxy: http://evil.example\r\n"+
		"x-custom-lower: low\r\nX-MiXeD-CaSe: Mx\r\nX_Real_IP: 203.0.113.9\r\nx-forwarded-for: 203.0.113.9\r\n"+
		"X-FORWARDED-FOR: 203.0.113.10\r\nx-original-url: http://h/admin\r\nX-ORIGINAL-METHOD: DELETE\r\nx-forwarded-host: evil\r\n"+
		"x-real-ip: 203.0.113.9\r\nclient-cert: :eDp5:\r\n\r\nabc")
	resp, _ := readResponse(t, br, "POST")
	if resp.StatusCode != 302 {
		t.Fatalf("%d", resp.StatusCode)
	}
	sub, n := fs.auth.last()
	if n != 0 || sub.ContentLength > 0 {
		t.Errorf("subrequest with a body: %d bytes, length %d", n, sub.ContentLength)
	}
	want := map[string][]string{
		"X-Custom-Lower": {"low"}, "X-Mixed-Case": {"Mx"}, "X-Forwarded-For": {"127.0.0.1"}, "X-Forwarded-Host": {"h"},
		"X-Original-Url": {"http://h/page/x"}, "X-Original-Method": {"POST"},
	}
	for k, v := range want {
		if got := sub.Header.Values(k); !slices.Equal(got, v) {
			t.Errorf("subrequest %s = %q, want %q", k, got, v)
		}
	}
	for k, v := range sub.Header {
		switch strings.ToLower(k) {
		case "x-custom-lower", "x-mixed-case", "x-forwarded-for", "x-forwarded-host", "x-original-url", "x-original-method",
			"x-forwarded-method", "x-forwarded-proto", "x-forwarded-uri":
		default:
			t.Errorf("subrequest carries %s: %q", k, v)
		}
	}
}

// TestForwardAuthHeadBound: a request whose fields would make the
// subrequest's head longer than proxy.MaxAuthHead (possible with a
// large server.limits.header_bytes) is answered 502 without asking, and the
// log says why; a smaller one on the same connection is asked about.
func TestForwardAuthHeadBound(t *testing.T) {
	t.Parallel()
	asked := make(chan http.Header, 4)
	auth := netUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- r.Header
		w.WriteHeader(204)
	}))
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `listen: ["127.0.0.1:0"]
server: {limits: {header_bytes: 256KiB}}
routes:
  - path: /
    forward_auth: {to: "`+auth+`"}
    respond: {status: 200, body: "in\n"}
`)
	logs := &syncBuffer{}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := &testServer{t: t, srv: srv, addr: srv.Addrs()[0], dir: dir, done: boot(t, srv)}
	t.Cleanup(ts.stop)
	c := ts.dial()
	br := bufio.NewReader(c)
	big := strings.Repeat("v", 40<<10)
	fmt.Fprintf(c, "GET /a HTTP/1.1\r\nHost: h\r\nX-A: %s\r\nX-B: %s\r\n\r\n", big, big)
	if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 502 || body == "in\n" {
		t.Fatalf("fields over the bound: %d %q", resp.StatusCode, body)
	}
	fmt.Fprintf(c, "GET /b HTTP/1.1\r\nHost: h\r\nX-A: %s\r\n\r\n", big)
	if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || body != "in\n" {
		t.Fatalf("fields within the bound: %d %q", resp.StatusCode, body)
	}
	if h := <-asked; len(h.Get("X-A")) != len(big) {
		t.Errorf("the service got X-A of %d bytes, want %d", len(h.Get("X-A")), len(big))
	}
	if len(asked) != 0 {
		t.Errorf("%d more subrequests: the request over the bound was asked about", len(asked))
	}
	if l := logs.String(); !strings.Contains(l, "forward_auth") || !strings.Contains(l, "status=502") || !strings.Contains(l, "more than the subrequest") {
		t.Errorf("the log does not say why:\n%s", l)
	}
}
