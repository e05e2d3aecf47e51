package importer

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// startCaddy runs caddy on a Caddyfile with its home and data under dir,
// and waits until addr accepts connections.
func startCaddy(t *testing.T, dir, file, addr string) {
	bin, err := exec.LookPath("caddy")
	if err != nil {
		t.Skip("caddy is not installed (apt-get install caddy); the differential test needs it")
	}
	cmd := exec.Command(bin, "run", "--config", file, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "HEALTH_TEXT=healthy")
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	exited := make(chan string, 1)
	go func() {
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := stderr.Read(buf)
			if b.Len() < 1<<16 {
				b.Write(buf[:n])
			}
			if err != nil {
				exited <- b.String()
				return
			}
		}
	}()
	t.Cleanup(func() { stopProcess(cmd) })
	waitListening(t, addr, exited)
}

// TestDifferentialCaddy serves testdata/diff/Caddyfile with Caddy and
// its conversion with gale, and compares their answers.
func TestDifferentialCaddy(t *testing.T) {
	if _, err := exec.LookPath("caddy"); err != nil {
		t.Skip("caddy is not installed (apt-get install caddy); the differential test needs it")
	}
	t.Setenv("HEALTH_TEXT", "healthy")
	dir := t.TempDir()
	root := diffSite(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	must(t, err)
	port := freePort(t)
	text, err := os.ReadFile("testdata/diff/Caddyfile")
	must(t, err)
	conf := strings.NewReplacer("ROOT", root, "PORT", port, "UPSTREAM", upstreamEcho(t), "HASH", string(hash)).Replace(string(text))
	file := filepath.Join(dir, "Caddyfile")
	must(t, os.WriteFile(file, []byte(conf), 0o644))

	res, err := FromCaddyfile(file)
	must(t, err)
	for _, n := range res.Notes {
		t.Log(n)
	}
	galeYAML := strings.Replace(string(res.YAML), ":"+port, "127.0.0.1:0", 1)
	galeDir := filepath.Join(dir, "gale")
	must(t, os.MkdirAll(galeDir, 0o755))
	galeAddr := startGale(t, galeDir, []byte(galeYAML))
	caddyAddr := "127.0.0.1:" + port
	startCaddy(t, dir, file, caddyAddr)

	ct := []string{"Content-Type", "X-Frame-Options"}
	cases := []diffCase{
		{path: "/", body: true, fields: ct},
		{path: "/about.html", body: true, fields: ct},
		{path: "/about", body: true, fields: ct},
		{path: "/nothing-here", fields: []string{"X-Frame-Options"}},
		{path: "/docs/guide.txt", body: true, fields: []string{"Content-Type", "Cache-Control"}},
		{path: "/static/app.css", body: true, fields: ct},
		{path: "/api/users?id=7", body: true, fields: []string{"X-Upstream", "X-Via", "X-Frame-Options"}},
		{path: "/old", fields: []string{"Location"}},
		{path: "/moved/x", fields: []string{"Location"}},
		{path: "/health", body: true},
		{path: "/teapot", body: true},
		{path: "/private/"},
		{path: "/private/", body: true, headers: map[string]string{"Authorization": "Basic YWxpY2U6cHc="}},
	}
	compare(t, caddyAddr, galeAddr, cases)
}
