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

const unitFile = "../../examples/systemd/gale.service"

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
// notifies (Type=notify-reload, which reloads with SIGHUP), validates the
// config before starting, and gives a graceful stop more time than
// server.timeouts.shutdown allows it.
func TestSystemdUnit(t *testing.T) {
	data, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	s := unitSettings(t, data)
	want := map[string]string{
		"Type":                  "notify-reload",
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
	if _, ok := s["ExecReload"]; ok {
		t.Error("ExecReload is set: Type=notify-reload sends SIGHUP itself and waits for READY=1")
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
// with ExecStart pointing at a built gale, and fails on any complaint. It
// skips where systemd-analyze is not installed. systemd before 253 does not
// know Type=notify-reload; that one complaint is expected there.
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
	unit := filepath.Join(t.TempDir(), "gale.service")
	if err := os.WriteFile(unit, bytes.ReplaceAll(data, []byte("/usr/local/bin/gale"), []byte(bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	version := 0
	if out, err := exec.Command(analyze, "--version").Output(); err == nil {
		if m := regexp.MustCompile(`^systemd (\d+)`).FindSubmatch(out); m != nil {
			version, _ = strconv.Atoi(string(m[1]))
		}
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch {
		case line == "":
		case version > 0 && version < 253 && strings.Contains(line, "Failed to parse service type, ignoring: notify-reload"):
			t.Logf("systemd %d predates Type=notify-reload (253): %s", version, line)
		default:
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}
}
