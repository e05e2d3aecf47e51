package app

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// authService is an authentication service of the kind forward_auth
// asks (a cookie login in front of an application, as oauth2-proxy or
// Authelia run one), started by the test, with a record of what it was
// asked.
type authService struct {
	addr    string
	mu      sync.Mutex
	asked   []*http.Request // the subrequests, bodies drained
	bodies  []int64         // their body bytes
	held    chan struct{}   // a /hold subrequest arrived
	release chan int        // the status /hold answers
}

// startAuthService serves:
//   - /verify: 200 with X-User for the cookie session=alice (or the
//     bearer token of bob), 401 for a JSON client, else 302 to /login with
//     the original URL and a Set-Cookie;
//   - /login: POST user=alice&password=secret sets the session cookie;
//   - /hold: waits for the test's verdict;
//   - /sleep: never answers (until the connection closes).
func startAuthService(t *testing.T) *authService {
	a := &authService{held: make(chan struct{}, 16), release: make(chan int, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("/verify", func(w http.ResponseWriter, r *http.Request) {
		a.record(r)
		if c, err := r.Cookie("session"); err == nil && c.Value == "alice" {
			w.Header().Set("X-User", "alice")
			w.Header().Set("X-Other", "not copied")
			w.WriteHeader(200)
			return
		}
		if r.Header.Get("Authorization") == "Bearer token-bob" {
			w.Header().Set("X-User", "bob")
			w.WriteHeader(204)
			return
		}
		if r.Header.Get("Accept") == "application/json" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="app"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			io.WriteString(w, `{"error":"login required"}`)
			return
		}
		w.Header().Set("Location", "/login?rd="+url.QueryEscape(r.Header.Get("X-Original-URL")))
		http.SetCookie(w, &http.Cookie{Name: "pending", Value: "1", Path: "/"})
		w.WriteHeader(302)
		io.WriteString(w, "login first\n")
	})
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" {
			io.WriteString(w, "<form method=post>")
			return
		}
		if r.PostFormValue("user") != "alice" || r.PostFormValue("password") != "secret" {
			w.WriteHeader(403)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "alice", Path: "/", HttpOnly: true})
		w.Header().Set("Location", r.URL.Query().Get("rd"))
		w.WriteHeader(303)
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		a.record(r)
		a.held <- struct{}{}
		select {
		case status := <-a.release:
			if status == 200 {
				w.Header().Set("X-User", "alice")
			}
			w.WriteHeader(status)
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/sleep", func(w http.ResponseWriter, r *http.Request) {
		a.record(r)
		<-r.Context().Done()
	})
	a.addr = netUpstream(t, mux)
	return a
}

func (a *authService) record(r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	a.mu.Lock()
	a.asked = append(a.asked, r)
	a.bodies = append(a.bodies, n)
	a.mu.Unlock()
}

// last returns the last subrequest and its body's length.
func (a *authService) last() (*http.Request, int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.asked) == 0 {
		return nil, 0
	}
	return a.asked[len(a.asked)-1], a.bodies[len(a.bodies)-1]
}

// countingApp is the application behind forward_auth: it counts the
// request body bytes it read, as they arrive, and echoes who it was told
// the user is.
type countingApp struct {
	addr  string
	bytes atomic.Int64
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func startCountingApp(t *testing.T) *countingApp {
	a := &countingApp{}
	a.addr = netUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, countingReader{r.Body, &a.bytes})
		fmt.Fprintf(w, "user=%s method=%s body=%d", strings.Join(r.Header.Values("X-User"), ","), r.Method, n)
	}))
	return a
}

// fauthServer is a server with forward_auth routes on a TLS listener
// (HTTP/1.1, h2, HTTP/3) and a plain one (HTTP/1.1, h2c), with its log
// kept.
type fauthServer struct {
	*tlsTestServer
	log   *syncBuffer
	auth  *authService
	app   *countingApp
	plain string
}

func startFauthServer(t *testing.T) *fauthServer {
	t.Helper()
	auth := startAuthService(t)
	app := startCountingApp(t)
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downAddr := down.Addr().String()
	down.Close() // nothing listens there
	ca := newTestCA(t)
	dir := t.TempDir()
	ca.issue(dir, "cert", "localhost", "127.0.0.1")
	yamlText := `listen:
  - {address: "127.0.0.1:0", http3: true, tls: {certificates: [{cert: cert.pem, key: cert.key}]}}
  - "127.0.0.1:0"
routes:
  - path: /login
    proxy: {to: ["` + auth.addr + `"]}
  - path: /app/
    forward_auth: {to: "` + auth.addr + `", uri: /verify, copy_headers: [X-User]}
    proxy: {to: ["` + app.addr + `"]}
  - path: /page/
    forward_auth: {to: "` + auth.addr + `", uri: /verify, copy_headers: [x-user]}
    headers: {response: {set: {X-Route: page}}}
    respond: {status: 200, body: "page\n"}
  - path: /held/
    forward_auth: {to: "` + auth.addr + `", uri: /hold, copy_headers: [X-User]}
    proxy: {to: ["` + app.addr + `"]}
  - path: /down/
    forward_auth: {to: "` + downAddr + `"}
    respond: {status: 200, body: "never\n"}
  - path: /files/
    forward_auth: {to: "` + auth.addr + `", uri: /verify}
    static: {root: ./site}
  - path: /slow/
    forward_auth: {to: "` + auth.addr + `", uri: /sleep, timeout: 300ms}
    respond: {status: 200, body: "never\n"}
  - path: /
    respond: {status: 200, body: "open\n"}
`
	if err := os.MkdirAll(filepath.Join(dir, "site"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeSettled(t, filepath.Join(dir, "site", "a.txt"), []byte("file a\n"))
	writeSettled(t, filepath.Join(dir, "site", "b.txt"), []byte(strings.Repeat("b", 300000)))
	cfg := writeConfig(t, dir, yamlText)
	logs := &syncBuffer{}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := &testServer{t: t, srv: srv, addr: srv.Addrs()[1], dir: dir, done: boot(t, srv)}
	t.Cleanup(ts.stop)
	return &fauthServer{
		tlsTestServer: &tlsTestServer{testServer: ts, ca: ca, tlsAddr: srv.Addrs()[0]},
		log:           logs, auth: auth, app: app, plain: srv.Addrs()[1],
	}
}

// fauthClients are the clients of every protocol, each keeping one
// connection, with the base URL each speaks to.
func (fs *fauthServer) clients(t *testing.T) map[string]struct {
	c    *http.Client
	base string
} {
	out := h2Clients(t, fs.tlsTestServer)
	h2c := out["h2c"]
	h2c.base = "http://" + fs.plain
	out["h2c"] = h2c
	h1 := client()
	h1.CheckRedirect = noRedirects
	out["h1"] = struct {
		c    *http.Client
		base string
	}{h1, "http://" + fs.plain}
	tr := &http.Transport{TLSClientConfig: fs.clientConfig("localhost"), DisableCompression: true, MaxConnsPerHost: 1,
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	t.Cleanup(tr.CloseIdleConnections)
	out["h1-tls"] = struct {
		c    *http.Client
		base string
	}{&http.Client{Transport: tr, Timeout: 10 * time.Second, CheckRedirect: noRedirects}, "https://" + fs.tlsAddr}
	out["h3"] = struct {
		c    *http.Client
		base string
	}{h3Client(t, fs.tlsTestServer), "https://" + fs.tlsAddr}
	return out
}

// do sends one request and returns the response with its body read.
func fauthDo(t *testing.T, c *http.Client, method, u, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, u, err)
	}
	return resp, string(b)
}

// TestForwardAuthLoginFlow runs a cookie login through forward_auth over
// HTTP/1.1 (plain and TLS), h2 (TLS and h2c) and HTTP/3, several requests
// on one connection each: without a session the service's 302 to its
// login page comes back as it was sent (Location, Set-Cookie, body), a
// JSON client gets its 401; the login POST (proxied to the service) sets
// the cookie; with it the application is served with X-User from the
// service's answer, whatever X-User the client sent; the subrequest
// carried the original request in the forwarded fields and no body.
func TestForwardAuthLoginFlow(t *testing.T) {
	t.Parallel()
	fs := startFauthServer(t)
	for name, cl := range fs.clients(t) {
		c, base := cl.c, cl.base
		host := strings.TrimPrefix(strings.TrimPrefix(base, "https://"), "http://")
		proto := "http"
		if strings.HasPrefix(base, "https:") {
			proto = "https"
		}

		resp, body := fauthDo(t, c, "GET", base+"/app/page?q=1", "")
		wantLoc := "/login?rd=" + url.QueryEscape(proto+"://"+host+"/app/page?q=1")
		if resp.StatusCode != 302 || resp.Header.Get("Location") != wantLoc || body != "login first\n" ||
			!strings.HasPrefix(resp.Header.Get("Set-Cookie"), "pending=1") {
			t.Fatalf("%s: without a session: %d %q %v", name, resp.StatusCode, body, resp.Header)
		}
		sub, n := fs.auth.last()
		want := map[string]string{
			"X-Forwarded-Method": "GET", "X-Forwarded-Proto": proto, "X-Forwarded-Host": host,
			"X-Forwarded-Uri": "/app/page?q=1", "X-Forwarded-For": "127.0.0.1",
			"X-Original-Method": "GET", "X-Original-Url": proto + "://" + host + "/app/page?q=1",
		}
		for k, v := range want {
			if got := sub.Header.Get(k); got != v {
				t.Errorf("%s: subrequest %s = %q, want %q", name, k, got, v)
			}
		}
		if sub.Method != "GET" || sub.URL.Path != "/verify" || n != 0 {
			t.Errorf("%s: subrequest %s %s with %d body bytes", name, sub.Method, sub.URL, n)
		}

		resp, body = fauthDo(t, c, "GET", base+"/app/api", "", "Accept", "application/json")
		if resp.StatusCode != 401 || body != `{"error":"login required"}` || resp.Header.Get("WWW-Authenticate") != `Bearer realm="app"` ||
			resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: JSON client: %d %q %v", name, resp.StatusCode, body, resp.Header)
		}

		resp, _ = fauthDo(t, c, "POST", base+"/login?rd=/app/home", "user=alice&password=secret", "Content-Type", "application/x-www-form-urlencoded")
		cookie := ""
		for _, ck := range resp.Cookies() {
			if ck.Name == "session" {
				cookie = ck.Name + "=" + ck.Value
			}
		}
		if resp.StatusCode != 303 || resp.Header.Get("Location") != "/app/home" || cookie != "session=alice" {
			t.Fatalf("%s: login: %d %v", name, resp.StatusCode, resp.Header)
		}

		for i := 0; i < 3; i++ {
			resp, body = fauthDo(t, c, "GET", base+"/app/home", "", "Cookie", "theme=dark", "Cookie", cookie, "X-User", "mallory", "x-user", "root")
			if resp.StatusCode != 200 || body != "user=alice method=GET body=0" {
				t.Errorf("%s: with a session, %d: %d %q", name, i, resp.StatusCode, body)
			}
		}
		sub, _ = fs.auth.last()
		if got := strings.Join(sub.Header.Values("Cookie"), "; "); !strings.Contains(got, "session=alice") || !strings.Contains(got, "theme=dark") {
			t.Errorf("%s: subrequest cookies %q", name, got)
		}
		if sub.Header.Get("X-User") != "" {
			t.Errorf("%s: the client's X-User reached the service: %q", name, sub.Header.Values("X-User"))
		}

		before := fs.app.bytes.Load()
		payload := strings.Repeat("p", 100000)
		resp, body = fauthDo(t, c, "POST", base+"/app/upload", payload, "Cookie", cookie)
		if resp.StatusCode != 200 || body != "user=alice method=POST body=100000" {
			t.Errorf("%s: POST with a session: %d %q", name, resp.StatusCode, body)
		}
		if sub, n := fs.auth.last(); n != 0 || sub.Header.Get("X-Forwarded-Method") != "POST" || sub.Method != "GET" {
			t.Errorf("%s: POST's subrequest: %s, %d body bytes, X-Forwarded-Method %q", name, sub.Method, n, sub.Header.Get("X-Forwarded-Method"))
		}
		resp, body = fauthDo(t, c, "POST", base+"/app/upload", payload)
		if resp.StatusCode != 302 || body != "login first\n" {
			t.Errorf("%s: POST without a session: %d %q", name, resp.StatusCode, body)
		}
		if got := fs.app.bytes.Load() - before; got != 100000 {
			t.Errorf("%s: the application read %d body bytes, want the allowed POST's 100000 only", name, got)
		}

		resp, body = fauthDo(t, c, "GET", base+"/app/bearer", "", "Authorization", "Bearer token-bob")
		if resp.StatusCode != 200 || body != "user=bob method=GET body=0" {
			t.Errorf("%s: bearer token: %d %q", name, resp.StatusCode, body)
		}
		resp, body = fauthDo(t, c, "GET", base+"/page/x", "", "Cookie", cookie, "X-User", "mallory")
		if resp.StatusCode != 200 || body != "page\n" || resp.Header.Get("X-Route") != "page" {
			t.Errorf("%s: respond route: %d %q %v", name, resp.StatusCode, body, resp.Header)
		}
		resp, _ = fauthDo(t, c, "GET", base+"/page/x", "")
		if resp.StatusCode != 302 || resp.Header.Get("X-Route") != "page" {
			t.Errorf("%s: respond route without a session: %d %v", name, resp.StatusCode, resp.Header)
		}
		for _, f := range []struct{ path, body string }{{"/files/a.txt", "file a\n"}, {"/files/b.txt", strings.Repeat("b", 300000)}} {
			if resp, body := fauthDo(t, c, "GET", base+f.path, "", "Cookie", cookie); resp.StatusCode != 200 || body != f.body {
				t.Errorf("%s: static %s: %d, %d bytes", name, f.path, resp.StatusCode, len(body))
			}
			if resp, _ := fauthDo(t, c, "GET", base+f.path, ""); resp.StatusCode != 302 {
				t.Errorf("%s: static %s without a session: %d", name, f.path, resp.StatusCode)
			}
		}
		resp, body = fauthDo(t, c, "HEAD", base+"/app/home", "")
		if resp.StatusCode != 302 || body != "" || resp.Header.Get("Content-Length") != "12" {
			t.Errorf("%s: HEAD without a session: %d %q %v", name, resp.StatusCode, body, resp.Header)
		}
	}
}

// TestForwardAuthInjection: every spelling of a copy_headers field a
// client sends over HTTP/1.1 is removed before the application sees the
// request, whether the service copies one or says nothing of it, on
// several requests of one connection.
func TestForwardAuthInjection(t *testing.T) {
	t.Parallel()
	fs := startFauthServer(t)
	c := fs.dial()
	br := bufio.NewReader(c)
	spellings := "X-User: a\r\nx-user: b\r\nX-USER: c\r\nx-USER: d\r\nX-User:e\r\nX-User:  \r\n"
	for i := 0; i < 3; i++ {
		fmt.Fprintf(c, "GET /app/x HTTP/1.1\r\nHost: h\r\nCookie: session=alice\r\n%s\r\n", spellings)
		resp, body := readResponse(t, br, "GET")
		if resp.StatusCode != 200 || body != "user=alice method=GET body=0" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
		fmt.Fprintf(c, "GET /app/x HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer token-bob\r\n%s\r\n", spellings)
		if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || body != "user=bob method=GET body=0" {
			t.Fatalf("request %d (bob): %d %q", i, resp.StatusCode, body)
		}
	}
	// Pipelined: a refused POST with its body, a pass, a refusal, in one
	// write, answered in order.
	fmt.Fprintf(c, "POST /app/p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nX-User: a\r\n\r\nhelloGET /app/q HTTP/1.1\r\nHost: h\r\nCookie: session=alice\r\nx-user: b\r\n\r\nGET /page/r HTTP/1.1\r\nHost: h\r\n\r\n")
	for i, want := range []struct {
		status int
		body   string
	}{{302, "login first\n"}, {200, "user=alice method=GET body=0"}, {302, "login first\n"}} {
		if resp, body := readResponse(t, br, "GET"); resp.StatusCode != want.status || body != want.body {
			t.Fatalf("pipelined %d: %d %q", i, resp.StatusCode, body)
		}
	}
	// A pass that names no X-User leaves the request without one.
	fmt.Fprintf(c, "POST /held/x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n%s\r\nabc", spellings)
	<-fs.auth.held
	fs.auth.release <- 204
	if resp, body := readResponse(t, br, "POST"); resp.StatusCode != 200 || body != "user= method=POST body=3" {
		t.Fatalf("pass without X-User: %d %q", resp.StatusCode, body)
	}
}

// TestForwardAuthHoldsBody: a request body waits, unread by the
// application, while the service is asked: over HTTP/1.1 the whole body
// reached gale before the verdict is given; the application read none of
// it; a pass forwards all of it, a refusal none, and the connection goes
// on with the next request. HTTP/2 and HTTP/3 the same.
func TestForwardAuthHoldsBody(t *testing.T) {
	t.Parallel()
	fs := startFauthServer(t)
	payload := strings.Repeat("b", 50000)

	c := fs.dial()
	br := bufio.NewReader(c)
	for _, verdict := range []int{200, 401, 200} {
		before := fs.app.bytes.Load()
		fmt.Fprintf(c, "POST /held/up HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n%s", len(payload), payload)
		<-fs.auth.held
		peerRead(t, c)
		if got := fs.app.bytes.Load() - before; got != 0 {
			t.Fatalf("h1: the application read %d body bytes before the verdict", got)
		}
		fs.auth.release <- verdict
		resp, body := readResponse(t, br, "POST")
		want, wantBytes := "user=alice method=POST body=50000", int64(50000)
		if verdict != 200 {
			want, wantBytes = "", 0
		}
		if resp.StatusCode != verdict || body != want {
			t.Fatalf("h1: verdict %d: %d %q", verdict, resp.StatusCode, body)
		}
		if got := fs.app.bytes.Load() - before; got != wantBytes {
			t.Fatalf("h1: verdict %d: the application read %d body bytes", verdict, got)
		}
		if _, n := fs.auth.last(); n != 0 {
			t.Fatalf("h1: the service got %d body bytes", n)
		}
	}

	for name, cl := range fs.clients(t) {
		if name == "h1" {
			continue
		}
		for _, verdict := range []int{200, 403} {
			before := fs.app.bytes.Load()
			type result struct {
				status int
				body   string
				err    error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := cl.c.Post(cl.base+"/held/up", "text/plain", strings.NewReader(payload))
				if err != nil {
					done <- result{err: err}
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				done <- result{resp.StatusCode, string(b), err}
			}()
			<-fs.auth.held
			if got := fs.app.bytes.Load() - before; got != 0 {
				t.Fatalf("%s: the application read %d body bytes before the verdict", name, got)
			}
			fs.auth.release <- verdict
			r := <-done
			want := "user=alice method=POST body=50000"
			if verdict != 200 {
				want = ""
			}
			if r.err != nil || r.status != verdict || r.body != want {
				t.Fatalf("%s: verdict %d: %d %q %v", name, verdict, r.status, r.body, r.err)
			}
			if got := fs.app.bytes.Load() - before; verdict != 200 && got != 0 {
				t.Fatalf("%s: refused, yet the application read %d body bytes", name, got)
			}
		}
		if resp, body := fauthDo(t, cl.c, "GET", cl.base+"/", ""); resp.StatusCode != 200 || body != "open\n" {
			t.Errorf("%s: after: %d %q", name, resp.StatusCode, body)
		}
	}
}

// TestForwardAuthFailures: an authentication service that refuses
// connections gives 502 (never a pass), and the log names it; one that
// does not answer within the timeout gives 504, soon after the timeout;
// the client's connection serves the next request either way.
func TestForwardAuthFailures(t *testing.T) {
	t.Parallel()
	fs := startFauthServer(t)
	clients := fs.clients(t)
	for name, cl := range clients {
		resp, body := fauthDo(t, cl.c, "GET", cl.base+"/down/x", "")
		if resp.StatusCode != 502 || body == "never\n" {
			t.Errorf("%s: service down: %d %q", name, resp.StatusCode, body)
		}
		start := time.Now()
		resp, body = fauthDo(t, cl.c, "GET", cl.base+"/slow/x", "")
		took := time.Since(start)
		if resp.StatusCode != 504 || body == "never\n" || took < 300*time.Millisecond || took > 3*time.Second {
			t.Errorf("%s: slow service: %d %q after %v", name, resp.StatusCode, body, took)
		}
		if resp, body := fauthDo(t, cl.c, "GET", cl.base+"/", ""); resp.StatusCode != 200 || body != "open\n" {
			t.Errorf("%s: after: %d %q", name, resp.StatusCode, body)
		}
	}
	if st := fs.srv.ProxyStats(); st.AuthFailures != uint64(2*len(clients)) {
		t.Errorf("%d subrequests without an answer counted, want %d", st.AuthFailures, 2*len(clients))
	}
	logs := fs.log.String()
	var down, slow bool
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, "forward_auth") {
			continue
		}
		down = down || strings.Contains(line, "route=/down/") && strings.Contains(line, "status=502") && strings.Contains(line, "auth_service=127.0.0.1:")
		slow = slow || strings.Contains(line, "route=/slow/") && strings.Contains(line, "status=504") && strings.Contains(line, "auth_service="+fs.auth.addr)
	}
	if !down || !slow {
		t.Errorf("log does not name the failing services (down %v, slow %v):\n%s", down, slow, logs)
	}
}

// rawAuthService answers each subrequest with the bytes answers gives
// for its path, on kept-alive connections, closing when close is set.
func rawAuthService(t *testing.T, answers map[string]struct {
	raw   string
	close bool
}) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					a, ok := answers[req.URL.Path]
					if !ok {
						return
					}
					if _, err := io.WriteString(c, a.raw); err != nil || a.close {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestForwardAuthAnswers: answers of every framing are read whole (a
// chunked or close-delimited refusal reaches the client with its body,
// interim answers are skipped); a garbage answer, one cut short, and one
// whose body is over the bound are 502, never a pass.
func TestForwardAuthAnswers(t *testing.T) {
	t.Parallel()
	auth := rawAuthService(t, map[string]struct {
		raw   string
		close bool
	}{
		"/chunked": {raw: "HTTP/1.1 401 Unauthorized\r\nTransfer-Encoding: chunked\r\nWWW-Authenticate: Basic\r\nConnection: close, x-hop\r\nX-Hop: 1\r\n\r\n3\r\nabc\r\n3;ext=1\r\ndef\r\n0\r\nX-Trailer: t\r\n\r\n"},
		"/close":   {raw: "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n\r\nuntil the close", close: true},
		"/interim": {raw: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX-User: carol\r\n\r\n"},
		"/garbage": {raw: "HELLO WORLD\r\n\r\n"},
		"/cut":     {raw: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nX-User: eve\r\n\r\nabc", close: true},
		"/huge":    {raw: "HTTP/1.1 401 Unauthorized\r\nContent-Length: 100000\r\n\r\n" + strings.Repeat("h", 100000)},
	})
	ts := startServer(t, `listen: ["127.0.0.1:0"]
routes:
`+func() string {
		var b strings.Builder
		for _, p := range []string{"chunked", "close", "interim", "garbage", "cut", "huge"} {
			fmt.Fprintf(&b, "  - path: /%s/\n    forward_auth: {to: %q, uri: /%s, copy_headers: [X-User]}\n    respond: {status: 200, body: \"passed\"}\n", p, auth, p)
		}
		return b.String()
	}(), nil)
	c := client()
	for _, tc := range []struct {
		path   string
		status int
		body   string
	}{
		{"/chunked/", 401, "abcdef"},
		{"/close/", 403, "until the close"},
		{"/interim/", 200, "passed"},
		{"/garbage/", 502, ""},
		{"/cut/", 502, ""},
		{"/huge/", 502, ""},
		{"/chunked/", 401, "abcdef"},
	} {
		resp, body := fauthDo(t, c, "GET", ts.url(tc.path), "")
		if resp.StatusCode != tc.status || tc.body != "" && body != tc.body || body == "passed" && tc.status != 200 {
			t.Errorf("%s: %d %q, want %d %q", tc.path, resp.StatusCode, body, tc.status, tc.body)
		}
		if tc.path == "/chunked/" && (resp.Header.Get("WWW-Authenticate") != "Basic" || resp.Header.Get("X-Hop") != "" || resp.Header.Get("X-Trailer") != "") {
			t.Errorf("%s: fields %v", tc.path, resp.Header)
		}
	}
}

// TestForwardAuthTrustForwarded: the forwarded fields are gale's own view
// (the client as server.trusted_proxies resolve it), unless
// trust_forwarded passes on those a trusted proxy sent.
func TestForwardAuthTrustForwarded(t *testing.T) {
	t.Parallel()
	auth := netUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(401)
		for _, k := range []string{"X-Forwarded-Method", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Forwarded-Uri", "X-Forwarded-For"} {
			fmt.Fprintf(w, "%s=%s\n", k, r.Header.Get(k))
		}
	}))
	ts := startServer(t, `listen: ["127.0.0.1:0"]
server: {trusted_proxies: [127.0.0.1/32]}
routes:
  - path: /trust/
    forward_auth: {to: "`+auth+`", trust_forwarded: true}
    respond: {status: 200}
  - path: /own/
    forward_auth: {to: "`+auth+`"}
    respond: {status: 200}
`, nil)
	hdr := []string{"X-Forwarded-Method", "PUT", "X-Forwarded-Proto", "https", "X-Forwarded-Host", "public.example",
		"X-Forwarded-Uri", "/orig?x=1", "X-Forwarded-For", "203.0.113.7"}
	_, body := fauthDo(t, client(), "GET", ts.url("/trust/a?b=c"), "", hdr...)
	want := "X-Forwarded-Method=PUT\nX-Forwarded-Proto=https\nX-Forwarded-Host=public.example\nX-Forwarded-Uri=/orig?x=1\nX-Forwarded-For=203.0.113.7, 127.0.0.1\n"
	if body != want {
		t.Errorf("trusted:\n%s\nwant\n%s", body, want)
	}
	_, body = fauthDo(t, client(), "GET", ts.url("/own/a?b=c"), "", hdr...)
	want = "X-Forwarded-Method=GET\nX-Forwarded-Proto=http\nX-Forwarded-Host=" + ts.addr + "\nX-Forwarded-Uri=/own/a?b=c\nX-Forwarded-For=203.0.113.7\n"
	if body != want {
		t.Errorf("own view:\n%s\nwant\n%s", body, want)
	}
}

// TestForwardAuthRapidReset: HTTP/2 streams reset in the read that
// brought them (CVE-2023-44487) cost no subrequest on a forward_auth
// route, whatever its handler: they are held to the end of the read, as
// forwarded ones are, and dropped.
func TestForwardAuthRapidReset(t *testing.T) {
	t.Parallel()
	auth := startAuthService(t)
	ts := startServer(t, `listen: ["127.0.0.1:0"]
routes:
  - path: /fa/
    forward_auth: {to: "`+auth.addr+`", uri: /verify}
    respond: {status: 200, body: "local\n"}
`, nil)
	if acked, code := floodOnce(ts.addr, resetFlood(t, "/fa/x", 20)); !acked {
		t.Fatalf("the flood's PING was not answered (GOAWAY %v)", code)
	}
	// Then one stream that is not reset: it is the only one asked about.
	resp, _ := fauthDo(t, h2cClient(t), "GET", ts.url("/fa/x"), "", "Cookie", "session=alice")
	if n := ts.srv.ProxyStats().Auths; resp.StatusCode != 200 || n != 1 {
		t.Errorf("a stream not reset: %d; %d subrequests, want 1 (none for the 20 reset streams)", resp.StatusCode, n)
	}
}

// TestForwardAuthReload: a reload puts forward_auth in front of a route
// and takes it away again, for new requests on kept connections.
func TestForwardAuthReload(t *testing.T) {
	t.Parallel()
	auth := startAuthService(t)
	open := `listen: ["127.0.0.1:0"]
routes:
  - path: /
    respond: {status: 200, body: "open\n"}
`
	guarded := strings.Replace(open, "    respond:", "    forward_auth: {to: \""+auth.addr+"\", uri: /verify}\n    respond:", 1)
	ts := startServer(t, open, nil)
	c := client()
	c.CheckRedirect = noRedirects
	for i, text := range []string{guarded, open, guarded} {
		if _, err := ts.srv.Reload(writeConfig(t, ts.dir, text)); err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
		want := 200
		if text == guarded {
			want = 302
		}
		if resp, _ := fauthDo(t, c, "GET", ts.url("/x"), ""); resp.StatusCode != want {
			t.Errorf("after reload %d: %d, want %d", i, resp.StatusCode, want)
		}
		if resp, body := fauthDo(t, c, "GET", ts.url("/x"), "", "Cookie", "session=alice"); resp.StatusCode != 200 || body != "open\n" {
			t.Errorf("after reload %d, with a session: %d %q", i, resp.StatusCode, body)
		}
	}
}

// TestForwardAuthConcurrent: many clients at once, half with a session,
// over HTTP/1.1 and h2c: each gets its own verdict (the subrequests share
// the pooled connections to the service, never their answers).
func TestForwardAuthConcurrent(t *testing.T) {
	t.Parallel()
	fs := startFauthServer(t)
	const workers, each = 16, 25
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := client()
			c.CheckRedirect = noRedirects
			if w%2 == 1 {
				c = h2cClient(t)
				c.CheckRedirect = noRedirects
			}
			for i := 0; i < each; i++ {
				req, _ := http.NewRequest("GET", "http://"+fs.plain+"/app/"+strconv.Itoa(w)+"/"+strconv.Itoa(i), nil)
				session := (w+i)%2 == 0
				if session {
					req.Header.Set("Cookie", "session=alice")
				}
				req.Header.Set("X-User", "mallory")
				resp, err := c.Do(req)
				if err != nil {
					errs <- err
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if session && (resp.StatusCode != 200 || string(body) != "user=alice method=GET body=0") ||
					!session && (resp.StatusCode != 302 || !strings.HasSuffix(resp.Header.Get("Location"), url.QueryEscape("/app/"+strconv.Itoa(w)+"/"+strconv.Itoa(i)))) {
					errs <- fmt.Errorf("worker %d request %d (session %v): %d %q %v", w, i, session, resp.StatusCode, body, resp.Header)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := fs.srv.ProxyStats().Auths; n != workers*each {
		t.Errorf("%d subrequests for %d requests (verdicts are not cached)", n, workers*each)
	}
}
