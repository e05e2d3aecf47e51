package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Requests and connections per event loop, read from gale itself. gale
// serves Prometheus metrics on a listener of its own (metrics.listen),
// and its per-loop families carry a loop label (loops are numbered in
// the order they took their first connection). The bench gives every gale
// it starts such a listener, scrapes it right before and right after the
// measured run, and keeps the differences: what each loop did during the
// run, and nothing of the checks or the warm-up.

// Families read from a scrape: counters with a loop label.
const (
	famRequests = "gale_requests_total"
	famAccepted = "gale_connections_accepted_total"
)

// loopSample is one loop's counters in one scrape.
type loopSample struct {
	Requests, Accepted float64
}

// loopRun is what one event loop did during a measured run.
type loopRun struct {
	Loop     string  `json:"loop"`     // gale's loop label
	Requests uint64  `json:"requests"` // requests answered during the run
	Accepted uint64  `json:"accepted"` // connections accepted during the run
	Share    float64 `json:"share"`    // of all loops' requests during the run
}

// scrapeLoops fetches url (gale's metrics) and returns its per-loop
// counters.
func scrapeLoops(url string) (map[string]loopSample, error) {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s", resp.Status)
	}
	return parseLoopMetrics(io.LimitReader(resp.Body, 8<<20))
}

// parseLoopMetrics reads Prometheus's text format (version 0.0.4) and
// returns the requests and accepted connections of every loop label. Other
// families are skipped unread; a malformed sample of one of the two is an
// error, and so is a scrape that declares neither (not gale's metrics).
func parseLoopMetrics(r io.Reader) (map[string]loopSample, error) {
	out := map[string]loopSample{}
	seen := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "# TYPE ") {
			f := strings.Fields(line)
			seen = seen || len(f) >= 3 && (f[2] == famRequests || f[2] == famAccepted)
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := sampleName(line)
		if name != famRequests && name != famAccepted {
			continue
		}
		seen = true
		labels, value, err := parseSample(rest)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %s: %v", n, name, err)
		}
		loop, ok := labels["loop"]
		if !ok {
			return nil, fmt.Errorf("metrics line %d: %s without a loop label", n, name)
		}
		s := out[loop]
		if name == famRequests {
			s.Requests += value
		} else {
			s.Accepted += value
		}
		out[loop] = s
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !seen {
		return nil, fmt.Errorf("metrics: no %s in the scrape", famRequests)
	}
	return out, nil
}

// sampleName splits a sample line into its metric name and the rest
// (labels, value, timestamp).
func sampleName(line string) (string, string) {
	i := strings.IndexAny(line, "{ \t")
	if i < 0 {
		return line, ""
	}
	return line[:i], line[i:]
}

// parseSample parses `{k="v",...} value [timestamp]`; the braces are
// optional. Label values may hold the format's escapes (\\, \", \n).
func parseSample(s string) (map[string]string, float64, error) {
	labels := map[string]string{}
	s = strings.TrimLeft(s, " \t")
	if strings.HasPrefix(s, "{") {
		s = s[1:]
		for {
			s = strings.TrimLeft(s, " \t,")
			if strings.HasPrefix(s, "}") {
				s = s[1:]
				break
			}
			key, rest, ok := strings.Cut(s, "=")
			rest = strings.TrimLeft(rest, " \t")
			if key = strings.TrimSpace(key); !ok || key == "" || !strings.HasPrefix(rest, `"`) {
				return nil, 0, fmt.Errorf("malformed labels")
			}
			val, tail, err := unquoteLabel(rest[1:])
			if err != nil {
				return nil, 0, err
			}
			labels[key], s = val, tail
		}
	}
	f := strings.Fields(s)
	if len(f) < 1 || len(f) > 2 {
		return nil, 0, fmt.Errorf("want a value and at most a timestamp, got %q", s)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return nil, 0, err
	}
	return labels, v, nil
}

// unquoteLabel reads a label value up to its closing quote and returns it
// with what follows the quote.
func unquoteLabel(s string) (string, string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			if i+1 == len(s) {
				return "", "", fmt.Errorf("unterminated label value")
			}
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("unterminated label value")
}

// loopDeltas returns what each loop did between two scrapes, busiest loop
// first (ties by label). A loop that took its first connection between
// them counts from zero; a counter that went backwards (another process
// on the port) counts from zero too.
func loopDeltas(before, after map[string]loopSample) []loopRun {
	var out []loopRun
	var total uint64
	for loop, a := range after {
		b := before[loop]
		d := loopRun{Loop: loop, Requests: counterDelta(b.Requests, a.Requests), Accepted: counterDelta(b.Accepted, a.Accepted)}
		total += d.Requests
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Requests != out[j].Requests {
			return out[i].Requests > out[j].Requests
		}
		return loopLess(out[i].Loop, out[j].Loop)
	})
	for i := range out {
		if total > 0 {
			out[i].Share = float64(out[i].Requests) / float64(total)
		}
	}
	return out
}

// counterDelta is after - before for a counter, or after when it reset.
func counterDelta(before, after float64) uint64 {
	if after < before {
		return uint64(after)
	}
	return uint64(after - before)
}

// loopLess orders loop labels numerically where they are numbers.
func loopLess(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return x < y
	}
	return a < b
}

// loopRequests sums a run's requests over its loops.
func loopRequests(loops []loopRun) uint64 {
	var n uint64
	for _, l := range loops {
		n += l.Requests
	}
	return n
}
