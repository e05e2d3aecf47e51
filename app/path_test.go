package app

import (
	"bufio"
	"strings"
	"testing"
)

// Routes, header rules and the static handler read one normalised path:
// no spelling of "/private/secret.txt" escapes the 403 of the "/private/"
// route to reach the static route at "/", and no spelling of
// "/uploads/evil.html" escapes the sandboxing Content-Security-Policy of
// the "/uploads/" route. Each request goes over its own connection to a
// real server.

const pathLayout = `
routes:
  - path: /private/
    respond: {status: 403, body: "forbidden\n"}
  - path: /uploads/
    headers: {response: {set: {Content-Security-Policy: sandbox}}}
    static: {root: site/uploads}
  - path: /
    static: {root: site}
`

var pathFiles = map[string]string{
	"private/secret.txt": "SECRET",
	"uploads/evil.html":  "<script>alert(1)</script>",
	"index.html":         "home",
}

// rawGet sends one GET with the raw target on a new connection and returns
// the status, the Content-Security-Policy and the body.
func (ts *testServer) rawGet(t *testing.T, target string) (int, string, string) {
	t.Helper()
	c := ts.dial()
	if _, err := c.Write([]byte("GET " + target + " HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, body := readResponse(t, bufio.NewReader(c), "GET")
	return resp.StatusCode, resp.Header.Get("Content-Security-Policy"), body
}

func TestPathSpellingsKeepTheirRoute(t *testing.T) {
	ts := startServer(t, pathLayout, pathFiles)
	tests := []struct {
		target string
		status int
	}{
		{"/private/secret.txt", 403},
		{"/%70rivate/secret.txt", 403},
		{"/pri%76ate/secret.txt", 403},
		{"/%70%72%69%76%61%74%65/secret.txt", 403},
		{"//private/secret.txt", 403},
		{"///private//secret.txt", 403},
		{"/./private/secret.txt", 403},
		{"/%2e/private/secret.txt", 403},
		{"/x/../private/secret.txt", 403},
		{"/x/%2e%2e/private/secret.txt", 403},
		{"/x/.%2E/private/secret.txt", 403},
		{"/x/%2E./private/secret.txt", 403},
		{"/private/../private/secret.txt", 403},
		{"http://example.com//private/secret.txt", 403},
		// Spellings another reader could resolve differently: refused.
		{"/x/..;/private/secret.txt", 400},
		{"/.;/private/secret.txt", 400},
		{"/x/..%3B/private/secret.txt", 400},
		{"/x/..%2Fprivate/secret.txt", 400},
		{"/x/..\\private/secret.txt", 400},
		{"/x/..%5Cprivate/secret.txt", 400},
		{"/private\\secret.txt", 400},
		{"/x/%c0%ae%c0%ae/private/secret.txt", 400},
		{"/x/%e0%80%ae%e0%80%ae/private/secret.txt", 400},
		{"/%00/private/secret.txt", 400},
		{"/../private/secret.txt", 400},
		{"/x/../../private/secret.txt", 400},
		// An encoded slash or a path parameter: servers behind gale read
		// "/private/secret.txt" in them, and so does routing (issue 29).
		{"/private%2Fsecret.txt", 403},
		{"/private%2fsecret.txt", 403},
		{"/private;x/secret.txt", 403},
		{"/private%3Bx/secret.txt", 403},
		{"/private%3bx/secret.txt", 403},
		{"/;x/private/secret.txt", 403},
		{"/x/..%2F/private/secret.txt", 400},
	}
	for _, tt := range tests {
		status, _, body := ts.rawGet(t, tt.target)
		if status != tt.status || strings.Contains(body, "SECRET") {
			t.Errorf("GET %s: %d %q; want %d", tt.target, status, body, tt.status)
		}
	}
}

func TestPathSpellingsKeepHeaderRules(t *testing.T) {
	ts := startServer(t, pathLayout, pathFiles)
	for _, target := range []string{
		"/uploads/evil.html",
		"//uploads/evil.html",
		"///uploads/evil.html",
		"/./uploads/evil.html",
		"/x/../uploads/evil.html",
		"/%75ploads/evil.html",
		"/uploads//evil.html",
		"/uploads/./evil.html",
		"/uploads/%65vil.html",
		"/x/%2e%2e/uploads/evil.html",
		"http://example.com//uploads/evil.html",
	} {
		status, csp, body := ts.rawGet(t, target)
		if status != 200 || csp != "sandbox" || body != pathFiles["uploads/evil.html"] {
			t.Errorf("GET %s: %d, Content-Security-Policy %q, body %q; want 200 with sandbox", target, status, csp, body)
		}
	}
	// Refused spellings never reach the file.
	for _, target := range []string{"/x/..;/uploads/evil.html", "/.;/uploads/evil.html", "/x\\..\\uploads\\evil.html"} {
		if status, _, body := ts.rawGet(t, target); status != 400 || strings.Contains(body, "script") {
			t.Errorf("GET %s: %d %q; want 400", target, status, body)
		}
	}
}

// A directory named by a path that needs normalising is redirected to
// its normal form with the slash added.
func TestPathDirectoryRedirectIsNormal(t *testing.T) {
	files := map[string]string{"docs/a.txt": "a"}
	for k, v := range pathFiles {
		files[k] = v
	}
	ts := startServer(t, pathLayout+"  - path: /old/\n    redirect: {to: /new/, keep_path: true}\n", files)
	c := ts.dial()
	br := bufio.NewReader(c)
	for _, tt := range []struct{ target, location string }{
		{"//x/../docs?q=1", "/docs/?q=1"},
		{"/%64ocs", "/docs/"},
		{"//old/a/./%62//c", "/new/a/b/c"},
	} {
		if _, err := c.Write([]byte("GET " + tt.target + " HTTP/1.1\r\nHost: example.com\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, _ := readResponse(t, br, "GET")
		if resp.StatusCode/100 != 3 || resp.Header.Get("Location") != tt.location {
			t.Errorf("GET %s: %d Location %q; want %q", tt.target, resp.StatusCode, resp.Header.Get("Location"), tt.location)
		}
	}
}
