package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
