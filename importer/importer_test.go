package importer

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gale/config"
)

var update = flag.Bool("update", false, "rewrite the .gale.yaml golden files")

// sources are the testdata files converted by TestConvertedConfigsLoad:
// every nginx *.conf that is a whole config (not a snippet) and every
// Caddyfile.
func sources(t *testing.T) []string {
	var out []string
	err := filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		base := d.Name()
		switch {
		case d.IsDir() && (base == "snippets" || base == "fuzz" || base == "diff"):
			return filepath.SkipDir
		case d.IsDir(), strings.HasSuffix(base, ".yaml"), base == "SOURCE", strings.HasSuffix(base, ".htpasswd"):
			return nil
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestConvertedConfigsLoad converts each testdata config and loads the
// YAML with the config package, as gale validate does; the YAML is also
// compared with its golden file (go test -update rewrites them).
func TestConvertedConfigsLoad(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	inFixedLengthCopy(t)
	for _, src := range sources(t) {
		t.Run(src, func(t *testing.T) {
			res, err := File(src, "")
			if err != nil {
				t.Fatal(err)
			}
			out := src + ".gale.yaml"
			dir := t.TempDir()
			if _, err := config.Parse(materialize(t, res.YAML, dir), filepath.Join(dir, "gale.yaml")); err != nil {
				t.Fatalf("converted config does not load:\n%v\n%s", err, res.YAML)
			}
			abs, err := filepath.Abs("testdata")
			if err != nil {
				t.Fatal(err)
			}
			var notes strings.Builder
			for _, n := range res.Notes {
				notes.WriteString("# " + n.String() + "\n")
			}
			got := append([]byte(notes.String()), res.YAML...)
			got = []byte(strings.ReplaceAll(string(got), abs, "$TESTDATA"))
			if *update {
				if err := os.WriteFile(filepath.Join(wd, out), got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if string(want) != string(got) {
				t.Errorf("%s differs from the conversion (go test -update rewrites it):\n%s", out, got)
			}
		})
	}
}

// inFixedLengthCopy makes the test run in a copy of testdata under a
// directory whose path has the same length on every machine. The
// conversion writes file paths resolved against the config's directory,
// and a mapping is written on one line only when its values are short:
// where the checkout lives must not decide the layout the golden files
// hold (-update writes them back to the checkout's testdata).
func inFixedLengthCopy(t *testing.T) {
	t.Helper()
	for {
		root := fmt.Sprintf("/tmp/gale-import-%010d", rand.Uint32())
		if err := os.Mkdir(root, 0o755); err != nil {
			if os.IsExist(err) {
				continue
			}
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(root) })
		if err := os.CopyFS(filepath.Join(root, "testdata"), os.DirFS("testdata")); err != nil {
			t.Fatal(err)
		}
		t.Chdir(root)
		return
	}
}

// TestPortOnlyBlocksKeepTheFirst converts blocks told apart only by their
// port: gale routes by host and path, so the first block's routes stay,
// the later ones are left out with a note, and the YAML loads.
func TestPortOnlyBlocksKeepTheFirst(t *testing.T) {
	for name, text := range map[string]string{
		"nginx.conf": "server { listen 8080 default_server; return 200 a; }\nserver { listen 8081 default_server; return 200 b; }\n",
		"Caddyfile":  ":8080 {\n\trespond a\n}\n:8081 {\n\trespond b\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), name)
			must(t, os.WriteFile(file, []byte(text), 0o644))
			res, err := File(file, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := config.Parse(res.YAML, file+".yaml"); err != nil {
				t.Fatalf("%v\n%s", err, res.YAML)
			}
			var left bool
			for _, n := range res.Notes {
				left = left || (n.Line >= 2 && strings.Contains(n.Why, "left out"))
			}
			if !left || !strings.Contains(string(res.YAML), "body: a") || strings.Contains(string(res.YAML), "body: b") {
				t.Errorf("notes %v\n%s", res.Notes, res.YAML)
			}
		})
	}
}
