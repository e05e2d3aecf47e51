package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestJSONLogBinary runs gale with log.format: json (at debug, so gnet's
// own lines come too) and the JSON access log on stdout, serves a page and
// a 502 from a dead upstream, stops it, and parses every line it wrote on
// stdout and stderr as one JSON object: the startup summary is records,
// and both logs share "ts", "level", "logger" and "msg".
func TestJSONLogBinary(t *testing.T) {
	bin := galeBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "gale.yaml")
	conf := `listen: ["127.0.0.1:0"]
log: {level: debug, format: json}
access_log: {path: "-", format: json}
routes:
  - path: /api/
    proxy: {to: ["` + dead + `"]}
  - path: /healthz
    health: live
  - path: /
    static: {root: .}
`
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "-c", file)
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	urlRE := regexp.MustCompile(`"url":"(http://127\.0\.0\.1:\d+)"`)
	waitFor(t, func() bool { return urlRE.MatchString(stderr.String()) })
	base := urlRE.FindStringSubmatch(stderr.String())[1]
	for path, want := range map[string]int{"/": 200, "/api/x": 502} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	p := &galeProc{cmd: cmd, stderr: stderr}
	p.stop(t)

	records := func(name, text string) []map[string]any {
		var out []map[string]any
		for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Errorf("%s line %d is not a JSON object: %v\n%s", name, i+1, err, line)
				continue
			}
			for _, k := range []string{"ts", "level", "logger", "msg"} {
				if _, ok := rec[k]; !ok {
					t.Errorf("%s line %d has no %q: %s", name, i+1, k, line)
				}
			}
			if _, ok := rec["ts"].(float64); !ok {
				t.Errorf("%s line %d: ts is not a number: %s", name, i+1, line)
			}
			out = append(out, rec)
		}
		return out
	}
	access := records("stdout", stdout.String())
	server := records("stderr", stderr.String())
	if len(access) != 2 {
		t.Errorf("%d access records on stdout, want 2:\n%s", len(access), stdout.String())
	}
	for _, r := range access {
		if r["logger"] != "http.log.access" || r["level"] != "info" {
			t.Errorf("access record %v", r)
		}
	}
	msgs := map[string]map[string]any{}
	var summary []string
	for _, r := range server {
		if r["logger"] != "gale" {
			t.Errorf("server record with logger %v: %v", r["logger"], r)
		}
		msgs[r["msg"].(string)] = r
		if r["msg"] == "config" {
			summary = append(summary, r["summary"].(string))
		}
	}
	if r := msgs["listening"]; r == nil || r["url"] != base {
		t.Errorf("no listening record for %s", base)
	}
	// The summary names the port the listener bound, not the ":0" of
	// the file, and what the health route is.
	want := []string{"listen  " + strings.TrimPrefix(base, "http://"), "route   */api/     proxy " + dead, "route   */healthz  health live", "route   */         static ."}
	if strings.Join(summary, "\n") != strings.Join(want, "\n") {
		t.Errorf("config records:\n%s\nwant:\n%s", strings.Join(summary, "\n"), strings.Join(want, "\n"))
	}
	if r := msgs["upstream failed"]; r == nil || r["level"] != "warn" || r["upstream"] != dead {
		t.Errorf("upstream failed record: %v", r)
	}
}
