package main

import (
	"fmt"
	"math"
)

// The noise floor. A sweep measures the baseline twice in every round,
// under two labels, in the same rotating order as every variant: the
// second copy's ratio to the first (an A/A comparison) is what the machine
// alone does to a ratio between two identical configurations. A variant
// is judged by its ratio to the baseline within each round, so slow drift
// of a shared machine cancels, and it is called better or worse only when
// every round's ratio lies beyond the largest A/A deviation seen: a
// deliberately strict rule, which with few rounds errs towards "within
// noise" rather than towards a finding.

// Verdicts.
const (
	verdictBetter   = "better"
	verdictWorse    = "worse"
	verdictNoise    = "within noise"
	verdictFew      = "too few rounds"
	verdictAA       = "noise floor"
	verdictNoAA     = "no A/A run"
	verdictNA       = "—"
	minVerdictRound = 3    // rounds a verdict needs (and the A/A band with it)
	minNoise        = 0.01 // the band is never narrower than ±1 %: timer and counter resolution
)

// metric is one figure a verdict can be about.
type metric struct {
	Name         string
	HigherBetter bool
	Get          func(measurement) float64
}

var (
	metricRPS = metric{"req/s", true, func(m measurement) float64 { return m.Wrk.ReqPerSec }}
	metricCPU = metric{"CPU/req", false, func(m measurement) float64 { return m.CPUUsPerReq }}
	metricP99 = metric{"p99", false, func(m measurement) float64 { return pct(m.Wrk, "99") }}
)

// roundValues returns label's value of the metric per round, over the
// successful measurements of workload at rate (0: closed loop).
func roundValues(ms []measurement, workload, label string, rate float64, get func(measurement) float64) map[int]float64 {
	out := map[int]float64{}
	for _, m := range ms {
		if m.Workload == workload && m.Label == label && m.Rate == rate && m.Status == "ok" && m.Wrk != nil {
			if v := get(m); !math.IsNaN(v) && v > 0 {
				out[m.Round] = v
			}
		}
	}
	return out
}

// perRoundRatios returns a ÷ b for every round in which both have a value.
func perRoundRatios(a, b map[int]float64) []float64 {
	var out []float64
	for round, va := range a {
		if vb, ok := b[round]; ok {
			out = append(out, va/vb)
		}
	}
	return out
}

// noiseBand returns the noise floor from A/A ratios: the largest
// |ln ratio| seen, at least ln(1+minNoise). With fewer than
// minVerdictRound ratios it is unknown (NaN).
func noiseBand(aa []float64) float64 {
	if len(aa) < minVerdictRound {
		return math.NaN()
	}
	band := math.Log1p(minNoise)
	for _, r := range aa {
		band = math.Max(band, math.Abs(math.Log(r)))
	}
	return band
}

// judge returns the verdict on a variant's per-round ratios to the
// baseline given the noise band (in ln units): better or worse only when
// every round lies beyond the band on the same side.
func judge(ratios []float64, band float64, higherBetter bool) string {
	if len(ratios) < minVerdictRound || math.IsNaN(band) {
		return verdictFew
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range ratios {
		l := math.Log(r)
		lo, hi = math.Min(lo, l), math.Max(hi, l)
	}
	switch {
	case lo > band:
		if higherBetter {
			return verdictBetter
		}
		return verdictWorse
	case hi < -band:
		if higherBetter {
			return verdictWorse
		}
		return verdictBetter
	}
	return verdictNoise
}

// judgement is one variant's comparison with the baseline on one metric.
type judgement struct {
	Ratios  summary // per-round variant ÷ baseline
	Band    float64 // the A/A noise band, ln units (NaN: unknown)
	Verdict string
}

// judgeVariant compares label with the baseline on m at rate, against the
// A/A band of the same metric and rate.
func judgeVariant(ms []measurement, workload, label string, rate float64, m metric) judgement {
	base := roundValues(ms, workload, baselineLabel, rate, m.Get)
	aa := perRoundRatios(roundValues(ms, workload, aaLabel, rate, m.Get), base)
	j := judgement{Band: noiseBand(aa)}
	if label == baselineLabel {
		j.Verdict = verdictNA
		return j
	}
	ratios := perRoundRatios(roundValues(ms, workload, label, rate, m.Get), base)
	j.Ratios = summarize(ratios)
	switch {
	case label == aaLabel:
		j.Verdict = verdictAA
	case len(ratios) == 0:
		j.Verdict = verdictNA
	case len(aa) == 0 && len(ratios) >= minVerdictRound:
		j.Verdict = verdictNoAA // a run recorded before the A/A copy existed
	default:
		j.Verdict = judge(ratios, j.Band, m.HigherBetter)
	}
	return j
}

// bandPct formats a noise band as ±percent.
func bandPct(band float64) string {
	if math.IsNaN(band) {
		return "unknown"
	}
	return fmt.Sprintf("±%.1f%%", 100*(math.Exp(band)-1))
}

// fmtJudged formats a judgement's ratio cell: median (min–max).
func fmtJudged(j judgement) string {
	if j.Ratios.N == 0 {
		return "—"
	}
	if j.Ratios.N == 1 {
		return fmt.Sprintf("%.2f×", j.Ratios.Median)
	}
	return fmt.Sprintf("%.2f× (%.2f–%.2f)", j.Ratios.Median, j.Ratios.Min, j.Ratios.Max)
}

// noiseWarnings returns why a run cannot separate its variants (empty
// when it can): too few rounds for an A/A band, or a band so wide that
// only large differences would show.
func noiseWarnings(rounds int, bands map[string]float64) []string {
	var out []string
	if rounds < minVerdictRound {
		out = append(out, fmt.Sprintf("%d round(s) cannot measure the noise floor: every verdict needs at least %d rounds (-rounds %d)", rounds, minVerdictRound, minVerdictRound))
		return out
	}
	for _, name := range []string{metricRPS.Name, metricCPU.Name, metricP99.Name} {
		b, ok := bands[name]
		if ok && !math.IsNaN(b) && math.Exp(b)-1 > 0.10 {
			out = append(out, fmt.Sprintf("the A/A runs differ by up to %s in %s: differences smaller than that cannot be told apart (more -rounds, longer -seconds, or a quieter machine)", bandPct(b), name))
		}
	}
	return out
}
