package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
)

// wrkResult is what the sweep takes from wrk's output.
type wrkResult struct {
	requests int
	errors   int // socket errors of any kind, and non-2xx/3xx responses
}

var (
	wrkRequests = regexp.MustCompile(`(\d+) requests in`)
	wrkSockErr  = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	wrkNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

// runWrk runs wrk on CPU 1 against 127.0.0.1:port for seconds.
func runWrk(port, conns, seconds int) (wrkResult, string, error) {
	cmd := exec.Command("taskset", "-c", "1", "wrk", "-t1", fmt.Sprintf("-c%d", conns),
		fmt.Sprintf("-d%ds", seconds), fmt.Sprintf("http://127.0.0.1:%d/", port))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return wrkResult{}, string(out), fmt.Errorf("wrk: %w: %s", err, out)
	}
	r, err := parseWrk(string(out))
	return r, string(out), err
}

func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	m := wrkRequests.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("wrk: no request count in %q", out)
	}
	r.requests, _ = strconv.Atoi(m[1])
	if m := wrkSockErr.FindStringSubmatch(out); m != nil {
		for _, v := range m[1:] {
			n, _ := strconv.Atoi(v)
			r.errors += n
		}
	}
	if m := wrkNon2xx.FindStringSubmatch(out); m != nil {
		n, _ := strconv.Atoi(m[1])
		r.errors += n
	}
	return r, nil
}
