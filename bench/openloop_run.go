package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// openLoopArgs builds the generator's command line (without the taskset
// prefix) for one run of seconds at the job's rate.
func openLoopArgs(j job, k loadKnobs, rawURL string, seconds int, host string) []string {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	addr := rawURL
	if u, err := url.Parse(rawURL); err == nil {
		addr = u.Host
	}
	paths := j.w.Mix
	if len(paths) == 0 {
		paths = []weightedPath{{Path: j.w.Path, Weight: 1}}
	}
	args := []string{exe, openLoopCmd, "-addr", addr, "-paths", formatPaths(paths),
		"-rate", strconv.FormatFloat(j.rate, 'f', -1, 64), "-duration", strconv.Itoa(seconds) + "s",
		"-connections", strconv.Itoa(k.conns), "-timeout", "5s"}
	if host != "" {
		args = append(args, "-host", host)
	}
	if j.w.Gzip {
		args = append(args, "-gzip")
	}
	if j.w.Close {
		args = append(args, "-close")
	}
	return args
}

// runOpenLoopProc runs the open-loop generator pinned to the client CPUs
// and reads its JSON. It returns the full command line and the
// generator's CPU seconds.
func (r *runner) runOpenLoopProc(argv []string) (openLoopResult, []string, float64, error) {
	full := append([]string{"taskset", "-c", r.opts.ClientCPUs}, argv...)
	ctx, cancel := context.WithTimeout(r.ctx, time.Duration(r.opts.Seconds+40)*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	var out, errOut bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errOut
	if err := cmd.Run(); err != nil {
		return openLoopResult{}, full, 0, fmt.Errorf("%v: %s", err, firstLines(errOut.String(), 3))
	}
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	var res openLoopResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return res, full, cpu, fmt.Errorf("reading its output: %v", err)
	}
	if res.Completed == 0 {
		return res, full, cpu, fmt.Errorf("no request completed (%d errors of %d due)", res.Errors, res.Due)
	}
	return res, full, cpu, nil
}
