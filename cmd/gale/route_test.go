package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateRoute = flag.Bool("update-route", false, "rewrite the expectations in testdata/route/*.golden")

// TestRouteGolden runs `gale route` with the arguments on the first line
// of each testdata/route/*.golden against testdata/route/gale.yaml and
// compares its output with the lines after the marker.
func TestRouteGolden(t *testing.T) {
	const marker = "----- expect -----\n"
	dir, err := filepath.Abs(filepath.Join("testdata", "route"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.golden"))
	if len(files) < 8 {
		t.Fatalf("%d golden files", len(files))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".golden"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			input, want, ok := bytes.Cut(data, []byte(marker))
			if !ok {
				t.Fatalf("no marker")
			}
			args := append([]string{"route", "-c", filepath.Join(dir, "gale.yaml")}, splitArgs(strings.TrimSpace(string(input)))...)
			var out, errOut bytes.Buffer
			code := run(args, &out, &errOut)
			got := strings.ReplaceAll(out.String()+errOut.String(), dir, "$DIR")
			if code != 0 {
				got += "exit " + string(rune('0'+code)) + "\n"
			}
			if *updateRoute {
				os.WriteFile(file, append(append(input, marker...), got...), 0o644)
				return
			}
			if got != string(want) {
				t.Errorf("output differs (go test ./cmd/gale -run TestRouteGolden -update-route)\n--- got:\n%s--- want:\n%s", got, want)
			}
		})
	}
}

// splitArgs splits a command line at spaces outside single quotes.
func splitArgs(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, any := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, any = !quoted, true
		case r == ' ' && !quoted:
			if any {
				out = append(out, cur.String())
				cur.Reset()
				any = false
			}
		default:
			cur.WriteRune(r)
			any = true
		}
	}
	if any {
		out = append(out, cur.String())
	}
	return out
}

// Usage errors exit 2 without loading anything.
func TestRouteUsage(t *testing.T) {
	for _, args := range [][]string{
		{"route"},
		{"route", "-c", "x.yaml", "GET"},
		{"route", "-c", "x.yaml", "GET", "/", "--from", "nowhere"},
		{"route", "-c", "x.yaml", "GET", "/", "-H", "no colon"},
		{"route", "-c", "x.yaml", "GET", "/a b"},
		{"route", "-c", "x.yaml", "GET", "/", "--bogus", "1"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 {
			t.Errorf("%q: exit %d; want 2 (%s)", args, code, errOut.String())
		}
	}
}

// TestRouteHandlers: gale route names a named route and says what health,
// browsing static and FastCGI routes do.
func TestRouteHandlers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "gale.yaml")
	conf := `listen: ["127.0.0.1:0"]
routes:
  - path: /healthz
    health: ready
  - path: /files/
    name: files
    static: {root: ., browse: true}
  - path: /app/
    fastcgi: {to: ["127.0.0.1:9000"], root: .}
`
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"/healthz", "handler: health ready\n"},
		{"/files/a", "route: routes[1] (line 5) name files path /files/\n"},
		{"/files/a", "handler: static, root " + dir + ", browse (lists directories without an index file)\n"},
		{"/app/x", "handler: fastcgi to 127.0.0.1:9000, root " + dir + "\n"},
	} {
		var out, errOut bytes.Buffer
		if code := run([]string{"route", "-c", file, "GET", tc.path}, &out, &errOut); code != 0 || !strings.Contains(out.String(), tc.want) {
			t.Errorf("GET %s: exit %d, output:\n%s%s\nwant a line %q", tc.path, code, out.String(), errOut.String(), tc.want)
		}
	}
}

// TestRouteClientAuth: gale route names each listener's client_auth, and
// explains a client_cert access rule (a request it builds presents no
// certificate).
func TestRouteClientAuth(t *testing.T) {
	dir := t.TempDir()
	writeTestCert(t, dir)
	file := filepath.Join(dir, "gale.yaml")
	cfg := `listen:
  - {address: "127.0.0.1:8443", tls: {certificates: [{cert: cert.pem, key: key.pem}], client_auth: {mode: verify_if_given, ca: cert.pem}}}
routes:
  - path: /admin
    access: [{allow: all, client_cert: {names: [admin]}}, {deny: all}]
    respond: {body: "admin\n"}
`
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	run([]string{"route", "-c", file, "GET", "/admin"}, &out, &errOut)
	for _, want := range []string{
		"listen 127.0.0.1:8443  client_auth verify_if_given ca ./cert.pem\n",
		"access: rule 2 (deny all) denies 127.0.0.1: 403\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("gale route: want %q in\n%s%s", want, out.String(), errOut.String())
		}
	}
}
