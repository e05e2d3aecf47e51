package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// TestHelp: -h and --help print the command's usage (and its flags) to
// stdout and exit 0, on every subcommand and on gale itself; a bad flag
// is still a usage error on stderr, exit 2.
func TestHelp(t *testing.T) {
	cmds := map[string]string{
		"":              "usage:\n  gale [serve]",
		"serve":         serveUsage,
		"validate":      validateUsage,
		"route":         "usage: gale route",
		"version":       versionUsage,
		"schema":        schemaUsage,
		"file-server":   fileServerUsage,
		"reverse-proxy": reverseProxyUsage,
		"hash-password": hashPasswordUsage,
		"reload":        reloadUsage,
		"stop":          stopUsage,
		"status":        statusUsage,
	}
	for cmd, want := range cmds {
		for _, h := range []string{"-h", "--help"} {
			args := []string{h}
			if cmd != "" {
				args = []string{cmd, h}
			}
			var out, errOut bytes.Buffer
			code := run(args, &out, &errOut)
			if code != 0 || !strings.HasPrefix(out.String(), want) || errOut.Len() != 0 {
				t.Errorf("gale %s: exit %d, stdout %q, stderr %q; want 0, usage on stdout, nothing on stderr", strings.Join(args, " "), code, out.String(), errOut.String())
			}
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"file-server", "-h"}, &out, &errOut); !strings.Contains(out.String(), "-access-log") {
		t.Errorf("file-server -h: exit %d, flags not listed:\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"file-server", "--nope"}, &out, &errOut); code != 2 || out.Len() != 0 ||
		!strings.Contains(errOut.String(), "flag provided but not defined: -nope") || !strings.Contains(errOut.String(), fileServerUsage) {
		t.Errorf("file-server --nope: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

// TestValidateArgument: the file may be given without -c.
func TestValidateArgument(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gale.yaml")
	if err := os.WriteFile(file, []byte("listen: [\"127.0.0.1:0\"]\nroutes: [{path: /, respond: {}}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"validate", file}, 0, "ok\n"},
		{[]string{"validate", "-c", file}, 0, "ok\n"},
		{[]string{"validate", file + ".missing"}, 1, "gale.yaml.missing"},
		{[]string{"validate", file, file}, 2, ""},
		{[]string{"validate", "-c", file, file}, 2, ""},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != tc.code || !strings.Contains(out.String(), tc.out) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out.String(), errOut.String(), tc.code, tc.out)
		}
	}
}

// TestVersionLine: the version comes from -ldflags, else from the build
// info's module version, with the VCS revision, time and modified flag.
func TestVersionLine(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "gale", Version: "v1.4.0"},
		Deps:      []*debug.Module{{Path: "github.com/panjf2000/gnet/v2", Version: "v2.9.7"}},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "2ef122960598f7845ddf69338667399234a3ef7b"},
			{Key: "vcs.time", Value: "2026-12-07T19:33:34Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, tc := range []struct {
		ldflags string
		bi      *debug.BuildInfo
		want    string
	}{
		{"", bi, "gale v1.4.0 (revision 2ef122960598f7845ddf69338667399234a3ef7b, 2026-12-07T19:33:34Z, modified) go1.26.8 gnet v2.9.7"},
		{"1.5.0-rc1", bi, "gale 1.5.0-rc1 (revision 2ef122960598f7845ddf69338667399234a3ef7b, 2026-12-07T19:33:34Z, modified) go1.26.8 gnet v2.9.7"},
		{"", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "gale", Version: "(devel)"}}, "gale devel go1.26.8"},
		{"", nil, "gale devel"},
	} {
		if got := versionLine(tc.ldflags, tc.bi); got != tc.want {
			t.Errorf("versionLine(%q) = %q, want %q", tc.ldflags, got, tc.want)
		}
	}
}

// TestVersionBinary: gale version and gale --version print the same line,
// which carries the module version and the VCS revision that go version -m
// reads from the binary (a build without VCS stamping, such as one with
// -buildvcs=false or in a git worktree, has none to show).
func TestVersionBinary(t *testing.T) {
	bin := galeBinary(t)
	a, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) || !strings.HasPrefix(string(a), "gale ") {
		t.Fatalf("gale version %q, gale --version %q", a, b)
	}
	m, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	mod := regexp.MustCompile(`(?m)^\tmod\tgale\t(\S+)`).FindSubmatch(m)
	if mod == nil {
		t.Fatalf("go version -m: no main module:\n%s", m)
	}
	want := string(mod[1])
	if want == "(devel)" {
		want = "devel"
	}
	if !strings.HasPrefix(string(a), "gale "+want+" ") {
		t.Errorf("gale version %q, want the module version %s", a, want)
	}
	if rev := regexp.MustCompile(`(?m)^\tbuild\tvcs\.revision=(\S+)`).FindSubmatch(m); rev != nil && !bytes.Contains(a, rev[1]) {
		t.Errorf("gale version %q, want the revision %s", a, rev[1])
	}
}
