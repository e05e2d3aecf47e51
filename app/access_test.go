package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// accessProtocols are the protocols the access tests run over: HTTP/1.1
// and h2c, each through a client whose connections leave from a chosen
// loopback address (the whole 127/8 is local).
var accessProtocols = []string{"h1", "h2c"}

// boundClient returns a client whose connections leave from local
// (e.g. "127.0.0.2"), speaking HTTP/1.1 or h2c. Redirects are not
// followed.
func boundClient(t *testing.T, proto, local string) *http.Client {
	t.Helper()
	d := &net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	tr := &http.Transport{DialContext: d.DialContext, DisableCompression: true, MaxConnsPerHost: 1}
	if proto == "h2c" {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// accessGet fetches url and returns the response with its body read.
func accessGet(t *testing.T, c *http.Client, proto, url string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("GET %s: body: %v", url, err)
	}
	if want := map[string]int{"h1": 1, "h2c": 2}[proto]; resp.ProtoMajor != want {
		t.Fatalf("GET %s: answered over %s; want %s", url, resp.Proto, proto)
	}
	return resp, string(body)
}

// IP rules with clients bound to 127.0.0.2 and 127.0.0.3: the first rule
// that contains the client decides, a client no rule contains is denied,
// and a route's client ranges send other clients to the next route.
func TestAccessRulesOverSockets(t *testing.T) {
	ts := startServer(t, `
routes:
  - path: /office/
    access: [{allow: 127.0.0.2}, {deny: 127.0.0.0/8}, {allow: all}]
    respond: {body: "office\n"}
  - path: /only3/
    access: [{allow: 127.0.0.3/32}]
    respond: {body: "only3\n"}
  - path: /split/
    match: {remote: [127.0.0.2]}
    respond: {body: "two\n"}
  - path: /split/
    respond: {body: "others\n"}
`, nil)
	for _, proto := range accessProtocols {
		t.Run(proto, func(t *testing.T) {
			two, three := boundClient(t, proto, "127.0.0.2"), boundClient(t, proto, "127.0.0.3")
			tests := []struct {
				c         *http.Client
				who, path string
				status    int
				body      string
			}{
				{two, "127.0.0.2", "/office/x", 200, "office\n"},
				{three, "127.0.0.3", "/office/x", 403, ""},
				{two, "127.0.0.2", "/only3/", 403, ""},
				{three, "127.0.0.3", "/only3/", 200, "only3\n"},
				{two, "127.0.0.2", "/split/", 200, "two\n"},
				{three, "127.0.0.3", "/split/", 200, "others\n"},
				// The normal path is what the rules guard: no spelling
				// reaches /office/ past them.
				{three, "127.0.0.3", "/x/../office/", 403, ""},
				{three, "127.0.0.3", "//office//", 403, ""},
				{three, "127.0.0.3", "/%6Ffffice/", 404, ""},
				{three, "127.0.0.3", "/%6Fffice/", 403, ""},
				{three, "127.0.0.3", "/%6F%66fice/x", 403, ""},
			}
			for _, tt := range tests {
				resp, body := accessGet(t, tt.c, proto, ts.url(tt.path))
				if resp.StatusCode != tt.status || (tt.body != "" && body != tt.body) {
					t.Errorf("%s from %s: %d %q; want %d %q", tt.path, tt.who, resp.StatusCode, body, tt.status, tt.body)
				}
			}
		})
	}
}

// A rate limit holds across connections and event loops: of requests
// sent at once over eight connections from one address, exactly burst+1
// pass and the rest are answered 429 with Retry-After; another address
// has its own limit; requests paced below the rate all pass.
func TestRateLimitOverSockets(t *testing.T) {
	if testing.Short() {
		t.Skip("requests paced below the rate: not in -short")
	}
	for _, proto := range accessProtocols {
		t.Run(proto, func(t *testing.T) {
			ts := startServer(t, `
server: {event_loops: 2}
routes:
  - path: /burst/
    rate_limit: {rate: 1/m, burst: 9}
    respond: {body: "ok\n"}
  - path: /paced/
    rate_limit: {rate: 20/s, burst: 4}
    respond: {body: "ok\n"}
`, nil)
			const conns, perConn = 8, 5
			clients := make([]*http.Client, conns)
			for i := range clients {
				clients[i] = boundClient(t, proto, "127.0.0.2")
			}
			var mu sync.Mutex
			counts := map[int]int{}
			retryAfter := map[string]int{}
			var wg sync.WaitGroup
			for _, c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range perConn {
						resp, err := c.Get(ts.url("/burst/"))
						if err != nil {
							t.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						mu.Lock()
						counts[resp.StatusCode]++
						if resp.StatusCode == 429 {
							retryAfter[resp.Header.Get("Retry-After")]++
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if counts[200] != 10 || counts[429] != conns*perConn-10 {
				t.Errorf("answers %v; want 10 of 200 and %d of 429", counts, conns*perConn-10)
			}
			// Each refused request waits for the next one-minute slot:
			// between 1 and 60 seconds, never absent.
			for ra, n := range retryAfter {
				var secs int
				if _, err := fmt.Sscan(ra, &secs); err != nil || secs < 1 || secs > 60 {
					t.Errorf("Retry-After %q on %d answers", ra, n)
				}
			}
			// Another client address has a limit of its own.
			if resp, _ := accessGet(t, boundClient(t, proto, "127.0.0.3"), proto, ts.url("/burst/")); resp.StatusCode != 200 {
				t.Errorf("127.0.0.3: %d; want 200", resp.StatusCode)
			}

			// Paced at 10 requests a second, half the rate, spread over
			// the connections: every one passes.
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			paced := map[int]int{}
			for i := 0; i < 20; i++ {
				<-tick.C
				resp, _ := accessGet(t, clients[i%conns], proto, ts.url("/paced/"))
				paced[resp.StatusCode]++
			}
			if paced[200] != 20 {
				t.Errorf("paced answers %v; want 20 of 200", paced)
			}
		})
	}
}

// try_files with an SPA (client routes fall back to /index.html, a file
// large enough to be read off the loop) and a front-controller layout
// (anything that is not a file goes to index.php), through a rewrite.
func TestTryFilesOverSockets(t *testing.T) {
	big := strings.Repeat("<p>spa</p>\n", 12000) // over 64 KiB: loaded by a cache worker
	ts := startServer(t, `
routes:
  - path: /
    static: {root: site/spa, try_files: ["{path}", "{path}/", /index.html]}
  - path: /blog/
    static: {root: site/php, try_files: ["{rest}", "{rest}/", "/index.php"]}
  - path: /legacy/
    match: {path_regex: '/legacy/([a-z]+)\.html'}
    rewrite: "/blog/{1}"
    static: {root: site/php, try_files: ["{rest}", "/index.php"]}
`, map[string]string{
		"spa/index.html":       big,
		"spa/assets/app.js":    "js\n",
		"spa/docs/index.html":  "docs\n",
		"php/index.php":        "front\n",
		"php/theme/site.css":   "css\n",
		"php/about/index.html": "about\n",
		"php/.git/config":      "secret\n",
	})
	for _, proto := range accessProtocols {
		t.Run(proto, func(t *testing.T) {
			c := boundClient(t, proto, "127.0.0.1")
			tests := []struct{ path, body string }{
				{"/users/42", big},
				{"/assets/app.js", "js\n"},
				{"/docs", "docs\n"},
				{"/docs/", "docs\n"},
				{"/", big},
				{"/assets/missing.js", big},
				{"/blog/theme/site.css", "css\n"},
				{"/blog/2024/05/hello-world", "front\n"},
				{"/blog/about", "about\n"},
				{"/blog/.git/config", "front\n"},
				{"/blog/theme/../../../etc/passwd", ""}, // climbs above "/": 400
				{"/legacy/theme.html", "front\n"},
			}
			for _, tt := range tests {
				resp, body := accessGet(t, c, proto, ts.url(tt.path))
				switch {
				case tt.body == "" && resp.StatusCode != 400:
					t.Errorf("%s: %d; want 400", tt.path, resp.StatusCode)
				case tt.body != "" && (resp.StatusCode != 200 || body != tt.body):
					t.Errorf("%s: %d %.30q; want 200 %.30q", tt.path, resp.StatusCode, body, tt.body)
				}
			}
		})
	}
}

// Regex routes whose captures build the path and query a proxy sends to a
// real upstream. HTTP/1.1 only: a server with a proxy route does not
// offer HTTP/2 yet.
func TestRegexCapturesProxyOverSockets(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.RequestURI)
		mu.Unlock()
		fmt.Fprintf(w, "upstream %s\n", r.RequestURI)
	})}
	go up.Serve(ln)
	t.Cleanup(func() { up.Shutdown(context.Background()) })
	ts := startServer(t, fmt.Sprintf(`
routes:
  - path: /users/
    match: {path_regex: '/users/(?P<id>[0-9]+)(?:/(?P<tab>[a-z]+))?'}
    rewrite: "/api/v2/users/{id}?tab={tab}&{query}"
    proxy: {to: ["%s"]}
  - path: /users/
    respond: {status: 404, body: "no such user\n"}
`, ln.Addr()), nil)
	const proto = "h1"
	c := boundClient(t, proto, "127.0.0.1")
	resp, body := accessGet(t, c, proto, ts.url("/users/42/posts?page=2"))
	if resp.StatusCode != 200 || body != "upstream /api/v2/users/42?tab=posts&page=2\n" {
		t.Errorf("proxied: %d %q", resp.StatusCode, body)
	}
	resp, body = accessGet(t, c, proto, ts.url("/users//./7"))
	if resp.StatusCode != 200 || body != "upstream /api/v2/users/7?tab=&\n" {
		t.Errorf("proxied, normalised: %d %q", resp.StatusCode, body)
	}
	if resp, _ = accessGet(t, c, proto, ts.url("/users/alice")); resp.StatusCode != 404 {
		t.Errorf("no capture: %d; want the next route's 404", resp.StatusCode)
	}
	// A capture cannot climb out of the rewritten path: the upstream
	// never sees a dot segment.
	if resp, _ = accessGet(t, c, proto, ts.url("/users/1/%2e%2e")); resp.StatusCode != 404 {
		t.Errorf("dot segment: %d", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Errorf("upstream saw %q; want 2 requests", seen)
	}
}

// Regex routes whose captures build a redirect's Location, which never
// becomes a network-path reference.
func TestRegexCapturesRedirectOverSockets(t *testing.T) {
	ts := startServer(t, `
routes:
  - path: /old/
    match: {path_regex: '/old/(\d{4})/(\d{2})/([a-z-]+)'}
    redirect: {to: "https://blog.example.com/{1}/{3}?m={2}", status: 301}
  - path: /r/
    match: {path_regex: '/r(/.*)'}
    redirect: {to: "/{1}"}
`, nil)
	for _, proto := range accessProtocols {
		t.Run(proto, func(t *testing.T) {
			c := boundClient(t, proto, "127.0.0.1")
			resp, _ := accessGet(t, c, proto, ts.url("/old/2024/05/hello-world"))
			if loc := resp.Header.Get("Location"); resp.StatusCode != 301 || loc != "https://blog.example.com/2024/hello-world?m=05" {
				t.Errorf("redirect: %d %q", resp.StatusCode, loc)
			}
			for _, p := range []string{"/r//evil.example/x", "/r/%2Fevil.example/x", "/r/./%2e/evil.example/x"} {
				resp, _ = accessGet(t, c, proto, ts.url(p))
				if loc := resp.Header.Get("Location"); strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, "/\\") ||
					resp.StatusCode == 308 && loc != "/evil.example/x" {
					t.Errorf("%s: %d %q; want a path, never //host", p, resp.StatusCode, loc)
				}
			}
		})
	}
}
