package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// chartFiles returns every chart of a run by file-name suffix: "" is the
// bar chart, "-latency" the latency curves of an open-loop sweep,
// "-scaling" the scaling view of a sweep that varied loops or CPUs.
func chartFiles(res *results) map[string]string {
	out := map[string]string{"": renderSVG(res)}
	if res.Kind == "sweep" && res.Sweep != nil && len(res.Options.Rates) > 0 {
		out["-latency"] = renderLatencySVG(res)
	}
	if res.Kind == "sweep" && res.Sweep != nil && hasScaling(res) {
		out["-scaling"] = renderScalingSVG(res)
	}
	return out
}

// plotPoint is one point of a curve.
type plotPoint struct{ x, y float64 }

// plotPanel is one x-y panel with its own axes.
type plotPanel struct {
	title      string
	xLabel     string
	logY       bool
	x, y, w, h float64
	xMax       float64
	yMin, yMax float64
	target     float64 // a horizontal reference line (0: none)
	xTicks     []float64
	xTickLabel func(float64) string
	yFmt       func(float64) string
}

// px maps a data point into the panel.
func (p plotPanel) px(pt plotPoint) (float64, float64) {
	x := p.x + p.w*pt.x/p.xMax
	var f float64
	if p.logY {
		f = (math.Log10(pt.y) - math.Log10(p.yMin)) / (math.Log10(p.yMax) - math.Log10(p.yMin))
	} else {
		f = (pt.y - p.yMin) / (p.yMax - p.yMin)
	}
	f = math.Min(math.Max(f, 0), 1)
	return x, p.y + p.h*(1-f)
}

// axes draws the panel's frame, ticks and labels.
func (p plotPanel) axes(b *strings.Builder) {
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="h">%s</text>`+"\n", p.x, p.y-8, xmlEscape(fitText(p.title, fontHead, p.w)))
	fmt.Fprintf(b, `<path d="M%.1f %.1fV%.1fH%.1f" class="axis" fill="none"/>`+"\n", p.x, p.y, p.y+p.h, p.x+p.w)
	for _, yt := range yTicks(p.yMin, p.yMax, p.logY) {
		_, ty := p.px(plotPoint{0, yt})
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="grid"/>`+"\n", p.x+1, ty, p.x+p.w, ty)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="v l">%s</text>`+"\n", p.x-3, ty+3, xmlEscape(p.yFmt(yt)))
	}
	for _, xt := range p.xTicks {
		tx, _ := p.px(plotPoint{xt, p.yMin})
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="v m">%s</text>`+"\n", tx, p.y+p.h+12, xmlEscape(p.xTickLabel(xt)))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="v m">%s</text>`+"\n", p.x+p.w/2, p.y+p.h+26, xmlEscape(fitText(p.xLabel, fontValue, p.w)))
	if p.target > 0 && p.target >= p.yMin && p.target <= p.yMax {
		_, ty := p.px(plotPoint{0, p.target})
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="tgt"/>`+"\n", p.x, ty, p.x+p.w, ty)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="v l">target</text>`+"\n", p.x+p.w-2, ty-3)
	}
}

// curve draws one series in the panel.
func (p plotPanel) curve(b *strings.Builder, pts []plotPoint, colour, label string) {
	if len(pts) == 0 {
		return
	}
	var coords []string
	for _, pt := range pts {
		x, y := p.px(pt)
		coords = append(coords, fmt.Sprintf("%.1f,%.1f", x, y))
	}
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.Join(coords, " "), colour)
	for _, pt := range pts {
		x, y := p.px(pt)
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s</title></circle>`+"\n", x, y, colour, xmlEscape(label))
	}
}

// yTicks returns tick values: decades (1, 2, 5 steps) on a log axis, or
// five even steps.
func yTicks(lo, hi float64, logY bool) []float64 {
	var out []float64
	if !logY {
		step := niceStep((hi - lo) / 4)
		for v := math.Ceil(lo/step) * step; v <= hi*1.0001; v += step {
			out = append(out, v)
		}
		return out
	}
	for d := math.Floor(math.Log10(lo)); d <= math.Ceil(math.Log10(hi)); d++ {
		for _, m := range []float64{1, 2, 5} {
			if v := m * math.Pow(10, d); v >= lo*0.999 && v <= hi*1.001 {
				out = append(out, v)
			}
		}
	}
	return out
}

// niceStep rounds a tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if !(raw > 0) {
		return 1
	}
	d := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5} {
		if m*d >= raw {
			return m * d
		}
	}
	return 10 * d
}

// logRange widens [lo, hi] to whole 1-2-5 steps for a log axis.
func logRange(lo, hi float64) (float64, float64) {
	if lo <= 0 || math.IsInf(lo, 0) || math.IsNaN(lo) {
		lo = 1
	}
	if hi <= lo {
		hi = lo * 10
	}
	down := func(v float64) float64 {
		d := math.Pow(10, math.Floor(math.Log10(v)))
		for _, m := range []float64{5, 2, 1} {
			if m*d <= v {
				return m * d
			}
		}
		return d
	}
	up := func(v float64) float64 {
		d := math.Pow(10, math.Floor(math.Log10(v)))
		for _, m := range []float64{1, 2, 5, 10} {
			if m*d >= v {
				return m * d
			}
		}
		return 10 * d
	}
	return down(lo), up(hi)
}

// fmtLatencyTick formats a µs tick as ms.
func fmtLatencyTick(us float64) string {
	ms := us / 1000
	switch {
	case ms >= 1:
		return strconv.FormatFloat(ms, 'f', -1, 64)
	default:
		return strconv.FormatFloat(ms, 'g', 3, 64)
	}
}

// legend draws one entry per label in rows under the panels and returns
// the height used.
func legend(b *strings.Builder, labs []string, colour map[string]string, x, y, width float64) float64 {
	cx, cy := x, y
	for _, l := range labs {
		text := fitText(l, fontText, width-30)
		w := textWidth(text, fontText) + 30
		if cx+w > x+width && cx > x {
			cx, cy = x, cy+16
		}
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="12" height="8" fill="%s"/>`+"\n", cx, cy-8, colour[l])
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", cx+16, cy, xmlEscape(text))
		cx += w
	}
	return cy - y + 16
}

// renderLatencySVG draws the latency curves of an open-loop sweep: one
// panel per percentile (p50, p99, p99.9), achieved requests/s across, the
// latency from the intended send time up (log scale), one curve per
// variant through the median of each offered rate.
func renderLatencySVG(res *results) string {
	labs := labels(res)
	colour := seriesColours(labs)
	wid := sweptWorkload(res).ID
	const (
		margin = 10
		panelW = 280
		panelH = 220
		gapX   = 70
		top    = 70
	)
	pcts := []struct{ key, name string }{{"50", "p50"}, {"99", "p99"}, {"99.9", "p99.9"}}
	curves := map[string][][]plotPoint{}
	lo, hi, xMax := math.Inf(1), 0.0, 0.0
	for _, rate := range res.Options.Rates {
		xMax = math.Max(xMax, rate)
	}
	for _, l := range labs {
		sets := make([][]plotPoint, len(pcts))
		for _, rate := range res.Options.Rates {
			s := aggregateAt(res.Measurements, wid, l, rate)
			if s.OK == 0 {
				continue
			}
			for i, p := range []summary{s.P50, s.P99, s.P999} {
				if p.N == 0 || !(p.Median > 0) {
					continue
				}
				sets[i] = append(sets[i], plotPoint{s.RPS.Median, p.Median})
				lo, hi = math.Min(lo, p.Median), math.Max(hi, p.Median)
				xMax = math.Max(xMax, s.RPS.Median)
			}
		}
		curves[l] = sets
	}
	if res.Options.P99Target > 0 {
		lo, hi = math.Min(lo, res.Options.P99Target), math.Max(hi, res.Options.P99Target)
	}
	yMin, yMax := logRange(lo, hi)
	xMax = math.Max(xMax*1.05, 1)
	var xt []float64
	for _, r := range res.Options.Rates {
		xt = append(xt, r)
	}
	width := int(2*margin + 45 + 3*panelW + 2*gapX)
	var body strings.Builder
	for i, p := range pcts {
		pp := plotPanel{title: p.name + " latency, ms (log)", xLabel: "requests/s achieved", logY: true,
			x: float64(margin + 45 + i*(panelW+gapX)), y: top, w: panelW, h: panelH, xMax: xMax, yMin: yMin, yMax: yMax,
			xTicks: thinTicks(xt, panelW), xTickLabel: fmtKilo, yFmt: fmtLatencyTick}
		if p.key == "99" {
			pp.target = res.Options.P99Target
		}
		pp.axes(&body)
		for _, l := range labs {
			pp.curve(&body, curves[l][i], colour[l], l)
		}
	}
	ly := float64(top + panelH + 50)
	lh := legend(&body, labs, colour, margin, ly, float64(width-2*margin))
	height := int(ly + lh + 6)
	var head strings.Builder
	t := fmt.Sprintf("gale latency under load, %s: %s, %d round(s), latency from the intended send time", res.Started.Format("2006-01-02 15:04"), wid, res.Options.Rounds)
	fmt.Fprintf(&head, `<text x="%d" y="20" class="t">%s</text>`+"\n", margin, xmlEscape(fitText(t, fontTitle, float64(width-2*margin))))
	sub := fmt.Sprintf("one point per offered rate (%s req/s): the median over rounds; dashed: the p99 target %s", fmtRates(res.Options.Rates), fmtMs(res.Options.P99Target))
	fmt.Fprintf(&head, `<text x="%d" y="38" class="v">%s</text>`+"\n", margin, xmlEscape(fitText(sub, fontValue, float64(width-2*margin))))
	return svgDoc(width, height, head.String()+body.String())
}

// thinTicks drops ticks that would crowd a panel of width px.
func thinTicks(ts []float64, width float64) []float64 {
	maxN := int(width / 45)
	if len(ts) <= maxN || maxN < 2 {
		return ts
	}
	var out []float64
	step := float64(len(ts)-1) / float64(maxN-1)
	for i := 0; i < maxN; i++ {
		out = append(out, ts[int(math.Round(float64(i)*step))])
	}
	return out
}

// fmtKilo formats a rate as 12k or 1.5k.
func fmtKilo(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(math.Round(v/100)/10, 'f', -1, 64) + "k"
	}
	return fmtInt(v)
}

// renderScalingSVG draws requests/s and CPU per request against the
// number of event loops, one line per server CPU count.
func renderScalingSVG(res *results) string {
	wid := sweptWorkload(res).ID
	rate := scalingRate(res)
	d := scalingData(res, wid, rate)
	names := d.names
	colour := seriesColours(append([]string{baselineLabel}, names...))
	colour[names0(names)] = palette[0]
	const (
		margin = 10
		panelW = 300
		panelH = 200
		gapX   = 80
		top    = 60
	)
	var xt []float64
	for i := 1; i <= d.maxLoops; i++ {
		xt = append(xt, float64(i))
	}
	width := 2*margin + 60 + 2*panelW + gapX
	var body strings.Builder
	panels := []struct {
		title string
		yMax  float64
		get   func(scalingPoint) float64
		yFmt  func(float64) string
	}{
		{"requests/s", d.maxRPS, func(p scalingPoint) float64 { return p.rps }, fmtKilo},
		{"server CPU µs per request", d.maxCPU, func(p scalingPoint) float64 { return p.cpu }, func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }},
	}
	for i, pn := range panels {
		pp := plotPanel{title: pn.title, xLabel: "event loops", x: float64(margin + 60 + i*(panelW+gapX)), y: top, w: panelW, h: panelH,
			xMax: float64(d.maxLoops) + 0.5, yMin: 0, yMax: math.Max(pn.yMax*1.1, 1e-9), xTicks: thinTicks(xt, panelW),
			xTickLabel: func(v float64) string { return strconv.Itoa(int(v)) }, yFmt: pn.yFmt}
		pp.axes(&body)
		for k, key := range d.keys {
			ps := d.byCPUs[key]
			sort.Slice(ps, func(a, b int) bool { return ps[a].loops < ps[b].loops })
			var pts []plotPoint
			for _, p := range ps {
				pts = append(pts, plotPoint{float64(p.loops), pn.get(p)})
			}
			pp.curve(&body, pts, colour[names[k]], names[k])
		}
	}
	ly := float64(top + panelH + 50)
	lh := legend(&body, names, colour, margin, ly, float64(width-2*margin))
	height := int(ly + lh + 6)
	return svgDoc(width, height, scalingHead(res, wid, rate, width, margin)+body.String())
}

// scalingPoint is one variant of a scaling chart: its event loops and
// its median requests/s and CPU µs per request.
type scalingPoint struct {
	loops int
	rps   float64
	cpu   float64
}

// scalingSeries is what a scaling chart draws: a line of points per
// server CPU count, and the largest value on each axis.
type scalingSeries struct {
	byCPUs         map[string][]scalingPoint // by server CPUs (and GOMAXPROCS)
	keys           []string                  // of byCPUs, sorted
	names          []string                  // of each key, for the legend
	maxLoops       int
	maxRPS, maxCPU float64
}

// scalingData gathers the scaling chart's points of workload wid at the
// offered rate (0 for closed loop) from the variants that have an
// ok measurement. A variant that does not set event_loops or server_cpus
// has the run's own.
func scalingData(res *results, wid string, rate float64) *scalingSeries {
	d := &scalingSeries{byCPUs: map[string][]scalingPoint{}, maxLoops: 1}
	for _, v := range scalingRows(res) {
		s := aggregateAt(res.Measurements, wid, v.Label, rate)
		if s.OK == 0 {
			continue
		}
		loops, err := strconv.Atoi(settingOf(v.Settings, "event_loops"))
		if err != nil || loops <= 0 {
			loops = res.Options.Workers
		}
		cpus := settingOf(v.Settings, "server_cpus")
		if cpus == "" {
			cpus = res.Options.ServerCPUs
		}
		if g := settingOf(v.Settings, "GOMAXPROCS"); g != "" {
			cpus += " GOMAXPROCS=" + g
		}
		d.byCPUs[cpus] = append(d.byCPUs[cpus], scalingPoint{loops, s.RPS.Median, s.CPU.Median})
		d.maxLoops, d.maxRPS, d.maxCPU = max(d.maxLoops, loops), math.Max(d.maxRPS, s.RPS.Median), math.Max(d.maxCPU, s.CPU.Median)
	}
	for k := range d.byCPUs {
		d.keys = append(d.keys, k)
	}
	sort.Strings(d.keys)
	for _, k := range d.keys {
		d.names = append(d.names, "server CPUs "+k)
	}
	return d
}

// scalingHead returns the scaling chart's title and the line under it,
// fitted to width within margin.
func scalingHead(res *results, wid string, rate float64, width, margin int) string {
	var head strings.Builder
	what := "closed loop"
	if rate > 0 {
		what = fmt.Sprintf("at %s req/s offered", fmtInt(rate))
	}
	t := fmt.Sprintf("gale scaling: %s, %s, %d round(s)", wid, what, res.Options.Rounds)
	fmt.Fprintf(&head, `<text x="%d" y="20" class="t">%s</text>`+"\n", margin, xmlEscape(fitText(t, fontTitle, float64(width-2*margin))))
	sub := "medians over rounds; the report's verdicts say which differences lie beyond the A/A noise floor"
	fmt.Fprintf(&head, `<text x="%d" y="36" class="v">%s</text>`+"\n", margin, xmlEscape(fitText(sub, fontValue, float64(width-2*margin))))
	return head.String()
}

// names0 returns the first name ("" for none).
func names0(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}
