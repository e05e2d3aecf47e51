package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// errWrkOutput is returned when wrk's output lacks the request count.
var errWrkOutput = errors.New("bench: unrecognised wrk output")

// wrkResult is what the harness reads from one wrk run (`--latency`).
type wrkResult struct {
	Requests     int64              `json:"requests"`         // completed requests
	DurationSec  float64            `json:"duration_s"`       // wrk's measured duration
	ReqPerSec    float64            `json:"req_per_s"`        // wrk's Requests/sec
	LatencyUs    map[string]float64 `json:"latency_us"`       // percentile ("50", "75", "90", "99") -> µs
	LatencyAvgUs float64            `json:"latency_avg_us"`   // mean latency
	LatencyMaxUs float64            `json:"latency_max_us"`   // max latency
	SockConnect  int64              `json:"sock_err_connect"` // socket errors by kind
	SockRead     int64              `json:"sock_err_read"`
	SockWrite    int64              `json:"sock_err_write"`
	SockTimeout  int64              `json:"sock_err_timeout"`
	Non2xx       int64              `json:"non_2xx_3xx"` // wrk's "Non-2xx or 3xx responses"
}

// SocketErrors returns the sum of all socket error counts.
func (r wrkResult) SocketErrors() int64 {
	return r.SockConnect + r.SockRead + r.SockWrite + r.SockTimeout
}

var (
	reWrkRequests = regexp.MustCompile(`(\d+) requests in ([0-9.]+)(us|ms|s|m|h)`)
	reWrkRate     = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	reWrkSocket   = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	reWrkNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	reWrkPct      = regexp.MustCompile(`^\s*([0-9.]+)%\s+([0-9.]+)(us|ms|s|m|h)\s*$`)
	reWrkLatency  = regexp.MustCompile(`^\s*Latency\s+([0-9.]+)(us|ms|s|m|h)\s+[0-9.]+(?:us|ms|s|m|h)\s+([0-9.]+)(us|ms|s|m|h)`)
)

// durationUs converts a wrk time value with its unit to microseconds.
func durationUs(v float64, unit string) float64 {
	switch unit {
	case "us":
		return v
	case "ms":
		return v * 1e3
	case "s":
		return v * 1e6
	case "m":
		return v * 60e6
	case "h":
		return v * 3600e6
	}
	return v
}

// parseWrk reads wrk's text output (run with --latency). Socket errors and
// non-2xx counts are printed by wrk only when non-zero, so their absence
// means zero.
func parseWrk(out string) (wrkResult, error) {
	r := wrkResult{LatencyUs: map[string]float64{}}
	m := reWrkRequests.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("%w: %q", errWrkOutput, firstLines(out, 3))
	}
	r.Requests, _ = strconv.ParseInt(m[1], 10, 64)
	d, _ := strconv.ParseFloat(m[2], 64)
	r.DurationSec = durationUs(d, m[3]) / 1e6
	if m := reWrkRate.FindStringSubmatch(out); m != nil {
		r.ReqPerSec, _ = strconv.ParseFloat(m[1], 64)
	} else if r.DurationSec > 0 {
		r.ReqPerSec = float64(r.Requests) / r.DurationSec
	}
	if m := reWrkSocket.FindStringSubmatch(out); m != nil {
		r.SockConnect, _ = strconv.ParseInt(m[1], 10, 64)
		r.SockRead, _ = strconv.ParseInt(m[2], 10, 64)
		r.SockWrite, _ = strconv.ParseInt(m[3], 10, 64)
		r.SockTimeout, _ = strconv.ParseInt(m[4], 10, 64)
	}
	if m := reWrkNon2xx.FindStringSubmatch(out); m != nil {
		r.Non2xx, _ = strconv.ParseInt(m[1], 10, 64)
	}
	inDist := false
	for _, line := range strings.Split(out, "\n") {
		if m := reWrkLatency.FindStringSubmatch(line); m != nil && !inDist {
			avg, _ := strconv.ParseFloat(m[1], 64)
			mx, _ := strconv.ParseFloat(m[3], 64)
			r.LatencyAvgUs = durationUs(avg, m[2])
			r.LatencyMaxUs = durationUs(mx, m[4])
			continue
		}
		if strings.Contains(line, "Latency Distribution") {
			inDist = true
			continue
		}
		if inDist {
			m := reWrkPct.FindStringSubmatch(line)
			if m == nil {
				inDist = false
				continue
			}
			v, _ := strconv.ParseFloat(m[2], 64)
			key := strings.TrimSuffix(strings.TrimSuffix(m[1], ".000"), ".00")
			r.LatencyUs[key] = durationUs(v, m[3])
		}
	}
	return r, nil
}

// firstLines returns up to n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " / ")
}

// wrkArgs builds wrk's command line (without the taskset prefix).
func wrkArgs(bin string, threads, connections, seconds int, w workload, url string) []string {
	args := []string{bin, "-t", strconv.Itoa(threads), "-c", strconv.Itoa(connections),
		"-d", strconv.Itoa(seconds) + "s", "--timeout", "5s", "--latency"}
	if w.Gzip {
		args = append(args, "-H", "Accept-Encoding: gzip")
	}
	if w.Close {
		args = append(args, "-H", "Connection: close")
	}
	return append(args, url)
}
