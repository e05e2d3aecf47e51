package app

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestForwardAuthH2C: an authentication service that speaks only h2c
// (protocol: h2c) is asked over HTTP/2 with the same fields as an
// HTTP/1.1 one, from HTTP/1.1 and h2c clients: a pass copies its field
// onto the request, a 302 comes back as it was sent, an answer over
// MaxAuthBody and a service that is down are 502, one that does not
// answer in time 504, each logged; the clients' connections go on. A
// client that goes away resets the subrequest's stream.
func TestForwardAuthH2C(t *testing.T) {
	t.Parallel()
	asked := make(chan *http.Request, 64)
	reset := make(chan struct{}, 1)
	auth := h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- r
		switch r.URL.Path {
		case "/verify":
			if c, err := r.Cookie("session"); err == nil && c.Value == "alice" {
				w.Header().Set("X-User", "alice")
				w.WriteHeader(204)
				return
			}
			w.Header().Set("Location", "/login?rd="+r.Header.Get("X-Original-URL"))
			http.SetCookie(w, &http.Cookie{Name: "pending", Value: "1", Path: "/"})
			w.WriteHeader(302)
			io.WriteString(w, "login first\n")
		case "/big":
			w.WriteHeader(403)
			io.WriteString(w, strings.Repeat("x", 65<<10))
		case "/sleep":
			<-r.Context().Done()
		case "/hang":
			<-r.Context().Done()
			reset <- struct{}{}
		}
	}))
	app := startCountingApp(t)
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downAddr := down.Addr().String()
	down.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `listen: ["127.0.0.1:0"]
routes:
  - path: /app/
    forward_auth: {to: "`+auth+`", protocol: h2c, uri: /verify, copy_headers: [X-User]}
    proxy: {to: ["`+app.addr+`"]}
  - path: /big/
    forward_auth: {to: "`+auth+`", protocol: h2c, uri: /big}
    respond: {status: 200, body: "never\n"}
  - path: /slow/
    forward_auth: {to: "`+auth+`", protocol: h2c, uri: /sleep, timeout: 300ms}
    respond: {status: 200, body: "never\n"}
  - path: /hang/
    forward_auth: {to: "`+auth+`", protocol: h2c, uri: /hang, timeout: 60s}
    respond: {status: 200, body: "never\n"}
  - path: /down/
    forward_auth: {to: "`+downAddr+`", protocol: h2c}
    respond: {status: 200, body: "never\n"}
  - path: /
    respond: {status: 200, body: "open\n"}
`)
	logs := &syncBuffer{}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := &testServer{t: t, srv: srv, addr: srv.Addrs()[0], dir: dir, done: boot(t, srv)}
	t.Cleanup(ts.stop)
	h1 := client()
	h1.CheckRedirect = noRedirects
	h2 := h2cClient(t)
	h2.CheckRedirect = noRedirects
	for name, c := range map[string]*http.Client{"h1": h1, "h2c": h2} {
		for i := 0; i < 2; i++ {
			resp, body := fauthDo(t, c, "GET", ts.url("/app/x?q=1"), "", "Cookie", "session=alice", "X-Custom", "7", "X-User", "mallory")
			if resp.StatusCode != 200 || body != "user=alice method=GET body=0" {
				t.Fatalf("%s: pass: %d %q", name, resp.StatusCode, body)
			}
			sub := <-asked
			if sub.ProtoMajor != 2 || sub.Header.Get("X-Custom") != "7" || sub.Header.Get("X-User") != "" ||
				sub.Header.Get("X-Original-Url") != "http://"+ts.addr+"/app/x?q=1" || sub.Header.Get("X-Forwarded-For") != "127.0.0.1" {
				t.Errorf("%s: subrequest %s %v", name, sub.Proto, sub.Header)
			}
		}
		resp, body := fauthDo(t, c, "GET", ts.url("/app/y"), "")
		if resp.StatusCode != 302 || body != "login first\n" || resp.Header.Get("Location") != "/login?rd=http://"+ts.addr+"/app/y" ||
			!strings.HasPrefix(resp.Header.Get("Set-Cookie"), "pending=1") {
			t.Errorf("%s: refusal: %d %q %v", name, resp.StatusCode, body, resp.Header)
		}
		<-asked
		if resp, body := fauthDo(t, c, "GET", ts.url("/big/x"), ""); resp.StatusCode != 502 || body == "never\n" {
			t.Errorf("%s: answer over MaxAuthBody: %d %q", name, resp.StatusCode, body)
		}
		<-asked
		start := time.Now()
		if resp, body := fauthDo(t, c, "GET", ts.url("/slow/x"), ""); resp.StatusCode != 504 || body == "never\n" || time.Since(start) < 300*time.Millisecond {
			t.Errorf("%s: slow service: %d %q after %v", name, resp.StatusCode, body, time.Since(start))
		}
		<-asked
		if resp, body := fauthDo(t, c, "GET", ts.url("/down/x"), ""); resp.StatusCode != 502 || body == "never\n" {
			t.Errorf("%s: service down: %d %q", name, resp.StatusCode, body)
		}
		if resp, body := fauthDo(t, c, "GET", ts.url("/"), ""); resp.StatusCode != 200 || body != "open\n" {
			t.Errorf("%s: after: %d %q", name, resp.StatusCode, body)
		}
	}
	// A client that goes away while the service is asked resets the
	// subrequest's stream (long before its timeout).
	c := ts.dial()
	io.WriteString(c, "GET /hang/x HTTP/1.1\r\nHost: h\r\n\r\n")
	<-asked
	c.Close()
	select {
	case <-reset:
	case <-time.After(10 * time.Second):
		t.Error("the subrequest's stream was not reset when the client went away")
	}
	l := logs.String()
	for _, want := range []string{"route=/big/ auth_service=" + auth + " status=502", "route=/slow/ auth_service=" + auth + " status=504",
		"route=/down/ auth_service=" + downAddr + " status=502"} {
		if !strings.Contains(l, want) {
			t.Errorf("the log has no %q:\n%s", want, l)
		}
	}
}
