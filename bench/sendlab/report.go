package main

import (
	"fmt"
	"slices"
	"strings"
)

// summaryTable prints, per size and mode, the median µs of server CPU per
// request and the median (min-max) of the per-round ratios to writev.
// Invalid runs (socket errors or non-2xx) are left out and counted.
func summaryTable(cfg sweepConfig, samples []sample) string {
	type key struct {
		round, size int
		mode        string
	}
	by := map[key]sample{}
	for _, s := range samples {
		by[key{s.round, s.size, s.mode}] = s
	}
	var b strings.Builder
	b.WriteString("| size | mode | µs/req (median) | ÷ writev, median (min–max) | req/s (median) | server busy (median) | invalid runs |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, size := range cfg.sizes {
		for _, m := range cfg.modes {
			var us, ratios, rps, busy []float64
			invalid := 0
			for r := 0; r < cfg.rounds; r++ {
				s, ok := by[key{r, size, m.name}]
				if !ok {
					continue
				}
				if !s.valid {
					invalid++
					continue
				}
				us, rps, busy = append(us, s.usPerReq), append(rps, s.reqPerSec), append(busy, s.busy)
				if w, ok := by[key{r, size, "writev"}]; ok && w.valid && w.usPerReq > 0 {
					ratios = append(ratios, s.usPerReq/w.usPerReq)
				}
			}
			ratio := "–"
			if len(ratios) > 0 {
				ratio = fmt.Sprintf("%.2f (%.2f–%.2f)", median(ratios), slices.Min(ratios), slices.Max(ratios))
			}
			fmt.Fprintf(&b, "| %s | %s | %.1f | %s | %.0f | %.0f%% | %d |\n",
				sizeLabel(size), m.name, median(us), ratio, median(rps), 100*median(busy), invalid)
		}
	}
	return b.String()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
