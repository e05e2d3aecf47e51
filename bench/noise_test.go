package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	band := math.Log(1.03) // A/A within ±3 %
	tests := []struct {
		name   string
		ratios []float64
		higher bool
		want   string
	}{
		{"all rounds above the band, higher is better", []float64{1.10, 1.08, 1.12}, true, verdictBetter},
		{"all rounds above the band, lower is better", []float64{1.10, 1.08, 1.12}, false, verdictWorse},
		{"all rounds below the band", []float64{0.90, 0.95, 0.93}, true, verdictWorse},
		{"all below, lower is better", []float64{0.90, 0.95, 0.93}, false, verdictBetter},
		{"a large median, one round inside the band", []float64{1.30, 1.25, 1.02}, true, verdictNoise},
		{"rounds on both sides", []float64{1.10, 0.90, 1.05}, true, verdictNoise},
		{"inside the band", []float64{1.01, 0.99, 1.02}, false, verdictNoise},
		{"just beyond the band", []float64{1.031, 1.04, 1.05}, true, verdictBetter},
		{"two rounds", []float64{1.5, 1.5}, true, verdictFew},
	}
	for _, tc := range tests {
		if got := judge(tc.ratios, band, tc.higher); got != tc.want {
			t.Errorf("%s: judge(%v) = %q, want %q", tc.name, tc.ratios, got, tc.want)
		}
	}
	if got := judge([]float64{2, 2, 2}, math.NaN(), true); got != verdictFew {
		t.Errorf("unknown band: %q", got)
	}
}

func TestNoiseBand(t *testing.T) {
	if b := noiseBand([]float64{1.0, 1.0}); !math.IsNaN(b) {
		t.Errorf("two A/A rounds gave a band %v", b)
	}
	// Identical runs still get the ±1 % resolution floor.
	if b := noiseBand([]float64{1.0, 1.0, 1.0}); math.Abs(b-math.Log1p(minNoise)) > 1e-12 {
		t.Errorf("floor: %v", b)
	}
	// The band is the largest deviation either way, symmetric in ratio.
	if b := noiseBand([]float64{1.02, 0.8, 1.05}); math.Abs(b-math.Log(1.25)) > 1e-12 {
		t.Errorf("band %v, want ln 1.25", b)
	}
	if got := bandPct(math.Log(1.25)); got != "±25.0%" {
		t.Errorf("bandPct %q", got)
	}
}

// sweepRun builds a sweep result from per-round req/s and CPU/req values
// of each label: the baseline, its A/A copy and the variants.
func sweepRun(rounds int, rates []float64, vals map[string][][2]float64) *results {
	res := &results{Kind: "sweep", Started: time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC),
		Options:   options{Rounds: rounds, Seconds: 2, Connections: 64, Threads: 1, ServerCPUs: "0", ClientCPUs: "1", Workers: 1, Rates: rates, P99Target: 1000},
		Machine:   machineInfo{CPUModel: "Test CPU"},
		Servers:   []*serverSpec{{Name: "gale", Version: "gale dev"}},
		Workloads: []string{"static-128"},
		Sweep:     &sweepInfo{Workload: "static-128"},
	}
	order := []string{baselineLabel, aaLabel}
	for l := range vals {
		if l != baselineLabel && l != aaLabel {
			order = append(order, l)
		}
	}
	sortStrings(order[2:])
	for _, l := range order {
		v := variant{Label: l}
		if k, val, ok := strings.Cut(l, "="); ok {
			v.Settings = []setting{{k, val}}
		}
		res.Sweep.Variants = append(res.Sweep.Variants, v)
	}
	steps := rates
	if len(steps) == 0 {
		steps = []float64{0}
	}
	for _, l := range order {
		for r := 0; r < rounds; r++ {
			for si, rate := range steps {
				rv := vals[l][r]
				m := okRun(r+1, "gale", "static-128", rv[0], rv[1])
				m.Label, m.Rate = l, rate
				if rate > 0 {
					m.Wrk.ReqPerSec = rate * 0.999
					// p99 grows with the rate; the second value scales it.
					m.Wrk.LatencyUs = map[string]float64{"50": 100, "99": 200 * float64(si+1) * rv[1] / 6, "99.9": 400 * float64(si+1)}
				}
				res.Measurements = append(res.Measurements, m)
			}
		}
	}
	return res
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func TestSweepVerdictsClosedLoop(t *testing.T) {
	res := sweepRun(3, nil, map[string][][2]float64{
		baselineLabel:          {{100000, 6}, {90000, 6.6}, {110000, 5.4}},
		aaLabel:                {{102000, 6.1}, {89000, 6.5}, {108000, 5.5}}, // within ±2.0 % and ±1.9 %
		"edge_triggered=true":  {{101000, 6.05}, {91500, 6.55}, {109000, 5.45}},
		"read_buffer=16KiB":    {{120000, 5}, {108000, 5.5}, {132000, 4.5}},  // +20 % every round
		"tcp_no_delay=false":   {{50000, 12}, {45000, 13.2}, {109000, 5.45}}, // worse twice, then within noise
		"lock_os_thread=true":  {{95000, 6.6}, {85000, 7.3}, {104000, 6}},    // -5 %, CPU +10 %
		"write_buffer=256KiB":  {{100500, 6}, {90100, 6.6}, {110200, 5.4}},
		"edge_triggered=false": {{100000, 6}, {90000, 6.6}, {110000, 5.4}},
	})
	md := renderMarkdown(res)
	for _, want := range []string{
		"| baseline (A/A) |", "noise floor |",
		"| edge_triggered=true |", "| within noise |",
		"| 1.20× (1.20–1.20) | **better** | 0.83× (0.83–0.83) | **better** |",
		"| lock_os_thread=true |",
		"the noise floor of this run is ±2.0% in req/s and ±1.9% in CPU per request",
		"`read_buffer=16KiB` 1.20× the baseline's req/s (better), 0.83× its CPU per request (better)",
		"`lock_os_thread=true` 0.95× the baseline's req/s (worse), 1.11× its CPU per request (worse)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q\n%s", want, md)
		}
	}
	// A variant inside the noise is never named as a finding.
	summary := md[strings.Index(md, "**Summary.**"):strings.Index(md, "Machine:")]
	for _, quiet := range []string{"edge_triggered", "write_buffer", "tcp_no_delay"} {
		if strings.Contains(summary, quiet) {
			t.Errorf("summary names %s, which is within noise:\n%s", quiet, summary)
		}
	}
	if !strings.Contains(summary, "other variant(s) within noise") {
		t.Errorf("summary does not count the quiet variants:\n%s", summary)
	}
	if strings.HasPrefix(md, "**Warning") {
		t.Errorf("a 3-round run with a tight A/A band warned:\n%.300s", md)
	}
}

func TestSweepWarnsWhenTooShort(t *testing.T) {
	one := sweepRun(1, nil, map[string][][2]float64{
		baselineLabel: {{100000, 6}}, aaLabel: {{130000, 5}}, "event_loops=2": {{139000, 4.8}},
	})
	md := renderMarkdown(one)
	if !strings.HasPrefix(md, "**Warning: 1 round(s) cannot measure the noise floor") {
		t.Errorf("first line: %.200q", md)
	}
	if !strings.Contains(md, "No variant can be judged.") || !strings.Contains(md, "| 1.39× | too few rounds |") {
		t.Errorf("a 1-round run judged a variant:\n%s", md)
	}
	noisy := sweepRun(3, nil, map[string][][2]float64{
		baselineLabel:   {{100000, 6}, {100000, 6}, {100000, 6}},
		aaLabel:         {{130000, 6}, {80000, 6}, {100000, 6}},
		"event_loops=2": {{120000, 6}, {120000, 6}, {120000, 6}},
	})
	md = renderMarkdown(noisy)
	if !strings.HasPrefix(md, "**Warning: the A/A runs differ by up to ±30.0% in req/s") {
		t.Errorf("first line: %.200q", md)
	}
	if !strings.Contains(md, "| 1.20× (1.20–1.20) | within noise |") {
		t.Errorf("+20 %% inside a ±30 %% floor was judged:\n%s", md)
	}
}

func TestSweepOpenLoopReport(t *testing.T) {
	res := sweepRun(3, []float64{10000, 20000}, map[string][][2]float64{
		baselineLabel:       {{0, 6}, {0, 6}, {0, 6}},
		aaLabel:             {{0, 6.05}, {0, 5.97}, {0, 6.02}},
		"event_loops=2":     {{0, 9}, {0, 9.3}, {0, 9.1}}, // p99 and CPU 1.5× the baseline's
		"read_buffer=16KiB": {{0, 6.01}, {0, 6.03}, {0, 5.99}},
	})
	md := renderMarkdown(res)
	for _, want := range []string{
		"| baseline | 10,000 | 9,990 (9,990–9,990) | 0.10 ms | 0.200 (0.200–0.200) |",
		"| event_loops=2 | 20,000 |",
		"| **worse** |",
		"| read_buffer=16KiB | 20,000 |", "| within noise |",
		// The baseline's p99 is 0.4 ms at the second step, within 1 ms; event_loops=2's 0.6 ms too.
		"| baseline | 20,000 or more (every step held) | 0.40 ms |",
		"the highest offered rate held with p99 at most 1.00 ms: `baseline` every step up to 20,000 req/s, `baseline (A/A)` every step up to 20,000 req/s",
		"At 20,000 req/s the baseline has the lowest median p99",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q\n%s", want, md)
		}
	}
	res.Options.P99Target = 300
	md = renderMarkdown(res)
	for _, want := range []string{"| baseline | 10,000 | 0.20 ms |", "| event_loops=2 | below 10,000 | — |",
		"Beyond the noise floor: `event_loops=2` (its p99 at 10,000 req/s 1.52× the baseline's, worse)."} {
		if !strings.Contains(md, want) {
			t.Errorf("with a 0.3 ms target, markdown lacks %q\n%s", want, md)
		}
	}
}

func TestSustainedNeedsAgreeingAA(t *testing.T) {
	res := sweepRun(3, []float64{10000, 20000}, map[string][][2]float64{
		baselineLabel:   {{0, 6}, {0, 6}, {0, 6}},
		aaLabel:         {{0, 12}, {0, 12}, {0, 12}}, // the same configuration, twice the p99
		"event_loops=2": {{0, 3}, {0, 3}, {0, 3}},
	})
	res.Options.P99Target = 300
	md := renderMarkdown(res)
	summary := md[strings.Index(md, "**Summary.**"):strings.Index(md, "Machine:")]
	if !strings.Contains(summary, "held different rates: on this run a sustained rate is within noise and ranks nothing") || strings.Contains(summary, "Beyond the noise floor") {
		t.Errorf("summary:\n%s", summary)
	}
}
