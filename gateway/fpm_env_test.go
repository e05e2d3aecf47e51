package gateway_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// envScript prints the CGI environment PHP sees, as JSON.
const envScript = `<?php header('Content-Type: application/json'); echo json_encode(['server' => $_SERVER, 'get' => (object)$_GET, 'post' => (object)$_POST, 'pool' => getenv('POOL')]);`

type envReply struct {
	Server map[string]any `json:"server"`
	Get    map[string]any `json:"get"`
	Post   map[string]any `json:"post"`
	Pool   string         `json:"pool"`
}

func decodeEnv(t *testing.T, body string) envReply {
	t.Helper()
	var r envReply
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("not JSON: %v: %q", err, body)
	}
	return r
}

func TestFPMEnvironment(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "www")
	writeFiles(t, root, map[string]string{"env.php": envScript, "sub/env.php": envScript})
	f := startFPM(t, dir, "a", false, 2)
	g := startGale(t, dir, `
routes:
  - path: /
    fastcgi:
      to: "`+f.listen+`"
      root: www
      env: {APP_ENV: test}
`, nil)
	c := httpClient()
	resp, body := get(t, c, g.url("/sub/env.php/extra/path?q=1&r=two"))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %v %q", resp.StatusCode, resp.Header, body)
	}
	env := decodeEnv(t, body)
	want := map[string]string{
		"SCRIPT_FILENAME":   root + "/sub/env.php",
		"SCRIPT_NAME":       "/sub/env.php",
		"PATH_INFO":         "/extra/path",
		"PATH_TRANSLATED":   root + "/extra/path",
		"DOCUMENT_ROOT":     root,
		"DOCUMENT_URI":      "/sub/env.php/extra/path",
		"REQUEST_URI":       "/sub/env.php/extra/path?q=1&r=two",
		"QUERY_STRING":      "q=1&r=two",
		"REQUEST_METHOD":    "GET",
		"SERVER_PROTOCOL":   "HTTP/1.1",
		"GATEWAY_INTERFACE": "CGI/1.1",
		"SERVER_SOFTWARE":   "gale",
		"REMOTE_ADDR":       "127.0.0.1",
		"SERVER_NAME":       "127.0.0.1",
		"REQUEST_SCHEME":    "http",
		"APP_ENV":           "test",
		"HTTP_HOST":         g.addr,
	}
	for k, v := range want {
		if got, _ := env.Server[k].(string); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if env.Get["q"] != "1" || env.Get["r"] != "two" {
		t.Errorf("$_GET = %v", env.Get)
	}
	if env.Pool != "a" {
		t.Errorf("pool %q", env.Pool)
	}
}
