package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// openLoopCmd is the hidden subcommand that runs the open-loop load
// generator as its own process, pinned to the client CPUs like wrk.
const openLoopCmd = "_openloop"

// The generator sends requests at a fixed rate whatever the server does: the
// i-th request is due at start + i/rate, and its latency is measured from
// that intended time, not from when a connection was free to send it. A
// server that stalls therefore charges the stall to every request that
// should have been sent meanwhile (the correction for coordinated omission
// that wrk2 and HdrHistogram make), where a closed-loop generator such as
// wrk simply waits and records one slow request. Requests are spread over
// a fixed set of keep-alive connections without pipelining; when every
// connection is busy, due requests queue in the generator and the wait
// counts in their latency.

// openLoopResult is what one open-loop run reports (its JSON output).
type openLoopResult struct {
	Rate         float64            `json:"offered_rate"`    // requests per second offered
	Seconds      float64            `json:"seconds"`         // the schedule's length
	Connections  int                `json:"connections"`     // keep-alive connections
	Due          int64              `json:"due"`             // requests the schedule held
	Sent         int64              `json:"sent"`            // of which were written to a connection
	Completed    int64              `json:"completed"`       // answered with a whole response
	Non2xx       int64              `json:"non_2xx_3xx"`     // answered with a status of 400 or more
	Errors       int64              `json:"errors"`          // failed on the connection (reset, timeout, bad framing)
	Reconnects   int64              `json:"reconnects"`      // connections reopened after an error or Connection: close
	ElapsedSec   float64            `json:"elapsed_s"`       // from the first due time to the last response
	AchievedRate float64            `json:"achieved_rate"`   // Completed / max(Seconds, ElapsedSec)
	LatencyUs    map[string]float64 `json:"latency_us"`      // from the intended send time: "50", "90", "99", "99.9", "max"
	ServiceUs    map[string]float64 `json:"service_us"`      // from the actual send time (what a closed-loop tool reports)
	SendLagUs    map[string]float64 `json:"send_lag_us"`     // actual send time minus intended time
	Paths        []weightedPath     `json:"paths"`           // the request mix
	Host         string             `json:"host,omitempty"`  // Host header
	Gzip         bool               `json:"gzip,omitempty"`  // Accept-Encoding: gzip
	Timeout      float64            `json:"timeout_s"`       // per-request limit
	Unfinished   int64              `json:"unfinished"`      // due requests neither answered nor failed when the run ended
	LatencyMeanU float64            `json:"latency_mean_us"` // mean of LatencyUs' samples
	Samples      int                `json:"latency_samples"` // number of latencies recorded (Completed)
	Note         string             `json:"note,omitempty"`  // why the run ended early, if it did
}

// weightedPath is one request path of a mix with its relative weight.
type weightedPath struct {
	Path   string `json:"path"`
	Weight int    `json:"weight"`
}

// openLoopSpec is what the generator needs for one run.
type openLoopSpec struct {
	Addr        string
	Paths       []weightedPath
	Host        string
	Gzip        bool
	Close       bool
	Rate        float64
	Duration    time.Duration
	Connections int
	Timeout     time.Duration
}

// schedule returns the path index of each of n requests: a deterministic
// smooth weighted round-robin, so every run of a mix sends the same
// sequence and any window of it holds the paths in their proportions.
func schedule(paths []weightedPath, n int) []uint16 {
	out := make([]uint16, n)
	if len(paths) <= 1 {
		return out
	}
	total := 0
	for _, p := range paths {
		total += p.Weight
	}
	cur := make([]int, len(paths))
	for i := range out {
		best := 0
		for j, p := range paths {
			cur[j] += p.Weight
			if cur[j] > cur[best] {
				best = j
			}
		}
		cur[best] -= total
		out[i] = uint16(best)
	}
	return out
}

// buildRequests returns the wire form of each path's GET request.
func buildRequests(s openLoopSpec) [][]byte {
	host := s.Host
	if host == "" {
		host = s.Addr
	}
	out := make([][]byte, len(s.Paths))
	for i, p := range s.Paths {
		var b bytes.Buffer
		fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: gale-bench-openloop\r\n", p.Path, host)
		if s.Gzip {
			b.WriteString("Accept-Encoding: gzip\r\n")
		}
		if s.Close {
			b.WriteString("Connection: close\r\n")
		}
		b.WriteString("\r\n")
		out[i] = b.Bytes()
	}
	return out
}

// due is one scheduled request.
type due struct {
	at   time.Time
	path uint16
}

// sample is one finished request's timings, in nanoseconds.
type sample struct{ latency, service, lag int64 }

// runOpenLoop runs the schedule against s.Addr and returns its figures.
func runOpenLoop(s openLoopSpec) openLoopResult {
	res := openLoopResult{Rate: s.Rate, Seconds: s.Duration.Seconds(), Connections: s.Connections, Paths: s.Paths,
		Host: s.Host, Gzip: s.Gzip, Timeout: s.Timeout.Seconds()}
	n := int(math.Round(s.Rate * s.Duration.Seconds()))
	res.Due = int64(n)
	order := schedule(s.Paths, n)
	reqs := buildRequests(s)
	queue := make(chan due, n+1)
	var sent, completed, non2xx, errs, reconnects atomic.Int64
	var mu sync.Mutex
	var samples []sample
	var lastDone atomic.Int64
	start := time.Now().Add(20 * time.Millisecond)
	end := start.Add(s.Duration + s.Timeout)
	var wg sync.WaitGroup
	for c := 0; c < s.Connections; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &olConn{addr: s.Addr, timeout: s.Timeout}
			defer w.close()
			local := make([]sample, 0, n/max(s.Connections, 1)+16)
			for d := range queue {
				if time.Now().After(end) {
					continue // drain: the run is over
				}
				t0 := time.Now()
				status, closeAfter, err := w.do(reqs[d.path])
				t1 := time.Now()
				sent.Add(1)
				if err != nil {
					errs.Add(1)
					reconnects.Add(1)
					w.close()
					continue
				}
				completed.Add(1)
				if status >= 400 {
					non2xx.Add(1)
				}
				if closeAfter {
					reconnects.Add(1)
					w.close()
				}
				for done := t1.Sub(start).Nanoseconds(); ; {
					if prev := lastDone.Load(); prev >= done || lastDone.CompareAndSwap(prev, done) {
						break
					}
				}
				local = append(local, sample{latency: t1.Sub(d.at).Nanoseconds(), service: t1.Sub(t0).Nanoseconds(), lag: t0.Sub(d.at).Nanoseconds()})
			}
			mu.Lock()
			samples = append(samples, local...)
			mu.Unlock()
		}()
	}
	dispatch(queue, order, start, s.Rate)
	wg.Wait()
	res.Sent, res.Completed, res.Non2xx, res.Errors, res.Reconnects = sent.Load(), completed.Load(), non2xx.Load(), errs.Load(), reconnects.Load()
	res.Unfinished = res.Due - res.Sent
	res.ElapsedSec = float64(lastDone.Load()) / 1e9
	res.AchievedRate = float64(res.Completed) / math.Max(res.Seconds, res.ElapsedSec)
	res.Samples = len(samples)
	res.LatencyUs, res.ServiceUs, res.SendLagUs, res.LatencyMeanU = summarizeSamples(samples)
	return res
}

// dispatch hands each request to the connections at its due time and
// closes the queue. It runs on an OS thread of its own and sleeps with
// nanosleep(2): the Go runtime's timers wake a goroutine up to a
// millisecond late when the thread waits in the network poller, and that
// lateness would be charged to every request as latency.
func dispatch(queue chan<- due, order []uint16, start time.Time, rate float64) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(queue)
	interval := float64(time.Second) / rate
	for i := range order {
		at := start.Add(time.Duration(float64(i) * interval))
		if d := time.Until(at); d > 20*time.Microsecond {
			ts := syscall.NsecToTimespec(d.Nanoseconds())
			_ = syscall.Nanosleep(&ts, nil)
		}
		queue <- due{at: at, path: order[i]}
	}
}

// openLoopPercentiles are the percentiles an open-loop run reports.
var openLoopPercentiles = []string{"50", "90", "99", "99.9"}

// summarizeSamples returns the nearest-rank percentiles (and max) of each
// timing in µs, and the mean latency.
func summarizeSamples(ss []sample) (lat, svc, lag map[string]float64, mean float64) {
	pick := func(get func(sample) int64) map[string]float64 {
		vals := make([]float64, len(ss))
		for i, s := range ss {
			vals[i] = float64(get(s)) / 1e3
		}
		slices.Sort(vals)
		out := map[string]float64{}
		if len(vals) == 0 {
			return out
		}
		for _, p := range openLoopPercentiles {
			f, _ := strconv.ParseFloat(p, 64)
			out[p] = percentile(vals, f)
		}
		out["max"] = vals[len(vals)-1]
		return out
	}
	lat = pick(func(s sample) int64 { return s.latency })
	svc = pick(func(s sample) int64 { return s.service })
	lag = pick(func(s sample) int64 { return s.lag })
	var sum float64
	for _, s := range ss {
		sum += float64(s.latency) / 1e3
	}
	if len(ss) > 0 {
		mean = sum / float64(len(ss))
	}
	return lat, svc, lag, mean
}

// olConn is one keep-alive connection of the generator.
type olConn struct {
	addr     string
	timeout  time.Duration
	c        net.Conn
	br       *bufio.Reader
	deadline time.Time // the connection's current I/O deadline
}

func (w *olConn) close() {
	if w.c != nil {
		w.c.Close()
		w.c = nil
	}
}

// do sends one request and reads its whole response. It returns the
// status and whether the server asked to close the connection.
func (w *olConn) do(req []byte) (int, bool, error) {
	if w.c == nil {
		c, err := net.DialTimeout("tcp", w.addr, w.timeout)
		if err != nil {
			return 0, false, err
		}
		w.c, w.deadline = c, time.Time{}
		if w.br == nil {
			w.br = bufio.NewReaderSize(c, 64<<10)
		} else {
			w.br.Reset(c)
		}
	}
	// Moving the deadline costs a runtime timer update, so it is moved
	// only once half the limit has passed: every request still gets at
	// least half of -timeout, and at most all of it.
	if now := time.Now(); w.deadline.Sub(now) < w.timeout/2 {
		w.deadline = now.Add(w.timeout)
		_ = w.c.SetDeadline(w.deadline)
	}
	if _, err := w.c.Write(req); err != nil {
		return 0, false, err
	}
	return readResponse(w.br)
}

// errFraming is returned for a response the generator cannot delimit.
var errFraming = errors.New("openloop: bad response framing")

// readResponse reads one HTTP/1.1 response to a GET: status line, header
// fields, and a body delimited by Content-Length or chunked coding (RFC
// 9112 section 6). A body delimited by the connection's end is read to
// EOF and closes the connection.
func readResponse(br *bufio.Reader) (status int, closeAfter bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	f := bytes.Fields(line)
	if len(f) < 2 || !bytes.HasPrefix(f[0], []byte("HTTP/1.")) {
		return 0, false, errFraming
	}
	if status, err = strconv.Atoi(string(f[1])); err != nil {
		return 0, false, errFraming
	}
	length, chunked := int64(-1), false
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, false, errFraming
		}
		v = bytes.TrimSpace(v)
		switch strings.ToLower(string(k)) {
		case "content-length":
			if length, err = strconv.ParseInt(string(v), 10, 64); err != nil || length < 0 {
				return 0, false, errFraming
			}
		case "transfer-encoding":
			chunked = bytes.EqualFold(v, []byte("chunked"))
		case "connection":
			closeAfter = bytes.EqualFold(v, []byte("close"))
		}
	}
	switch {
	case status == 204 || status == 304 || status/100 == 1:
	case chunked:
		err = discardChunked(br)
	case length >= 0:
		_, err = br.Discard(int(length))
	default:
		_, err = io.Copy(io.Discard, br)
		closeAfter = true
	}
	return status, closeAfter, err
}

// discardChunked reads a chunked body and its trailer section.
func discardChunked(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		sz, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		n, err := strconv.ParseInt(string(bytes.TrimSpace(sz)), 16, 64)
		if err != nil || n < 0 {
			return errFraming
		}
		if n == 0 {
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return nil
				}
			}
		}
		if _, err := br.Discard(int(n) + 2); err != nil {
			return err
		}
	}
}

// parsePaths parses "path[=weight],..." (weight defaults to 1).
func parsePaths(s string) ([]weightedPath, error) {
	var out []weightedPath
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		p, err := parseWeightedPath(part)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no request path", errUsage)
	}
	return out, nil
}

// parseWeightedPath parses one "/path" or "/path=weight".
func parseWeightedPath(s string) (weightedPath, error) {
	p, w := s, 1
	if i := strings.LastIndexByte(s, '='); i > 0 {
		if n, err := strconv.Atoi(s[i+1:]); err == nil {
			p, w = s[:i], n
		}
	}
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, " \r\n\t") || w < 1 {
		return weightedPath{}, fmt.Errorf("%w: URL %q: want /path or /path=weight (weight at least 1)", errUsage, s)
	}
	return weightedPath{Path: p, Weight: w}, nil
}

// formatPaths is the inverse of parsePaths.
func formatPaths(ps []weightedPath) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.Path + "=" + strconv.Itoa(p.Weight)
	}
	return strings.Join(parts, ",")
}

// openLoopMain is `bench _openloop`: one run, its JSON on stdout.
func openLoopMain(args []string) int {
	fs := flag.NewFlagSet(openLoopCmd, flag.ContinueOnError)
	var s openLoopSpec
	fs.StringVar(&s.Addr, "addr", "", "host:port")
	paths := fs.String("paths", "/", "path[=weight],...")
	fs.StringVar(&s.Host, "host", "", "Host header (default: -addr)")
	fs.BoolVar(&s.Gzip, "gzip", false, "send Accept-Encoding: gzip")
	fs.BoolVar(&s.Close, "close", false, "send Connection: close")
	fs.Float64Var(&s.Rate, "rate", 1000, "requests per second")
	fs.DurationVar(&s.Duration, "duration", 5*time.Second, "length of the schedule")
	fs.IntVar(&s.Connections, "connections", 64, "keep-alive connections")
	fs.DurationVar(&s.Timeout, "timeout", 5*time.Second, "per-request limit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ps, err := parsePaths(*paths)
	if err != nil || s.Addr == "" || s.Rate <= 0 || s.Connections < 1 || s.Duration <= 0 {
		fmt.Fprintln(os.Stderr, "openloop: want -addr, -paths, a positive -rate, -duration and -connections:", err)
		return 2
	}
	s.Paths = ps
	// The dispatcher's thread sleeps in a system call: a second P keeps
	// the connections running meanwhile even on one client CPU.
	runtime.GOMAXPROCS(max(2, runtime.NumCPU()))
	res := runOpenLoop(s)
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

// loadResult turns an open-loop run into the figures the report reads for
// every load generator: the achieved rate, the corrected percentiles and
// the failures.
func (r openLoopResult) loadResult() wrkResult {
	lat := map[string]float64{}
	for _, p := range openLoopPercentiles {
		if v, ok := r.LatencyUs[p]; ok {
			lat[p] = v
		}
	}
	return wrkResult{Requests: r.Completed, DurationSec: math.Max(r.Seconds, r.ElapsedSec), ReqPerSec: r.AchievedRate,
		LatencyUs: lat, LatencyAvgUs: r.LatencyMeanU, LatencyMaxUs: r.LatencyUs["max"],
		SockRead: r.Errors, SockTimeout: r.Unfinished, Non2xx: r.Non2xx}
}
