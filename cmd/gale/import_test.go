package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportCommand converts a config with gale import: YAML on stdout
// (or -o), notes on stderr as FILE:LINE: directive: why, exit 0; a
// Caddyfile is told by its name; a bad flag is a usage error.
func TestImportCommand(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "site.conf")
	text := "server {\n  listen 8080;\n  location / { return 200 \"hi\"; }\n  sendfile on;\n}\n"
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"import", conf}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "body: hi") || !strings.Contains(out.String(), ":8080") {
		t.Errorf("stdout:\n%s", out.String())
	}
	if want := conf + ":4: sendfile:"; !strings.HasPrefix(errb.String(), want) {
		t.Errorf("stderr %q, want it to start with %q", errb.String(), want)
	}
	file := filepath.Join(dir, "gale.yaml")
	out.Reset()
	if code := run([]string{"import", "--from", "nginx", conf, "-o", file}, &out, &errb); code != 0 || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"validate", file}, &out, &errb); code != 0 {
		t.Fatalf("validate: %s", out.String())
	}
	caddy := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(caddy, []byte(":8080\nrespond /hi \"hello\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"import", caddy}, &out, &errb); code != 0 || !strings.Contains(out.String(), "body: hello") {
		t.Errorf("Caddyfile: exit %d, stdout:\n%s", code, out.String())
	}
	bad := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(bad, []byte("server {\n  listen 80;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := run([]string{"import", bad}, &out, &errb); code != 1 || !strings.Contains(errb.String(), bad+":2: ") {
		t.Errorf("unclosed block: exit %d, stderr %q", code, errb.String())
	}
	if code := run([]string{"import", "--from", "apache", conf}, &out, &errb); code != 2 {
		t.Errorf("--from apache: exit %d, want 2", code)
	}
}
