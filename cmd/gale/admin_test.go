package main

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gale/admin"
	"gale/app"
	"gale/config"
)

// The admin API, tested on the built binary: a real process, its real
// socket, real clients (net/http, wrk, the gale commands).

// adminSite writes a config serving /v with body "v<version>" (and a
// static route, and extra YAML), with an admin API on admin (a YAML
// mapping), and returns the file's path.
func adminSite(t *testing.T, dir, listen, adminYAML string, version int, extra string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "site"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "site", "a.css"), []byte("body{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := fmt.Sprintf(`listen: [%q]
%s
routes:
  - path: /v
    respond: {body: "v%d"}
  - path: /static/
    static: {root: site}
    rewrite: "/{rest}"
%s`, listen, adminYAML, version, extra)
	file := filepath.Join(dir, "gale.yaml")
	if err := os.WriteFile(file+".tmp", []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		t.Fatal(err)
	}
	return file
}

// adminClient returns a client of the API that file configures.
func adminClient(t *testing.T, file string) *admin.Client {
	t.Helper()
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	c, err := admin.NewClient(cfg.Admin)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// call sends one request to the API and requires the status.
func call(t *testing.T, c *admin.Client, method, path string, body []byte, status int) []byte {
	t.Helper()
	resp, err := c.Do(method, path, body, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.Status, status, resp.Body)
	}
	return resp.Body
}

// body GETs url and returns its status and body.
func body(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// wrkResult is what wrk reports of a run.
type wrkResult struct {
	requests, non2xx, socketErrs int
	out                          string
}

var (
	wrkRequestsRE = regexp.MustCompile(`(\d+) requests in`)
	wrkNon2xxRE   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	wrkSocketRE   = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

func parseWrk(out string) wrkResult {
	r := wrkResult{out: out}
	if m := wrkRequestsRE.FindStringSubmatch(out); m != nil {
		r.requests, _ = strconv.Atoi(m[1])
	}
	if m := wrkNon2xxRE.FindStringSubmatch(out); m != nil {
		r.non2xx, _ = strconv.Atoi(m[1])
	}
	if m := wrkSocketRE.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.Atoi(s)
			r.socketErrs += n
		}
	}
	return r
}

// Configs loaded over the socket while wrk runs (3 s, 16 connections)
// are applied with no failed request; the last one loaded answers
// afterwards; a broken one is refused with its positioned error while
// the running config goes on serving.
func TestAdminLoadUnderLoad(t *testing.T) {
	if _, err := exec.LookPath("wrk"); err != nil {
		t.Skip("wrk is not installed")
	}
	dir := t.TempDir()
	listen := freeAddr(t)
	adminYAML := "admin: {listen: unix:admin.sock}"
	file := adminSite(t, dir, listen, adminYAML, 0, "")
	p := startGale(t, "serve", "-c", file)
	c := adminClient(t, file)

	wrk := exec.Command("wrk", "-t2", "-c16", "-d3s", "--timeout", "10s", p.base+"/v")
	out := &lockedBuffer{}
	wrk.Stdout, wrk.Stderr = out, out
	if err := wrk.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wrk.Wait() }()
	version, loads := 0, 0
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("wrk: %v\n%s", err, out.String())
			}
			running = false
		default:
			version++
			data, err := os.ReadFile(adminSite(t, dir, listen, adminYAML, version, ""))
			if err != nil {
				t.Fatal(err)
			}
			call(t, c, http.MethodPost, "/load", data, http.StatusOK)
			loads++
			if _, got := body(t, p.base+"/v"); got != "v"+strconv.Itoa(version) {
				t.Fatalf("after loading version %d, /v answers %q", version, got)
			}
		}
	}
	r := parseWrk(out.String())
	t.Logf("%d loads during %d requests", loads, r.requests)
	if r.requests == 0 || r.non2xx != 0 || r.socketErrs != 0 {
		t.Fatalf("wrk: %d requests, %d not 2xx, %d socket errors\n%s", r.requests, r.non2xx, r.socketErrs, r.out)
	}
	if loads < 2 {
		t.Fatalf("only %d loads while wrk ran", loads)
	}
	if _, got := body(t, p.base+"/v"); got != "v"+strconv.Itoa(version) {
		t.Fatalf("/v answers %q, want the last loaded v%d", got, version)
	}

	broken := []byte("listen: [\"" + listen + "\"]\nroutes:\n  - path: /v\n    respond: {status: 99}\n")
	resp, err := c.Do(http.MethodPost, "/load", broken, http.Header{"Accept": {"application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Loaded bool `json:"loaded"`
		Errors []struct {
			Line int    `json:"line"`
			Col  int    `json:"column"`
			Key  string `json:"key"`
			Text string `json:"text"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(resp.Body, &res); err != nil || resp.Status != http.StatusBadRequest {
		t.Fatalf("broken config: %d %s (%v)", resp.Status, resp.Body, err)
	}
	if res.Loaded || len(res.Errors) != 1 || res.Errors[0].Line != 4 || res.Errors[0].Key != "routes[0].respond.status" ||
		!strings.HasPrefix(res.Errors[0].Text, file+":4:") {
		t.Fatalf("broken config answer: %s", resp.Body)
	}
	text := call(t, c, http.MethodPost, "/load", broken, http.StatusBadRequest)
	if !strings.Contains(string(text), "gale.yaml:4:") || !strings.Contains(string(text), "routes[0].respond.status") {
		t.Fatalf("broken config, text answer: %s", text)
	}
	if _, got := body(t, p.base+"/v"); got != "v"+strconv.Itoa(version) {
		t.Fatalf("after a refused load /v answers %q, want v%d", got, version)
	}
	if src := call(t, c, http.MethodGet, "/config", nil, http.StatusOK); !strings.Contains(string(src), fmt.Sprintf(`body: "v%d"`, version)) {
		t.Fatalf("GET /config after the refused load:\n%s", src)
	}
	p.stop(t)
}

// GET /config answers the running config's YAML, and JSON on request;
// GET /routes lists the routes and explains a request; POST /purge drops
// cached files; GET /status summarises; unknown paths and wrong methods
// are refused. Nothing of it answers on the public listener.
func TestAdminEndpoints(t *testing.T) {
	dir := t.TempDir()
	listen := freeAddr(t)
	file := adminSite(t, dir, listen, "admin: {listen: unix:admin.sock}", 1, "  - path: /\n    respond: {body: public}\n")
	p := startGale(t, "serve", "-c", file)
	c := adminClient(t, file)

	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := call(t, c, http.MethodGet, "/config", nil, http.StatusOK); string(got) != string(src) {
		t.Fatalf("GET /config:\n%s\nwant the file:\n%s", got, src)
	}
	var doc struct {
		Listen []string `json:"listen"`
		Routes []struct {
			Path string `json:"path"`
		} `json:"routes"`
	}
	if err := json.Unmarshal(call(t, c, http.MethodGet, "/config?format=json", nil, http.StatusOK), &doc); err != nil || len(doc.Routes) != 3 || doc.Listen[0] != listen {
		t.Fatalf("GET /config?format=json: %+v (%v)", doc, err)
	}
	if routes := string(call(t, c, http.MethodGet, "/routes", nil, http.StatusOK)); !strings.Contains(routes, "*/v") || !strings.Contains(routes, "static") {
		t.Fatalf("GET /routes:\n%s", routes)
	}
	explain := string(call(t, c, http.MethodGet, "/routes?method=GET&url=/static/a.css", nil, http.StatusOK))
	if !strings.Contains(explain, "route: routes[1]") || !strings.Contains(explain, "normal path: /static/a.css") {
		t.Fatalf("GET /routes?url=/static/a.css:\n%s", explain)
	}

	if code, got := body(t, p.base+"/static/a.css"); code != 200 || got != "body{}\n" {
		t.Fatalf("static: %d %q", code, got)
	}
	var purged struct{ Purged int }
	waitFor(t, func() bool { // the cache keeps the file once its load finished
		_ = json.Unmarshal(call(t, c, http.MethodPost, "/purge?path=/a.css", nil, http.StatusOK), &purged)
		if purged.Purged == 0 {
			body(t, p.base+"/static/a.css")
		}
		return purged.Purged == 1
	})
	if err := json.Unmarshal(call(t, c, http.MethodPost, "/purge?path=/a.css", nil, http.StatusOK), &purged); err != nil || purged.Purged != 0 {
		t.Fatalf("second purge: %+v (%v)", purged, err)
	}
	call(t, c, http.MethodPost, "/purge", nil, http.StatusOK)
	call(t, c, http.MethodPost, "/purge?path=a.css", nil, http.StatusBadRequest)

	var st app.Status
	if err := json.Unmarshal(call(t, c, http.MethodGet, "/status", nil, http.StatusOK), &st); err != nil {
		t.Fatal(err)
	}
	if st.PID != p.cmd.Process.Pid || st.ConfigFile != file || st.Routes != 3 || !strings.HasPrefix(st.Version, "gale ") || len(st.Listen) != 1 {
		t.Fatalf("status %+v", st)
	}

	call(t, c, http.MethodGet, "/nope", nil, http.StatusNotFound)
	call(t, c, http.MethodGet, "/load", nil, http.StatusMethodNotAllowed)
	call(t, c, http.MethodPost, "/status", nil, http.StatusMethodNotAllowed)
	for _, path := range []string{"/config", "/status", "/upstreams", "/routes"} {
		if code, got := body(t, p.base+path); code != 200 || got != "public" {
			t.Fatalf("public listener %s: %d %q", path, code, got)
		}
	}

	// Moving the API needs a restart: the load says so, and the API stays.
	moved := strings.Replace(string(src), "unix:admin.sock", "unix:other.sock", 1)
	if got := string(call(t, c, http.MethodPost, "/load", []byte(moved), http.StatusOK)); !strings.Contains(got, "note: admin.listen or pid_file changed: restart gale to apply them") {
		t.Fatalf("loading a moved admin.listen: %s", got)
	}
	call(t, c, http.MethodGet, "/status", nil, http.StatusOK)
	p.stop(t)
}

// The socket is created with mode 0600 and removed at exit.
func TestAdminSocketMode(t *testing.T) {
	dir := t.TempDir()
	file := adminSite(t, dir, freeAddr(t), "admin: {listen: unix:admin.sock}", 1, "")
	p := startGale(t, "serve", "-c", file)
	sock := filepath.Join(dir, "admin.sock")
	fi, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want a socket with 0600", fi.Mode())
	}
	p.stop(t)
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("the socket is still there after the stop: %v", err)
	}
}

// On TCP every request needs the token: 401 without it or with a wrong
// one, in any endpoint.
func TestAdminToken(t *testing.T) {
	dir := t.TempDir()
	tok := "3f7c1e9a2b4d6f80a1c3e5b7d9f20468"
	if err := os.WriteFile(filepath.Join(dir, "admin.token"), []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	adminAddr := freeAddr(t)
	file := adminSite(t, dir, freeAddr(t), fmt.Sprintf("admin: {listen: %q, token_file: admin.token}", adminAddr), 1, "")
	p := startGale(t, "serve", "-c", file)
	for _, path := range []string{"/status", "/config", "/upstreams"} {
		for _, auth := range []string{"", "Bearer wrong", "Bearer " + tok[:len(tok)-1], "Basic " + tok, "bearer " + tok} {
			req, _ := http.NewRequest(http.MethodGet, "http://"+adminAddr+path, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
				t.Fatalf("%s with %q: %d, want 401 with WWW-Authenticate", path, auth, resp.StatusCode)
			}
		}
	}
	for _, method := range []string{http.MethodPost} {
		resp, err := http.Post("http://"+adminAddr+"/stop", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s /stop without a token: %d", method, resp.StatusCode)
		}
	}
	c := adminClient(t, file) // carries the token
	call(t, c, http.MethodGet, "/status", nil, http.StatusOK)
	p.stop(t)
}

// GET /upstreams reads an upstream in service, then out of service once
// it was killed (its active health check fails); and a FastCGI server
// that refuses connections out of service after a failed request
// (passive health).
func TestAdminUpstreamHealth(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "up "+r.URL.Path) }))
	defer up.Close()
	dir := t.TempDir()
	fpm := freeAddr(t) // nothing listens there
	extra := fmt.Sprintf(`  - name: api
    path: /api/
    proxy:
      to: [%q]
      health_check: {path: /healthz, interval: 50ms, timeout: 1s, fails: 1, passes: 1}
  - name: php
    path: /php/
    fastcgi: {to: %q, root: site, retries: 0, health_check: {passive: {fails: 1, cooldown: 1h}}}
`, up.URL, fpm)
	file := adminSite(t, dir, freeAddr(t), "admin: {listen: unix:admin.sock}", 1, extra)
	p := startGale(t, "serve", "-c", file)
	c := adminClient(t, file)
	if code, got := body(t, p.base+"/api/x"); code != 200 || got != "up /api/x" {
		t.Fatalf("through the proxy: %d %q", code, got)
	}
	read := func() (proxied, fastcgi app.UpstreamStatus) {
		var res struct{ Upstreams []app.UpstreamStatus }
		if err := json.Unmarshal(call(t, c, http.MethodGet, "/upstreams", nil, http.StatusOK), &res); err != nil || len(res.Upstreams) != 2 {
			t.Fatalf("GET /upstreams: %+v (%v)", res, err)
		}
		return res.Upstreams[0], res.Upstreams[1]
	}
	u, f := read()
	if !u.Healthy || u.Kind != "proxy" || u.Route != "api" || u.Address != up.URL || u.Attempts < 1 || u.Open < u.Idle || u.Failures == nil {
		t.Fatalf("before the kill: %+v", u)
	}
	if !f.Healthy || f.Kind != "fastcgi" || f.Route != "php" || f.Address != fpm {
		t.Fatalf("FastCGI server before a request: %+v", f)
	}
	up.CloseClientConnections()
	up.Close()
	waitFor(t, func() bool { u, _ := read(); return !u.Healthy })
	if code, _ := body(t, p.base+"/php/index.php"); code != http.StatusBadGateway {
		t.Fatalf("FastCGI server refusing: %d, want 502", code)
	}
	waitFor(t, func() bool { _, f := read(); return !f.Healthy })
	var st app.Status
	if err := json.Unmarshal(call(t, c, http.MethodGet, "/status", nil, http.StatusOK), &st); err != nil || st.Upstreams != 2 || st.Unhealthy != 2 {
		t.Fatalf("status %+v (%v)", st, err)
	}
	p.stop(t)
}
