package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// soakSample is one reading of gale during the soak.
type soakSample struct {
	At         float64 `json:"at_s"`           // seconds since the load began
	Requests   int64   `json:"requests"`       // exchanges finished so far
	RSS        int64   `json:"rss_bytes"`      // resident set
	Heap       int64   `json:"heap_bytes"`     // Go heap objects (go_memstats_heap_alloc_bytes)
	Goroutines int64   `json:"goroutines"`     // go_goroutines
	FDs        int64   `json:"fds"`            // open descriptors
	CPUus      float64 `json:"cpu_us_per_req"` // server CPU per exchange over the window
	P99ms      float64 `json:"p99_ms"`         // p99 latency of the window's exchanges
}

// soakSampler reads gale's /proc entries and its metrics.
type soakSampler struct {
	env     *soakEnv
	load    *soakLoad
	samples []soakSample
	lastCPU uint64 // clock ticks
	lastReq int64
}

func newSoakSampler(env *soakEnv, load *soakLoad) *soakSampler {
	s := &soakSampler{env: env, load: load}
	s.lastCPU, _ = s.cpuTicks()
	return s
}

func (s *soakSampler) take(at time.Duration) soakSample {
	pid := s.env.gale.pid()
	out := soakSample{At: at.Seconds(), Requests: s.load.done.Load(), P99ms: float64(s.load.window()) / 1e6}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		if m, err := parseStatus(b); err == nil {
			out.RSS = m.VmRSS << 10 // kB
		}
	}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		out.FDs = int64(len(ents))
	}
	if m, err := scrapeGauges(s.env.metrics, "go_memstats_heap_alloc_bytes", "go_goroutines"); err == nil {
		out.Heap, out.Goroutines = int64(m["go_memstats_heap_alloc_bytes"]), int64(m["go_goroutines"])
	}
	if cpu, err := s.cpuTicks(); err == nil {
		if reqs := out.Requests - s.lastReq; reqs > 0 {
			out.CPUus = float64(cpu-s.lastCPU) * 1e6 / float64(clockTicks()) / float64(reqs)
		}
		s.lastCPU = cpu
	}
	s.lastReq = out.Requests
	s.samples = append(s.samples, out)
	return out
}

// cpuTicks is gale's user plus system time, in clock ticks.
func (s *soakSampler) cpuTicks() (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.env.gale.pid()))
	if err != nil {
		return 0, err
	}
	st, err := parseStat(b)
	if err != nil {
		return 0, err
	}
	return st.Utime + st.Stime, nil
}

// scrapeGauges reads the named unlabelled samples from a Prometheus text
// exposition.
func scrapeGauges(url string, names ...string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || !want[name] {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}

// flatness is the soak's verdict on one series: flat when the highest
// value in the last quarter of the run is within 10% of the highest in
// the second quarter (the first quarter is warm-up: caches fill, pools
// grow).
type flatness struct {
	Series string  `json:"series"`
	Q2Max  float64 `json:"q2_max"`
	Q4Max  float64 `json:"q4_max"`
	Flat   bool    `json:"flat"`
}

// flatSeries are the series the verdict covers.
var flatSeries = []struct {
	name string
	get  func(soakSample) float64
}{
	{"rss", func(s soakSample) float64 { return float64(s.RSS) }},
	{"heap", func(s soakSample) float64 { return float64(s.Heap) }},
	{"goroutines", func(s soakSample) float64 { return float64(s.Goroutines) }},
	{"fds", func(s soakSample) float64 { return float64(s.FDs) }},
}

// verdicts judges every series of samples.
func verdicts(samples []soakSample) []flatness {
	var out []flatness
	for _, fs := range flatSeries {
		out = append(out, judgeFlat(fs.name, samples, fs.get))
	}
	return out
}

func judgeFlat(name string, samples []soakSample, get func(soakSample) float64) flatness {
	f := flatness{Series: name}
	if len(samples) < 8 {
		return f // too short to say
	}
	n := len(samples)
	f.Q2Max = maxOf(samples[n/4:n/2], get)
	f.Q4Max = maxOf(samples[3*n/4:], get)
	f.Flat = f.Q4Max <= f.Q2Max*1.10
	return f
}

func maxOf(s []soakSample, get func(soakSample) float64) float64 {
	m := 0.0
	for _, x := range s {
		m = max(m, get(x))
	}
	return m
}
