package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gale/admin"
	"gale/app"
	"gale/config"
)

// The commands that control a running gale: reload, stop and status.
// Each reads the config file (-c, default ./gale.yaml) to find the
// server: its admin API, else (reload and stop, also when the API does
// not answer) its pid_file.

const (
	reloadUsage = "usage: gale reload [-c FILE]\n" +
		"  apply FILE (default ./gale.yaml) to the running server: through its admin API, else SIGHUP to the pid in pid_file\n"
	stopUsage = "usage: gale stop [-c FILE]\n" +
		"  stop the running server gracefully and wait until it has exited: through its admin API, else SIGTERM to the pid in pid_file\n"
	statusUsage = "usage: gale status [-c FILE] [--json]\n" +
		"  print the running server's version, uptime, connections and config file (admin API)\n"
)

// controlFlags parses the -c flag of a control command and loads the
// config it names; the exit code is meaningful when ok is false.
func controlFlags(name, usage string, args []string, stdout, stderr io.Writer, extra func(*flag.FlagSet)) (cfg *config.Config, data []byte, code int, ok bool) {
	fs := newFlags(name, stderr)
	file := fs.String("c", "", "the running server's config file (default ./gale.yaml)")
	if extra != nil {
		extra(fs)
	}
	if code, ok := parseFlags(fs, args, usage, stdout, stderr); !ok {
		return nil, nil, code, false
	}
	if fs.NArg() > 0 {
		fmt.Fprint(stderr, usage)
		return nil, nil, 2, false
	}
	if *file == "" {
		*file = "gale.yaml"
	}
	data, err := config.ReadFile(*file)
	if err == nil {
		cfg, err = config.Parse(data, *file)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, nil, 1, false
	}
	return cfg, data, 0, true
}

// cmdReload applies the config file to the running server.
func cmdReload(args []string, stdout, stderr io.Writer) int {
	cfg, data, code, ok := controlFlags("reload", reloadUsage, args, stdout, stderr, nil)
	if !ok {
		return code
	}
	if cfg.Admin.Network == "" {
		return hupPID(cfg, stdout, stderr)
	}
	c, err := admin.NewClient(cfg.Admin)
	if err != nil {
		fmt.Fprintf(stderr, "gale reload: %v\n", err)
		return 1
	}
	resp, err := c.Do(http.MethodPost, "/load?file="+url.QueryEscape(cfg.File), data, nil)
	if err != nil && cfg.PIDFile != "" {
		// The running server may predate its admin section (it takes
		// a restart): the pid file still reaches it.
		fmt.Fprintf(stderr, "gale reload: %v; sending SIGHUP through pid_file instead\n", err)
		return hupPID(cfg, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gale reload: %v\n", err)
		return 1
	}
	if resp.Status != http.StatusOK {
		fmt.Fprintf(stderr, "gale reload: the running config was kept (%d):\n%s", resp.Status, resp.Body)
		return 1
	}
	fmt.Fprint(stdout, string(resp.Body))
	return 0
}

// cmdStop stops the running server and waits until its process is gone.
func cmdStop(args []string, stdout, stderr io.Writer) int {
	cfg, _, code, ok := controlFlags("stop", stopUsage, args, stdout, stderr, nil)
	if !ok {
		return code
	}
	deadline := cfg.Server.Timeouts.Drain + cfg.Server.Timeouts.Shutdown + 15*time.Second
	if cfg.Admin.Network == "" {
		return stopPID(cfg, deadline, stdout, stderr)
	}
	c, err := admin.NewClient(cfg.Admin)
	if err != nil {
		fmt.Fprintf(stderr, "gale stop: %v\n", err)
		return 1
	}
	resp, err := c.Do(http.MethodPost, "/stop", nil, nil)
	if err != nil && cfg.PIDFile != "" {
		fmt.Fprintf(stderr, "gale stop: %v; sending SIGTERM through pid_file instead\n", err)
		return stopPID(cfg, deadline, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gale stop: %v\n", err)
		return 1
	}
	var ans struct {
		PID int `json:"pid"`
	}
	if resp.Status != http.StatusAccepted || json.Unmarshal(resp.Body, &ans) != nil || ans.PID <= 0 {
		fmt.Fprintf(stderr, "gale stop: the server answered %d: %s\n", resp.Status, resp.Body)
		return 1
	}
	return waitGone(ans.PID, deadline, stdout, stderr)
}

// stopPID sends SIGTERM to the pid in cfg's pid_file and waits for the
// process to exit, for at most d.
func stopPID(cfg *config.Config, d time.Duration, stdout, stderr io.Writer) int {
	pid, err := readPID(cfg)
	if err == nil {
		err = syscall.Kill(pid, syscall.SIGTERM)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gale stop: %v\n", err)
		return 1
	}
	return waitGone(pid, d, stdout, stderr)
}

// waitGone waits until process pid has exited, for at most d.
func waitGone(pid int, d time.Duration, stdout, stderr io.Writer) int {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	end := time.Now().Add(d)
	for running(pid) {
		if time.Now().After(end) {
			fmt.Fprintf(stderr, "gale stop: process %d still runs after %s\n", pid, d)
			return 1
		}
		<-tick.C
	}
	fmt.Fprintf(stdout, "stopped (pid %d)\n", pid)
	return 0
}

// running reports whether process pid runs: it exists and is not a
// zombie (exited, not yet reaped by its parent).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no procfs: the signal test is all there is
	}
	// "PID (COMM) STATE ...": COMM may hold spaces and parentheses.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}

// hupPID sends SIGHUP to the pid in cfg's pid_file (reload without an
// admin API).
func hupPID(cfg *config.Config, stdout, stderr io.Writer) int {
	pid, err := readPID(cfg)
	if err == nil {
		err = syscall.Kill(pid, syscall.SIGHUP)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gale reload: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "sent SIGHUP to pid %d (its log says whether the config was taken)\n", pid)
	return 0
}

// readPID reads cfg's pid_file.
func readPID(cfg *config.Config) (int, error) {
	if cfg.PIDFile == "" {
		return 0, errors.New("the config has neither admin.listen nor pid_file: there is no way to reach the server")
	}
	b, err := os.ReadFile(cfg.PIDFile)
	if err != nil {
		return 0, fmt.Errorf("pid_file: %w (is gale running?)", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid_file %s: expected a process ID, got %q", cfg.PIDFile, strings.TrimSpace(string(b)))
	}
	return pid, nil
}

// cmdStatus prints the running server's summary.
func cmdStatus(args []string, stdout, stderr io.Writer) int {
	var asJSON *bool
	cfg, _, code, ok := controlFlags("status", statusUsage, args, stdout, stderr, func(fs *flag.FlagSet) {
		asJSON = fs.Bool("json", false, "print the API's JSON as it came")
	})
	if !ok {
		return code
	}
	c, err := admin.NewClient(cfg.Admin)
	if err != nil {
		fmt.Fprintf(stderr, "gale status: %v (gale status needs the admin API)\n", err)
		return 1
	}
	resp, err := c.Do(http.MethodGet, "/status", nil, nil)
	if err != nil {
		fmt.Fprintf(stderr, "gale status: %v\n", err)
		return 1
	}
	var st app.Status
	if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &st) != nil {
		fmt.Fprintf(stderr, "gale status: the server answered %d: %s\n", resp.Status, resp.Body)
		return 1
	}
	if *asJSON {
		fmt.Fprint(stdout, string(resp.Body))
		return 0
	}
	printStatus(stdout, st)
	return 0
}

// printStatus writes st as aligned "name: value" lines.
func printStatus(w io.Writer, st app.Status) {
	file := st.ConfigFile
	if file == "" {
		file = "(none: started from flags)"
	} else if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, file); err == nil && !strings.HasPrefix(rel, "..") {
			file = rel
		}
	}
	state := "running"
	if st.Draining {
		state = "stopping"
	}
	lines := [][2]string{
		{"state", state},
		{"version", st.Version},
		{"pid", strconv.Itoa(st.PID)},
		{"started", st.Started.UTC().Format(time.RFC3339) + " (up " + st.Uptime + ")"},
		{"config", file},
		{"listen", strings.Join(st.Listen, " ")},
		{"routes", strconv.Itoa(st.Routes)},
		{"connections", strconv.FormatInt(st.Connections, 10)},
		{"requests", strconv.FormatUint(st.Requests, 10)},
		{"reloads", fmt.Sprintf("%d (%d refused)", st.Reloads, st.ReloadFails)},
		{"upstreams", fmt.Sprintf("%d (%d out of service)", st.Upstreams, st.Unhealthy)},
		{"file cache", fmt.Sprintf("%d entries, %d bytes", st.CacheFiles, st.CacheBytes)},
	}
	for _, l := range lines {
		fmt.Fprintf(w, "%-12s %s\n", l[0]+":", l[1])
	}
}
