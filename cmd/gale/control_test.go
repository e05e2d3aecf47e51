package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runGale runs the built binary with args to its end and returns its
// exit code and output.
func runGale(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(galeBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// waitExit waits (up to 10 s) for p to exit and requires exit code 0.
func waitExit(t *testing.T, p *galeProc) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v; stderr: %s", err, p.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("gale did not exit")
	}
}

// gale status, reload and stop through the admin API.
func TestControlCommandsAdmin(t *testing.T) {
	dir := t.TempDir()
	listen := freeAddr(t)
	adminYAML := "admin: {listen: unix:admin.sock}\npid_file: gale.pid"
	file := adminSite(t, dir, listen, adminYAML, 1, "")
	p := startGale(t, "serve", "-c", file)

	code, out, errOut := runGale(t, "status", "-c", file)
	if code != 0 {
		t.Fatalf("gale status: %d %s%s", code, out, errOut)
	}
	for _, want := range []string{"state:       running", "version:     gale ", "pid:         " + strconv.Itoa(p.cmd.Process.Pid), "(up ", "config:      " + file, "connections: ", "listen:      " + listen, "routes:      2"} {
		if !strings.Contains(out, want) {
			t.Fatalf("gale status lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := runGale(t, "status", "-c", file, "--json"); code != 0 || !strings.Contains(out, `"uptime"`) {
		t.Fatalf("gale status --json: %d %s", code, out)
	}

	adminSite(t, dir, listen, adminYAML, 2, "")
	if code, out, errOut := runGale(t, "reload", "-c", file); code != 0 || !strings.Contains(out, "loaded") {
		t.Fatalf("gale reload: %d %s%s", code, out, errOut)
	}
	if _, got := body(t, p.base+"/v"); got != "v2" {
		t.Fatalf("after gale reload /v answers %q", got)
	}
	// An invalid file: its positioned errors, and the old config serves on.
	good := mustRead(t, file)
	bad := strings.Replace(good, `body: "v2"`, `body: "v3", status: 99`, 1)
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runGale(t, "reload", "-c", file)
	if code != 1 || !strings.Contains(errOut, file+":6:") || !strings.Contains(errOut, "routes[0].respond.status") {
		t.Fatalf("gale reload of an invalid file: %d %s%s", code, out, errOut)
	}
	if _, got := body(t, p.base+"/v"); got != "v2" {
		t.Fatalf("after a refused reload /v answers %q", got)
	}
	if err := os.WriteFile(file, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}

	if code, out, errOut := runGale(t, "stop", "-c", file); code != 0 || !strings.Contains(out, "stopped") {
		t.Fatalf("gale stop: %d %s%s", code, out, errOut)
	}
	waitExit(t, p)
	for _, f := range []string{"admin.sock", "gale.pid"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Fatalf("%s is still there after the stop: %v", f, err)
		}
	}
	if code, _, errOut := runGale(t, "status", "-c", file); code != 1 || !strings.Contains(errOut, "admin API at unix:admin.sock") {
		t.Fatalf("gale status with the server gone: %d %s", code, errOut)
	}
}

// Without an admin API gale reload sends SIGHUP and gale stop SIGTERM to
// the pid in pid_file; gale status says it needs the API. A file that
// names an API the running server has not opened (that takes a restart)
// reaches it through the pid file too.
func TestControlCommandsPIDFile(t *testing.T) {
	dir := t.TempDir()
	listen := freeAddr(t)
	file := adminSite(t, dir, listen, "pid_file: gale.pid", 1, "")
	p := startGale(t, "serve", "-c", file)
	if pid := strings.TrimSpace(mustRead(t, filepath.Join(dir, "gale.pid"))); pid != strconv.Itoa(p.cmd.Process.Pid) {
		t.Fatalf("pid file holds %q, want %d", pid, p.cmd.Process.Pid)
	}
	if code, _, errOut := runGale(t, "status", "-c", file); code != 1 || !strings.Contains(errOut, "needs the admin API") {
		t.Fatalf("gale status without an API: %d %s", code, errOut)
	}
	adminSite(t, dir, listen, "pid_file: gale.pid", 2, "")
	if code, out, errOut := runGale(t, "reload", "-c", file); code != 0 || !strings.Contains(out, "sent SIGHUP to pid") {
		t.Fatalf("gale reload: %d %s%s", code, out, errOut)
	}
	waitFor(t, func() bool { _, got := body(t, p.base+"/v"); return got == "v2" })
	adminSite(t, dir, listen, "admin: {listen: unix:admin.sock}\npid_file: gale.pid", 3, "")
	if code, out, errOut := runGale(t, "reload", "-c", file); code != 0 || !strings.Contains(out, "sent SIGHUP to pid") || !strings.Contains(errOut, "sending SIGHUP through pid_file instead") {
		t.Fatalf("gale reload naming an API not open: %d %s%s", code, out, errOut)
	}
	waitFor(t, func() bool { _, got := body(t, p.base+"/v"); return got == "v3" })
	if code, out, errOut := runGale(t, "stop", "-c", file); code != 0 || !strings.Contains(out, "stopped") {
		t.Fatalf("gale stop: %d %s%s", code, out, errOut)
	}
	waitExit(t, p)
	if _, err := os.Lstat(filepath.Join(dir, "gale.pid")); !os.IsNotExist(err) {
		t.Fatalf("the pid file is still there after the stop: %v", err)
	}
	if code, _, errOut := runGale(t, "reload", "-c", file); code != 1 || !strings.Contains(errOut, "is gale running?") {
		t.Fatalf("gale reload with the server gone: %d %s", code, errOut)
	}
}

func mustRead(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
