package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gale file-server lists directories only with --browse.
func TestFileServerBrowse(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "<notes>.txt"), []byte("n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args   []string
		status int
	}{{[]string{"--browse"}, 200}, {nil, 404}} {
		args := append([]string{"file-server", "--root", root, "--listen", "127.0.0.1:0"}, tt.args...)
		p := startGale(t, args...)
		base := p.base
		resp, err := http.Get(base + "/sub/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("%v: GET /sub/ = %d; want %d", tt.args, resp.StatusCode, tt.status)
		}
		if tt.status == 200 && !strings.Contains(string(body), `<a href="%3Cnotes%3E.txt">&lt;notes&gt;.txt</a>`) {
			t.Errorf("listing: %s", body)
		}
		p.stop(t)
	}
}
