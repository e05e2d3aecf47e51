package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// soakError is the errors of one kind: how many, and the first one.
type soakError struct {
	Count   int    `json:"count"`
	Example string `json:"example"`
}

// soakReport is what a soak run found.
type soakReport struct {
	Options  map[string]string    `json:"options"`
	Counts   map[string]int       `json:"exchanges_by_kind"`
	Errors   map[string]soakError `json:"errors_by_kind"`
	Reloads  map[string]int       `json:"reloads"`
	Samples  []soakSample         `json:"samples"`
	Verdicts []flatness           `json:"flatness"`
}

// passed reports zero errors, and every series flat.
func (r *soakReport) passed() bool {
	if len(r.Errors) > 0 {
		return false
	}
	for _, v := range r.verdicts() {
		if !v.Flat {
			return false
		}
	}
	return true
}

func (r *soakReport) verdicts() []flatness {
	if r.Verdicts == nil {
		r.Verdicts = verdicts(r.Samples)
	}
	return r.Verdicts
}

func (r *soakReport) markdown() string {
	var b strings.Builder
	b.WriteString("# gale soak\n\n")
	fmt.Fprintf(&b, "%s at %s exchanges/s with %s idle keep-alive connections held; SIGHUP every %s, certificate files swapped every %s; gale on CPUs %s, the load on %s.\n\n",
		r.Options["duration"], r.Options["rate"], r.Options["idle"], r.Options["reload"], r.Options["cert_swap"], r.Options["server_cpus"], r.Options["client_cpus"])
	total, errs := 0, 0
	for _, n := range r.Counts {
		total += n
	}
	for _, e := range r.Errors {
		errs += e.Count
	}
	fmt.Fprintf(&b, "**%d exchanges, %d errors; reloads %d (rejected %d).**\n\n", total, errs, r.Reloads["reloaded"], r.Reloads["rejected"])
	b.WriteString("| kind | exchanges | errors | first error |\n|---|---:|---:|---|\n")
	kinds := map[string]bool{}
	for k := range r.Counts {
		kinds[k] = true
	}
	for k := range r.Errors {
		kinds[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		e := r.Errors[k]
		fmt.Fprintf(&b, "| %s | %d | %d | %s |\n", k, r.Counts[k], e.Count, strings.ReplaceAll(e.Example, "|", "\\|"))
	}
	b.WriteString("\nFlat means the highest value in the last quarter is within 10% of the highest in the second quarter.\n\n")
	b.WriteString("| series | max, 2nd quarter | max, last quarter | flat |\n|---|---:|---:|---|\n")
	for _, v := range r.verdicts() {
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %v |\n", v.Series, v.Q2Max, v.Q4Max, v.Flat)
	}
	b.WriteString("\n| at (s) | exchanges | RSS (MiB) | heap (MiB) | goroutines | fds | CPU µs/exchange | p99 (ms) |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	step := max(1, len(r.Samples)/24)
	for i := 0; i < len(r.Samples); i += step {
		s := r.Samples[i]
		fmt.Fprintf(&b, "| %.0f | %d | %.1f | %.1f | %d | %d | %.1f | %.2f |\n", s.At, s.Requests, mib(s.RSS), mib(s.Heap), s.Goroutines, s.FDs, s.CPUus, s.P99ms)
	}
	return b.String()
}

// write saves OUT.md, OUT.json and OUT.svg.
func (r *soakReport) write(out, md string) error {
	r.verdicts()
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	for ext, body := range map[string][]byte{".md": []byte(md), ".json": js, ".svg": []byte(r.svg())} {
		if err := os.WriteFile(out+ext, body, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// svg draws one panel per series over time.
func (r *soakReport) svg() string {
	series := []struct {
		title string
		get   func(soakSample) float64
		f     func(float64) string
	}{
		{"RSS (MiB)", func(s soakSample) float64 { return mib(s.RSS) }, fmtOne},
		{"Go heap (MiB)", func(s soakSample) float64 { return mib(s.Heap) }, fmtOne},
		{"goroutines", func(s soakSample) float64 { return float64(s.Goroutines) }, fmtWhole},
		{"open descriptors", func(s soakSample) float64 { return float64(s.FDs) }, fmtWhole},
		{"server CPU per exchange (µs)", func(s soakSample) float64 { return s.CPUus }, fmtOne},
		{"p99 latency (ms)", func(s soakSample) float64 { return s.P99ms }, fmtOne},
	}
	xMax := 1.0
	if n := len(r.Samples); n > 0 {
		xMax = max(r.Samples[n-1].At, 1)
	}
	const w, h, cols = 300.0, 140.0, 2
	var b strings.Builder
	for i, s := range series {
		p := plotPanel{title: s.title, xLabel: "seconds", x: 50 + float64(i%cols)*(w+70), y: 40 + float64(i/cols)*(h+70), w: w, h: h,
			xMax: xMax, yMin: 0, xTicks: []float64{0, xMax / 2, xMax}, xTickLabel: fmtWhole, yFmt: s.f}
		var pts []plotPoint
		for _, x := range r.Samples {
			v := s.get(x)
			pts = append(pts, plotPoint{x.At, v})
			p.yMax = max(p.yMax, v*1.15)
		}
		if p.yMax == 0 {
			p.yMax = 1
		}
		p.axes(&b)
		p.curve(&b, pts, "#1f77b4", s.title)
	}
	rows := (len(series) + cols - 1) / cols
	return svgDoc(int(50+cols*(w+70)), int(40+float64(rows)*(h+70)), b.String())
}

func fmtOne(v float64) string   { return fmt.Sprintf("%.1f", v) }
func fmtWhole(v float64) string { return fmt.Sprintf("%.0f", v) }
