package importer

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// startNginx runs /usr/sbin/nginx on conf in the foreground with a
// prefix of its own, and waits until addr accepts connections.
func startNginx(t *testing.T, dir, conf, addr string) {
	bin := "/usr/sbin/nginx"
	if _, err := os.Stat(bin); err != nil {
		t.Skip("nginx is not installed (" + bin + "); the differential test needs it")
	}
	must(t, os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	global := "daemon off; pid " + filepath.Join(dir, "nginx.pid") + "; error_log stderr;"
	if os.Geteuid() == 0 {
		// Workers would switch to nobody, who cannot read the test's
		// temporary directory.
		global += " user root;"
	}
	cmd := exec.Command(bin, "-p", dir, "-c", conf, "-g", global)
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	exited := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(stderr)
		exited <- string(b)
	}()
	t.Cleanup(func() { stopProcess(cmd) })
	waitListening(t, addr, exited)
}

// TestDifferentialNginx serves testdata/diff/nginx.conf with nginx and
// its conversion with gale, and compares their answers.
func TestDifferentialNginx(t *testing.T) {
	dir := t.TempDir()
	root := diffSite(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	must(t, err)
	htpasswd := filepath.Join(dir, "htpasswd")
	must(t, os.WriteFile(htpasswd, []byte("alice:"+string(hash)+"\n"), 0o644))
	port := freePort(t)
	text, err := os.ReadFile("testdata/diff/nginx.conf")
	must(t, err)
	conf := strings.NewReplacer("ROOT", root, "PORT", port, "UPSTREAM", upstreamEcho(t), "HTPASSWD", htpasswd).Replace(string(text))
	confFile := filepath.Join(dir, "nginx.conf")
	must(t, os.WriteFile(confFile, []byte(conf), 0o644))

	res, err := FromNginx(confFile)
	must(t, err)
	for _, n := range res.Notes {
		t.Log(n)
	}
	galeYAML := strings.Replace(string(res.YAML), "127.0.0.1:"+port, "127.0.0.1:0", 1)
	galeDir := filepath.Join(dir, "gale")
	must(t, os.MkdirAll(galeDir, 0o755))
	galeAddr := startGale(t, galeDir, []byte(galeYAML))
	nginxAddr := "127.0.0.1:" + port
	startNginx(t, dir, confFile, nginxAddr)

	ct := []string{"Content-Type"}
	cases := []diffCase{
		{path: "/", body: true, fields: []string{"Content-Type", "X-Site"}},
		{path: "/about.html", body: true, fields: []string{"Content-Type", "X-Site"}},
		{path: "/nothing-here", fields: nil},
		{path: "/docs/", body: true, fields: ct},
		{path: "/docs/guide.txt", body: true, fields: []string{"Content-Type", "X-Kind", "X-Site"}},
		{path: "/assets/app.css", body: true, fields: []string{"Content-Type", "Cache-Control"}},
		{path: "/assets/notes.txt", body: true, fields: []string{"X-Kind", "Cache-Control"}},
		{path: "/exact", body: true},
		{path: "/docs/secret.txt", body: true},
		{path: "/assets/secret.txt", fields: []string{"X-Kind"}},
		{path: "/old/page", fields: []string{"Location"}},
		{path: "/moved/guide", fields: []string{"Location"}},
		{path: "/api/users?id=7", body: true, fields: []string{"X-Upstream"}},
		{path: "/local/", body: true},
		{path: "/blocked/", fields: nil},
		{path: "/private/"},
		{path: "/private/", body: true, headers: map[string]string{"Authorization": "Basic YWxpY2U6cHc="}},
		{path: "/teapot", body: true},
	}
	compare(t, nginxAddr, galeAddr, cases)
}
