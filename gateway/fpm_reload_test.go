package gateway_test

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gale/config"
	"gale/fastcgi"
)

// reload writes yamlText (listen kept) as g's config and reloads it.
func (g *gale) reload(t *testing.T, dir, yamlText string) {
	t.Helper()
	file := filepath.Join(dir, "gale.yaml")
	if err := os.WriteFile(file, []byte("listen: [\""+g.addr+"\"]\n"+yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
}

// askFPM runs script under root on the FastCGI server at unix socket
// sock directly (no gale), and returns its STDOUT: it answers only when
// one of the pool's workers is free.
func askFPM(t *testing.T, sock, root, script string) string {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	var pairs []byte
	for _, kv := range [][2]string{
		{"SCRIPT_FILENAME", filepath.Join(root, script)},
		{"SCRIPT_NAME", "/" + script},
		{"REQUEST_METHOD", "GET"},
		{"SERVER_PROTOCOL", "HTTP/1.1"},
	} {
		pairs = fastcgi.AppendPair(pairs, []byte(kv[0]), []byte(kv[1]))
	}
	req := fastcgi.AppendBeginRequest(nil, 1, fastcgi.RoleResponder, 0)
	req = fastcgi.AppendStream(req, fastcgi.TypeParams, 1, pairs)
	req = fastcgi.AppendHeader(req, fastcgi.TypeParams, 1, 0)
	req = fastcgi.AppendHeader(req, fastcgi.TypeStdin, 1, 0)
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(c)
	if err != nil && len(raw) == 0 {
		t.Fatalf("the application did not answer: %v", err)
	}
	var out strings.Builder
	for len(raw) > 0 {
		r, n, err := fastcgi.Parse(raw)
		if err != nil {
			break
		}
		if r.Type == fastcgi.TypeStdout {
			out.Write(r.Content)
		}
		raw = raw[n:]
	}
	return out.String()
}

// TestFPMReloadReleasesWorkers: a reload does not leave the retired
// routes' connections holding PHP-FPM's workers. With one worker, kept
// alive for an hour: the route that replaces the first one (another path,
// the same server) takes the connection the first kept; and once no route
// names the server, its idle connection closes, so the worker answers
// another client (the replaced router is retired a few seconds after the
// reload, for requests still in flight; its connection closes at the
// sweep after that).
func TestFPMReloadReleasesWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a reload's grace period: not in -short")
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "www")
	writeFiles(t, root, map[string]string{"a/status.php": scripts["status.php"], "b/status.php": scripts["status.php"]})
	f := startFPM(t, dir, "a", false, 1)
	route := func(path string) string {
		return `
server: {event_loops: 1}
routes:
  - path: ` + path + `
    fastcgi: {to: "` + f.listen + `", root: www, max_conns: 1, timeouts: {response_header: 3s, idle: 1h}}
`
	}
	g := startGale(t, dir, route("/a/"), nil)
	c := httpClient()
	if resp, body := get(t, c, g.url("/a/status.php")); resp.StatusCode != 201 {
		t.Fatalf("before the reload: %d %q", resp.StatusCode, body)
	}
	g.reload(t, dir, route("/b/"))
	if resp, body := get(t, c, g.url("/b/status.php")); resp.StatusCode != 201 || body != "created" {
		t.Fatalf("the new route: %d %q (the retired route's connection held the worker)", resp.StatusCode, body)
	}
	g.reload(t, dir, "server: {event_loops: 1}\nroutes:\n  - path: /\n    respond: {body: \"no php\\n\"}\n")
	if out := askFPM(t, strings.TrimPrefix(f.listen, "unix:"), root, "a/status.php"); !strings.HasSuffix(out, "created") {
		t.Fatalf("the worker answered %q", out)
	}
}
