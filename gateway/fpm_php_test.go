package gateway_test

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestPHPPreset: the php route does what Caddy's php_fastcgi does: a
// front controller for pretty URLs, index.php as a directory's index
// (with a trailing-slash redirect), PATH_INFO after a script, other files
// from the static handler, and .php files never served as source; over
// HTTP/1.1 and HTTP/2.
func TestPHPPreset(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "www")
	front := `<?php echo "front ", $_SERVER['REQUEST_URI'], " ", $_SERVER['SCRIPT_NAME'], " [", $_SERVER['PATH_INFO'] ?? '', "] ", $_SERVER['REQUEST_METHOD'], " ", $_POST['t'] ?? '';`
	writeFiles(t, root, map[string]string{
		"index.php":       front,
		"style.css":       "body{}",
		"admin/index.php": `<?php echo "admin ", $_SERVER['SCRIPT_NAME'];`,
		"app.php":         `<?php echo "app [", $_SERVER['PATH_INFO'], "]";`,
		"UPPER.PHP":       `<?php echo "upper";`,
		"assets/x.js":     "let x",
		"docs/index.html": "<p>docs</p>",
	})
	f := startFPM(t, dir, "a", false, 2)
	g := startGale(t, dir, `
routes:
  - path: /
    php:
      to: "`+f.listen+`"
      root: www
`, nil)
	// Over HTTP/1.1, then HTTP/2 (h2c).
	for _, c := range []*http.Client{httpClient(), h2cClient(t)} {
		cases := []struct {
			path   string
			status int
			body   string // prefix
		}{
			{"/blog/2024/hello?x=1", 200, "front /blog/2024/hello?x=1 /index.php [] GET"},
			{"/", 200, "front / /index.php [] GET"},
			{"/index.php", 200, "front /index.php /index.php [] GET"},
			{"/index.php/a/b", 200, "front /index.php/a/b /index.php [/a/b] GET"},
			{"/style.css", 200, "body{}"},
			{"/assets/x.js", 200, "let x"},
			{"/docs/", 200, "<p>docs</p>"},
			{"/admin/", 200, "admin /admin/index.php"},
			{"/app.php/x/y", 200, "app [/x/y]"},
			{"/missing.css", 200, "front /missing.css /index.php"},
		}
		for _, cs := range cases {
			resp, body := get(t, c, g.url(cs.path))
			if resp.StatusCode != cs.status || !strings.HasPrefix(body, cs.body) {
				t.Errorf("%s: %d %q, want %d %q", cs.path, resp.StatusCode, body, cs.status, cs.body)
			}
		}
		if resp, _ := get(t, c, g.url("/style.css")); resp.Header.Get("ETag") == "" {
			t.Errorf("static files come from the static handler: %v", resp.Header)
		}
		resp, _ := get(t, c, g.url("/admin?a=1"))
		if resp.StatusCode != 308 || resp.Header.Get("Location") != "/admin/?a=1" {
			t.Errorf("/admin: %d %v", resp.StatusCode, resp.Header)
		}
		// A script in another case runs (or PHP-FPM refuses the extension);
		// its source is never sent.
		for _, p := range []string{"/UPPER.PHP", "/app.php", "/admin/index.php"} {
			if _, body := get(t, c, g.url(p)); strings.Contains(body, "<?php") {
				t.Errorf("%s served as source: %q", p, body)
			}
		}
		resp, err := c.PostForm(g.url("/blog/new"), url.Values{"t": {"hi"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("POST to the front controller: %d", resp.StatusCode)
		}
		resp, err = c.PostForm(g.url("/style.css"), url.Values{"t": {"hi"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 {
			t.Errorf("POST to a static file: %d", resp.StatusCode)
		}
	}
}
