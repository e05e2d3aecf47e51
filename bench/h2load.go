package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// h2RequestsPerSecond sizes an h2load run when -h2-requests is 0: this
// many requests per -seconds (300,000 at the default 5 s), so a run lasts
// about as long as a wrk run for a server answering about this fast.
const h2RequestsPerSecond = 60000

// Sentinel errors of the h2load readers.
var (
	errH2loadOutput = errors.New("bench: unrecognised h2load output")
	errNoH2         = errors.New("bench: no HTTP/2 negotiated")
	errH2Failed     = errors.New("bench: not every request succeeded with a 2xx")
)

// h2loadResult is what the harness reads from one h2load run: its summary
// on stdout and, from --log-file, one line per request.
type h2loadResult struct {
	Requests     int64              `json:"requests"`   // requested (-n)
	Started      int64              `json:"started"`    // streams opened
	Done         int64              `json:"done"`       // streams closed
	Succeeded    int64              `json:"succeeded"`  // 2xx or 3xx, as h2load counts
	Failed       int64              `json:"failed"`     // not succeeded
	Errored      int64              `json:"errored"`    // failed for an error of the client or the connection
	Timeout      int64              `json:"timeout"`    // failed by a timeout
	Status       [4]int64           `json:"status"`     // responses by class: 2xx, 3xx, 4xx, 5xx
	DurationSec  float64            `json:"duration_s"` // "finished in", from the first connection to the last response
	ReqPerSec    float64            `json:"req_per_s"`
	Protocol     string             `json:"protocol"`              // "Application protocol:" (h2 or h2c), "" when none was negotiated
	TLSVersion   string             `json:"tls_version,omitempty"` // "TLS Protocol:"
	Cipher       string             `json:"cipher,omitempty"`      // "Cipher:"
	TempKey      string             `json:"temp_key,omitempty"`    // "Server Temp Key:"
	NoProtocol   bool               `json:"no_protocol,omitempty"` // h2load printed "No protocol negotiated"
	RequestUs    h2Spread           `json:"time_for_request_us"`   // per-request times, as h2load summarises them
	ConnectUs    h2Spread           `json:"time_for_connect_us"`
	FirstByteUs  h2Spread           `json:"time_to_first_byte_us"` // per connection: from connecting to its first response byte
	LatencyUs    map[string]float64 `json:"latency_us"`            // percentiles ("50", "75", "90", "99") of --log-file's request times
	LoggedCount  int64              `json:"logged_requests"`       // lines in --log-file
	LoggedNon2xx int64              `json:"logged_non_2xx"`        // of which had a status outside 200-299
}

// h2Spread is one row of h2load's "min max mean sd" table, in µs.
type h2Spread struct {
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
}

var (
	reH2Finished = regexp.MustCompile(`finished in ([0-9.]+)(us|ms|s|m|h), ([0-9.]+) req/s`)
	reH2Requests = regexp.MustCompile(`requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout`)
	reH2Status   = regexp.MustCompile(`status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx`)
	reH2Spread   = regexp.MustCompile(`^(time for request|time for connect|time to 1st byte):\s+([0-9.]+)(us|ms|s|m|h)\s+([0-9.]+)(us|ms|s|m|h)\s+([0-9.]+)(us|ms|s|m|h)\s+([0-9.]+)(us|ms|s|m|h)`)
	reH2Field    = regexp.MustCompile(`(?m)^(TLS Protocol|Cipher|Server Temp Key|Application protocol): (.*)$`)
)

// parseH2load reads h2load's text output. h2load exits 0 even when every
// request failed, so the counts, not the exit status, say how a run went.
func parseH2load(out string) (h2loadResult, error) {
	var r h2loadResult
	m := reH2Finished.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("%w: %q", errH2loadOutput, firstLines(out, 3))
	}
	d, _ := strconv.ParseFloat(m[1], 64)
	r.DurationSec = durationUs(d, m[2]) / 1e6
	r.ReqPerSec, _ = strconv.ParseFloat(m[3], 64)
	m = reH2Requests.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("%w: no request counts", errH2loadOutput)
	}
	for i, p := range []*int64{&r.Requests, &r.Started, &r.Done, &r.Succeeded, &r.Failed, &r.Errored, &r.Timeout} {
		*p, _ = strconv.ParseInt(m[i+1], 10, 64)
	}
	if m := reH2Status.FindStringSubmatch(out); m != nil {
		for i := range r.Status {
			r.Status[i], _ = strconv.ParseInt(m[i+1], 10, 64)
		}
	}
	fields := map[string]*string{"TLS Protocol": &r.TLSVersion, "Cipher": &r.Cipher,
		"Server Temp Key": &r.TempKey, "Application protocol": &r.Protocol}
	for _, f := range reH2Field.FindAllStringSubmatch(out, -1) {
		if p := fields[f[1]]; p != nil {
			*p = strings.TrimSpace(f[2])
		}
	}
	r.NoProtocol = strings.Contains(out, "No protocol negotiated")
	spreads := map[string]*h2Spread{"time for request": &r.RequestUs, "time for connect": &r.ConnectUs,
		"time to 1st byte": &r.FirstByteUs}
	for _, line := range strings.Split(out, "\n") {
		m := reH2Spread.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		var s h2Spread
		for i, p := range []*float64{&s.Min, &s.Max, &s.Mean, &s.SD} {
			v, _ := strconv.ParseFloat(m[2+2*i], 64)
			*p = durationUs(v, m[3+2*i])
		}
		if p := spreads[m[1]]; p != nil {
			*p = s
		}
	}
	return r, nil
}

// verify says whether the run measured what it claims: HTTP/2 of the
// wanted kind ("h2" over TLS 1.3, or "h2c"), and every request answered
// with a 2xx. A run that negotiated no HTTP/2 is errNoH2, so that a server
// without HTTP/2 is reported as not supporting it rather than as failing.
func (r h2loadResult) verify(proto string) error {
	if proto == "h2c" && r.Succeeded == 0 && r.Status == [4]int64{} {
		// h2load prints "Application protocol: h2c" before it sends a
		// byte; a server without h2c answers the preface with no frame.
		return fmt.Errorf("%w: no response over h2c with prior knowledge; %d of %d requests errored", errNoH2, r.Errored, r.Requests)
	}
	if r.Protocol != proto {
		how := "no protocol negotiated"
		if r.Protocol != "" {
			how = "negotiated " + r.Protocol
		}
		return fmt.Errorf("%w: h2load %s (wanted %s); %d of %d requests succeeded", errNoH2, how, proto, r.Succeeded, r.Requests)
	}
	if proto == "h2" && r.TLSVersion != "TLSv1.3" {
		return fmt.Errorf("bench: h2load negotiated %q, want TLSv1.3", r.TLSVersion)
	}
	if r.Succeeded != r.Requests || r.Status[0] != r.Requests || r.Failed != 0 {
		return fmt.Errorf("%w: %d requested, %d succeeded, %d failed (%d errored, %d timeout), status %d 2xx, %d 3xx, %d 4xx, %d 5xx",
			errH2Failed, r.Requests, r.Succeeded, r.Failed, r.Errored, r.Timeout, r.Status[0], r.Status[1], r.Status[2], r.Status[3])
	}
	if r.LoggedCount != r.Requests || r.LoggedNon2xx != 0 {
		return fmt.Errorf("%w: --log-file holds %d requests of %d, %d outside 2xx", errH2Failed, r.LoggedCount, r.Requests, r.LoggedNon2xx)
	}
	return nil
}

// latencyPercentiles are the percentiles the report keys by name, as wrk
// prints them.
var latencyPercentiles = []struct {
	key string
	p   float64
}{{"50", 50}, {"75", 75}, {"90", 90}, {"99", 99}}

// readH2Log reads h2load's --log-file (tab-separated: start time in µs
// since the epoch, status code, µs from the request's start to the end of
// its response) and returns the latencies' percentiles in µs by
// latencyPercentiles key, with how many lines there were and how many had
// a status outside 2xx.
func readH2Log(rd io.Reader) (pcts map[string]float64, n, non2xx int64, err error) {
	var lat []float64
	sc := bufio.NewScanner(rd)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 3 {
			return nil, 0, 0, fmt.Errorf("%w: log line %q", errH2loadOutput, sc.Text())
		}
		status, err1 := strconv.Atoi(f[1])
		us, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			return nil, 0, 0, fmt.Errorf("%w: log line %q", errH2loadOutput, sc.Text())
		}
		n++
		if status < 200 || status > 299 {
			non2xx++
		}
		lat = append(lat, us)
	}
	if err := sc.Err(); err != nil {
		return nil, 0, 0, err
	}
	slices.Sort(lat)
	pcts = map[string]float64{}
	for _, q := range latencyPercentiles {
		if v := percentile(lat, q.p); !math.IsNaN(v) {
			pcts[q.key] = v
		}
	}
	return pcts, n, non2xx, nil
}

// percentile returns the nearest-rank p-th percentile of sorted values
// (NaN when there are none).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// loadResult turns an h2load run into the figures the report reads for
// every load generator. Requests that did not succeed with a 2xx count as
// non-2xx; errored and timed-out ones also as read and timeout errors.
func (r h2loadResult) loadResult() wrkResult {
	return wrkResult{Requests: r.Status[0], DurationSec: r.DurationSec, ReqPerSec: r.ReqPerSec, LatencyUs: r.LatencyUs,
		LatencyAvgUs: r.RequestUs.Mean, LatencyMaxUs: r.RequestUs.Max,
		SockRead: r.Errored, SockTimeout: r.Timeout, Non2xx: r.Requests - r.Status[0]}
}

// h2loadArgs builds h2load's command line (without the taskset prefix).
// Only h2 is offered in ALPN, so a server without HTTP/2 over TLS cannot
// be measured on HTTP/1.1 by accident; h2c is spoken with prior knowledge
// (RFC 9113 section 3.3). Every server is offered the same TLS 1.3 suite.
func h2loadArgs(bin string, threads, clients, streams int, requests int64, logFile, url string) []string {
	return []string{bin, "-t", strconv.Itoa(threads), "-c", strconv.Itoa(clients), "-m", strconv.Itoa(streams),
		"-n", strconv.FormatInt(requests, 10), "--npn-list=h2", "--tls13-ciphers=TLS_AES_128_GCM_SHA256",
		"--log-file=" + logFile, url}
}

// h2loadVersion returns h2load's version line.
func h2loadVersion(bin string) string {
	if bin == "" {
		return ""
	}
	return commandOutput(bin, "--version")
}

// removeQuietly deletes a file the harness no longer needs.
func removeQuietly(path string) { _ = os.Remove(path) }
