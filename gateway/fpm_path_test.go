package gateway_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFPMPathInfo: the path is split after the first ".php" that ends a
// segment, ASCII case-insensitively, in code: a newline in PATH_INFO
// (CVE-2019-11043's shape, "%0A" in the path) is passed as it is and
// leaves SCRIPT_NAME and PATH_INFO consistent.
func TestFPMPathInfo(t *testing.T) {
	s := startSite(t, "")
	c := httpClient()
	cases := []struct {
		path, script, info string
	}{
		{"/env.php", "/env.php", ""},
		{"/env.php/", "/env.php", "/"},
		{"/env.php/a/b.php/c", "/env.php", "/a/b.php/c"},
		{"/env.php/PHP%0Ais_the_shittiest_lang.php", "/env.php", "/PHP\nis_the_shittiest_lang.php"},
		{"/env.php/x%0A", "/env.php", "/x\n"},
		{"/env.php/%C3%A9t%C3%A9", "/env.php", "/été"},
	}
	for _, cs := range cases {
		resp, body := get(t, c, s.gale.url(cs.path+"?q"))
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d %q", cs.path, resp.StatusCode, body)
			continue
		}
		env := decodeEnv(t, body)
		if env.Server["SCRIPT_NAME"] != cs.script || env.Server["PATH_INFO"] != cs.info ||
			env.Server["SCRIPT_FILENAME"] != s.root+cs.script {
			t.Errorf("%s: SCRIPT_NAME %q PATH_INFO %q SCRIPT_FILENAME %q", cs.path,
				env.Server["SCRIPT_NAME"], env.Server["PATH_INFO"], env.Server["SCRIPT_FILENAME"])
		}
		if uri := env.Server["DOCUMENT_URI"].(string); !strings.HasSuffix(uri, cs.info) {
			t.Errorf("%s: PATH_INFO %q is not a suffix of DOCUMENT_URI %q", cs.path, cs.info, uri)
		}
	}
	// The exploit's request as published: a newline in PATH_INFO and a
	// long query that padded PHP-FPM's buffer; the script runs with a
	// consistent environment.
	q := strings.Repeat("Q", 1500)
	resp, body := get(t, c, s.gale.url("/env.php/PHP%0Ais_the_shittiest_lang.php?"+q))
	if resp.StatusCode != 200 {
		t.Fatalf("exploit shape: %d %q", resp.StatusCode, body)
	}
	if env := decodeEnv(t, body); env.Server["QUERY_STRING"] != q || env.Server["PATH_INFO"] != "/PHP\nis_the_shittiest_lang.php" {
		t.Errorf("exploit shape: QUERY_STRING %d bytes, PATH_INFO %q", len(env.Server["QUERY_STRING"].(string)), env.Server["PATH_INFO"])
	}
	// A split extension in other case splits too; the script is then the
	// file of that name (none here), which PHP-FPM answers 404.
	resp, _ = get(t, c, s.gale.url("/ENV.PHP/x"))
	if resp.StatusCode != 404 {
		t.Errorf("/ENV.PHP/x: %d", resp.StatusCode)
	}
	// ".phpx" is not the extension: no split.
	if resp, _ := get(t, c, s.gale.url("/env.phpx/a")); resp.StatusCode != 404 {
		t.Errorf("/env.phpx/a: %d", resp.StatusCode)
	}
	// An encoded slash is a separator, as routing reads it, and a path
	// parameter is no part of a script's name; REQUEST_URI is the target
	// as sent (issue 29).
	for _, cs := range []struct{ path, script, info string }{
		{"/env%2Ephp%2Fx", "/env.php", "/x"},
		{"/env.php;jsessionid=1/x", "/env.php", "/x"},
		{"/env.php/a%2fb;c", "/env.php", "/a/b"},
		{"/env.php/a%2fb/c;d", "/env.php", "/a/b/c"},
	} {
		resp, body := get(t, c, s.gale.url(cs.path))
		if cs.info == "/a/b" {
			if resp.StatusCode != 400 { // an encoded slash and a parameter in one segment
				t.Errorf("%s: %d", cs.path, resp.StatusCode)
			}
			continue
		}
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d %q", cs.path, resp.StatusCode, body)
			continue
		}
		env := decodeEnv(t, body)
		if env.Server["SCRIPT_NAME"] != cs.script || env.Server["PATH_INFO"] != cs.info || env.Server["REQUEST_URI"] != cs.path {
			t.Errorf("%s: SCRIPT_NAME %q PATH_INFO %q REQUEST_URI %q", cs.path, env.Server["SCRIPT_NAME"], env.Server["PATH_INFO"], env.Server["REQUEST_URI"])
		}
	}
}

// TestFPMRequestFields: request fields become HTTP_* variables, repeated
// ones joined; never HTTP_PROXY (httpoxy), and no field whose name has
// an underscore.
func TestFPMRequestFields(t *testing.T) {
	s := startSite(t, "")
	conn, err := net.Dial("tcp", s.gale.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(conn, "GET /env.php HTTP/1.1\r\nHost: example.com:8080\r\nProxy: http://evil:1\r\nX-Real_IP: 6.6.6.6\r\n"+
		"Accept: a\r\nAccept: b\r\nCookie: x=1\r\nCookie: y=2\r\nX-Custom-Thing: yes\r\nConnection: close\r\n\r\n")
	raw, _ := io.ReadAll(conn)
	i := strings.Index(string(raw), "\r\n\r\n")
	if i < 0 {
		t.Fatalf("%q", raw)
	}
	body := string(raw[i+4:])
	if j := strings.Index(body, "{"); j > 0 { // chunked
		body = body[j : strings.LastIndex(body, "}")+1]
	}
	env := decodeEnv(t, body)
	for k := range env.Server {
		if k == "HTTP_PROXY" || strings.Contains(k, "REAL") {
			t.Errorf("%s was passed", k)
		}
	}
	want := map[string]string{
		"HTTP_ACCEPT": "a, b", "HTTP_COOKIE": "x=1; y=2", "HTTP_X_CUSTOM_THING": "yes",
		"SERVER_NAME": "example.com", "SERVER_PORT": "8080", "HTTP_HOST": "example.com:8080",
	}
	for k, v := range want {
		if env.Server[k] != v {
			t.Errorf("%s = %v, want %q", k, env.Server[k], v)
		}
	}
}

// TestFPMChunkedBody411: a request body without a length is refused
// with 411 (CGI needs CONTENT_LENGTH before the body).
func TestFPMChunkedBody411(t *testing.T) {
	s := startSite(t, "")
	req, _ := http.NewRequest("POST", s.gale.url("/env.php"), io.NopCloser(strings.NewReader("a=1")))
	req.ContentLength = -1
	resp, err := httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 411 {
		t.Fatalf("%d", resp.StatusCode)
	}
}
