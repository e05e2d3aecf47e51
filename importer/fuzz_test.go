package importer

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzConvert converts arbitrary text as nginx and as Caddyfile: the
// converters must never panic, whatever the parsers accept.
func FuzzConvert(f *testing.F) {
	for _, p := range []string{"testdata/nginx/docs/http_core_location.conf", "testdata/nginx/docs/rewrite.conf", "testdata/caddy/docs.caddyfile"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("server { location = { } location ~ ( { } return; rewrite; listen; }"))
	f.Add([]byte(":80 {\n\thandle @x {\n\t}\n\tredir\n\treverse_proxy {\n\t}\n}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<14 {
			return
		}
		for _, name := range []string{"fuzz.conf", "Caddyfile"} {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, _ = File(p, "")
		}
	})
}
