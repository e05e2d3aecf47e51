package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gale/config"
)

const (
	unitFile   = "../../examples/systemd/gale.service"
	dropInFile = "../../examples/systemd/gale.service.d/notify-reload.conf"
)

// unitSettings reads the [Service] assignments of a unit file; a key set
// twice keeps its values in order.
func unitSettings(t *testing.T, data []byte) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: not an assignment: %q", unitFile, line)
			}
			out[k] = append(out[k], v)
		}
	}
	return out
}

// TestSystemdUnit checks the example unit against what gale does: it
// notifies (Type=notify, reloading with SIGHUP from ExecReload, or
// Type=notify-reload from the drop-in for systemd 253+), validates the
// config before starting, and gives a graceful stop more time than
// server.timeouts.shutdown allows it.
func TestSystemdUnit(t *testing.T) {
	data, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	s := unitSettings(t, data)
	want := map[string]string{
		"Type":                  "notify",
		"ExecReload":            "/bin/kill -HUP $MAINPID",
		"AmbientCapabilities":   "CAP_NET_BIND_SERVICE",
		"CapabilityBoundingSet": "CAP_NET_BIND_SERVICE",
		"ProtectSystem":         "strict",
		"NoNewPrivileges":       "yes",
		"PrivateTmp":            "yes",
		"ReadWritePaths":        "/var/log/gale",
	}
	for k, v := range want {
		if got := strings.Join(s[k], " "); got != v {
			t.Errorf("%s=%q, want %q", k, got, v)
		}
	}
	dropIn, err := os.ReadFile(dropInFile)
	if err != nil {
		t.Fatal(err)
	}
	d := unitSettings(t, dropIn)
	if got := d["Type"]; len(got) != 1 || got[0] != "notify-reload" {
		t.Errorf("drop-in Type=%q, want notify-reload", got)
	}
	// Type=notify-reload sends SIGHUP itself: the drop-in must clear the
	// unit's ExecReload (an empty assignment), or gale gets two.
	if got := d["ExecReload"]; len(got) != 1 || got[0] != "" {
		t.Errorf("drop-in ExecReload=%q, want one empty assignment", got)
	}
	if got := strings.Join(s["ExecStartPre"], " "); !regexp.MustCompile(`/gale validate -c \S+$`).MatchString(got) {
		t.Errorf("ExecStartPre=%q, want gale validate -c FILE", got)
	}
	if got := strings.Join(s["ExecStart"], " "); !strings.Contains(got, "/gale serve -c ") {
		t.Errorf("ExecStart=%q, want gale serve -c FILE", got)
	}
	if n, err := strconv.Atoi(strings.Join(s["LimitNOFILE"], "")); err != nil || n < 65536 {
		t.Errorf("LimitNOFILE=%v, want a number of at least 65536", s["LimitNOFILE"])
	}
	stop, err := time.ParseDuration(strings.Join(s["TimeoutStopSec"], ""))
	if err != nil {
		t.Fatalf("TimeoutStopSec=%v: %v", s["TimeoutStopSec"], err)
	}
	cfg, err := config.Parse([]byte("listen: [\"127.0.0.1:0\"]\nroutes: [{path: /, respond: {}}]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if stop <= cfg.Server.Timeouts.Shutdown {
		t.Errorf("TimeoutStopSec=%s is not above the default server.timeouts.shutdown (%s)", stop, cfg.Server.Timeouts.Shutdown)
	}
}

// TestSystemdUnitVerifies runs systemd-analyze verify on the example unit,
// with ExecStart pointing at a built gale, and fails on any output: the
// unit must verify clean on every systemd from 252 (Debian 12). The unit is
// verified again with its notify-reload drop-in next to it (verify reads
// NAME.service.d/); systemd before 253 does not know Type=notify-reload, so
// there exactly that one complaint is expected, which also proves the
// drop-in was read. It skips where systemd-analyze is not installed.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (apt-get install systemd); the unit was not verified")
	}
	bin := galeBinary(t)
	data, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	unit := filepath.Join(dir, "gale.service")
	if err := os.WriteFile(unit, bytes.ReplaceAll(data, []byte("/usr/local/bin/gale"), []byte(bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	verify := func() string {
		out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
		if err != nil {
			t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out := verify(); out != "" {
		t.Errorf("systemd-analyze verify %s printed:\n%s", unitFile, out)
	}

	version := 0
	if out, err := exec.Command(analyze, "--version").Output(); err == nil {
		if m := regexp.MustCompile(`^systemd (\d+)`).FindSubmatch(out); m != nil {
			version, _ = strconv.Atoi(string(m[1]))
		}
	}
	dropIn, err := os.ReadFile(dropInFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(unit+".d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(unit+".d", "notify-reload.conf"), dropIn, 0o644); err != nil {
		t.Fatal(err)
	}
	out := verify()
	switch {
	case version >= 253 && out != "":
		t.Errorf("systemd %d: systemd-analyze verify with %s printed:\n%s", version, dropInFile, out)
	case version > 0 && version < 253:
		want := "Failed to parse service type, ignoring: notify-reload"
		if !strings.Contains(out, "notify-reload.conf:") || !strings.HasSuffix(out, want) || strings.Contains(out, "\n") {
			t.Errorf("systemd %d: systemd-analyze verify with %s printed:\n%s\nwant the one line ...%s", version, dropInFile, out, want)
		}
	}
}
