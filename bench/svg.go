package main

import (
	"fmt"
	"math"
	"strings"
)

// palette colours series in order; gale always gets the first colour.
var palette = []string{"#d9480f", "#1c7ed6", "#2f9e44", "#7048e8", "#e67700", "#0c8599", "#c2255c", "#5c940d", "#495057"}

// xmlEscape escapes text for SVG.
func xmlEscape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}

// Text metrics. The charts use sans-serif at these sizes; charWidth is a
// generous average advance per character as a share of the font size, so
// that layouts computed with it hold whichever sans-serif renders them.
const (
	charWidth = 0.62
	fontText  = 11 // labels, class l and default text
	fontValue = 10 // values, class v
	fontTitle = 15 // class t
	fontHead  = 12 // classes h and w
)

// textWidth estimates the rendered width of s at size px.
func textWidth(s string, size float64) float64 {
	return float64(len([]rune(s))) * size * charWidth
}

// fitText shortens s with an ellipsis to at most width px at size.
func fitText(s string, size, width float64) string {
	if textWidth(s, size) <= width {
		return s
	}
	r := []rune(s)
	n := max(int(width/(size*charWidth))-1, 1)
	if n >= len(r) {
		return s
	}
	return string(r[:n]) + "…"
}

// svgStyle is the stylesheet every chart shares.
const svgStyle = `<style>text{font-size:11px;fill:#212529}.t{font-size:15px;font-weight:bold}.h{font-size:12px;font-weight:bold}.w{font-size:12px;font-weight:bold}` +
	`.l{text-anchor:end}.m{text-anchor:middle}.v{font-size:10px}.na{font-style:italic;fill:#868e96}.axis{stroke:#adb5bd}.grid{stroke:#e9ecef}.wh{stroke:#212529;stroke-width:1;fill:none}` +
	`.better{fill:#2f9e44;font-weight:bold}.worse{fill:#c92a2a;font-weight:bold}.noise{fill:#868e96}.tgt{stroke:#c92a2a;stroke-dasharray:4 3}</style>`

// svgDoc wraps a chart body in its svg element.
func svgDoc(width, height int, body string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">`+"\n", width, height, width, height)
	b.WriteString(svgStyle + "\n")
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	b.WriteString(body)
	b.WriteString("</svg>\n")
	return b.String()
}

// seriesColours gives every label its colour (gale and the baseline the
// first; the A/A copy of the baseline a grey).
func seriesColours(labs []string) map[string]string {
	colour := map[string]string{}
	next := 0
	for _, l := range labs {
		switch l {
		case "gale", baselineLabel:
			colour[l] = palette[0]
		case aaLabel:
			colour[l] = "#adb5bd"
		default:
			next++
			colour[l] = palette[next%len(palette)]
		}
	}
	return colour
}

// verdictMark is the short form of a verdict drawn next to a bar, with
// its class ("" draws nothing).
func verdictMark(v string) (string, string) {
	switch v {
	case verdictBetter:
		return "▲ better", "better"
	case verdictWorse:
		return "▼ worse", "worse"
	case verdictNoise:
		return "≈ noise", "noise"
	case verdictAA:
		return "A/A", "noise"
	case verdictFew:
		return "? rounds", "noise"
	}
	return "", ""
}

// Geometry of the chart renderSVG draws, in pixels.
const (
	barH      = 14
	barGap    = 5
	barTitleH = 24 // title height per workload
	barTop    = 56
	barPanelW = 300
	barMargin = 10
)

// renderSVG draws, per workload, two horizontal bar panels: requests/s
// and server CPU µs per request, one bar per series at its median with a
// min–max whisker, and in a sweep each variant's verdict next to its
// value. The width is computed from the labels and the panels, so every
// element lies inside the view box.
func renderSVG(res *results) string {
	labs := labels(res)
	c := newBarChart(res, labs)
	var body strings.Builder
	y := barTop
	for _, wid := range res.Workloads {
		y = c.workload(&body, wid, labs, y)
	}
	if c.sweep {
		y = c.sweepNote(&body, y)
	}
	height := y + 10
	return svgDoc(c.width, height, c.head()+body.String())
}

// barChart is the layout of the chart renderSVG draws.
type barChart struct {
	res    *results
	colour map[string]string // by series label
	sweep  bool
	rate   float64 // the offered rate drawn in an open-loop sweep, or -1
	labelW float64 // room for the series labels
	x1, x2 int     // left edges of the two panels
	width  int
}

// barPanel is one panel of a workload: its left edge, the summary of a
// series it draws, how its values are written and the metric a sweep's
// verdict is judged on.
type barPanel struct {
	x   int
	get func(seriesStats) summary
	fmt func(float64) string
	m   metric
}

// newBarChart lays out the chart of res with the series labs: wide
// enough for the longest label (within limits) and, in a sweep, for the
// verdict after each value.
func newBarChart(res *results, labs []string) *barChart {
	c := &barChart{res: res, colour: seriesColours(labs), sweep: res.Kind == "sweep", rate: -1}
	c.labelW = 60.0
	for _, l := range labs {
		c.labelW = math.Max(c.labelW, textWidth(l, fontText)+10)
	}
	c.labelW = math.Min(c.labelW, 420)
	valueRoom := textWidth("1,000,000", fontValue) + 8
	if c.sweep {
		valueRoom += textWidth(" ▲ better", fontValue)
	}
	c.x1 = int(barMargin + c.labelW)
	c.x2 = c.x1 + barPanelW + int(valueRoom) + 20
	c.width = c.x2 + barPanelW + int(valueRoom) + barMargin
	if c.sweep && len(res.Options.Rates) > 0 {
		c.rate = res.Options.Rates[len(res.Options.Rates)-1]
	}
	return c
}

// workload draws the title, the series labels and the panels of the
// workload wid at y, and returns the y below them. A workload with no
// measurement of any series labs is left out.
func (c *barChart) workload(body *strings.Builder, wid string, labs []string, y int) int {
	var rows []seriesStats
	for _, l := range labs {
		if s := aggregateAt(c.res.Measurements, wid, l, c.rate); s.Total > 0 {
			rows = append(rows, s)
		}
	}
	if len(rows) == 0 {
		return y
	}
	fmt.Fprintf(body, `<text x="%d" y="%d" class="w">%s</text>`+"\n", barMargin, y+14, xmlEscape(fitText(wid, fontHead, float64(c.width-2*barMargin))))
	y += barTitleH
	for i, s := range rows {
		by := y + i*(barH+barGap)
		fmt.Fprintf(body, `<text x="%d" y="%d" class="l">%s</text>`+"\n", c.x1-5, by+11, xmlEscape(fitText(s.Label, fontText, c.labelW-10)))
	}
	for pi, p := range c.panels() {
		c.panel(body, wid, rows, y, pi, p)
	}
	return y + len(rows)*(barH+barGap) + 14
}

// panels returns the two panels of a workload: requests/s, or p99
// latency in an open-loop sweep, and server CPU per request.
func (c *barChart) panels() []barPanel {
	panels := []barPanel{
		{c.x1, func(s seriesStats) summary { return s.RPS }, fmtInt, metricRPS},
		{c.x2, func(s seriesStats) summary { return s.CPU }, cpuPrec, metricCPU},
	}
	if c.rate > 0 {
		panels[0].get, panels[0].fmt, panels[0].m = func(s seriesStats) summary { return s.P99 }, fmtMs, metricP99
	}
	return panels
}

// panel draws panel p (the pi-th) of workload wid at y: its axis and one
// bar per row, scaled to the largest maximum among the rows.
func (c *barChart) panel(body *strings.Builder, wid string, rows []seriesStats, y, pi int, p barPanel) {
	scale := 0.0
	for _, s := range rows {
		if v := p.get(s); v.N > 0 {
			scale = math.Max(scale, v.Max)
		}
	}
	if scale <= 0 {
		scale = 1
	}
	fmt.Fprintf(body, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`+"\n", p.x, y-2, p.x, y+len(rows)*(barH+barGap))
	for i, s := range rows {
		by := y + i*(barH+barGap)
		if pi == 1 && p.x > c.x1 {
			// The CPU panel's rows are read against the labels on the left.
			fmt.Fprintf(body, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="grid"/>`+"\n", p.x-15, by+barH/2, p.x-2, by+barH/2)
		}
		c.bar(body, wid, s, by, p, scale)
	}
}

// bar draws series s's bar in panel p at by: the median, the min–max
// whisker and the value, with the verdict in a sweep, or why the series
// has no value.
func (c *barChart) bar(body *strings.Builder, wid string, s seriesStats, by int, p barPanel, scale float64) {
	v := p.get(s)
	if v.N == 0 {
		what := "not supported"
		if s.Status == "failed" {
			what = "failed"
		}
		fmt.Fprintf(body, `<text x="%d" y="%d" class="na">%s</text>`+"\n", p.x+4, by+11, what)
		return
	}
	w := float64(barPanelW) * v.Median / scale
	fmt.Fprintf(body, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s</title></rect>`+"\n",
		p.x, by, w, barH, c.colour[s.Label], xmlEscape(s.Label), xmlEscape(fmtRange(v, p.fmt)))
	wx1 := float64(p.x) + float64(barPanelW)*v.Min/scale
	wx2 := float64(p.x) + float64(barPanelW)*v.Max/scale
	my := float64(by) + barH/2.0
	fmt.Fprintf(body, `<path d="M%.1f %.1fH%.1fM%.1f %.1fV%.1fM%.1f %.1fV%.1f" class="wh"/>`+"\n",
		wx1, my, wx2, wx1, my-4, my+4, wx2, my-4, my+4)
	tx := math.Max(wx2, float64(p.x)+w) + 4
	fmt.Fprintf(body, `<text x="%.1f" y="%d" class="v">%s</text>`+"\n", tx, by+11, xmlEscape(p.fmt(v.Median)))
	if c.sweep {
		if mark, cls := verdictMark(judgeVariant(c.res.Measurements, wid, s.Label, math.Max(c.rate, 0), p.m).Verdict); mark != "" {
			fmt.Fprintf(body, `<text x="%.1f" y="%d" class="v %s">%s</text>`+"\n", tx+textWidth(p.fmt(v.Median)+" ", fontValue), by+11, cls, xmlEscape(mark))
		}
	}
}

// sweepNote draws at y the key to a sweep's verdict marks, and returns
// the y below it.
func (c *barChart) sweepNote(body *strings.Builder, y int) int {
	note := "▲/▼: every round beyond the A/A noise floor; ≈: within it"
	if c.rate > 0 {
		note = fmt.Sprintf("at %s req/s offered (open loop); ", fmtInt(c.rate)) + note
	}
	fmt.Fprintf(body, `<text x="%d" y="%d" class="v">%s</text>`+"\n", barMargin, y+4, xmlEscape(fitText(note, fontValue, float64(c.width-2*barMargin))))
	return y + 12
}

// head returns the chart's title and the headings of its two panels.
func (c *barChart) head() string {
	title := "gale benchmark"
	if c.sweep {
		title = "gale reactor sweep"
	}
	var head strings.Builder
	t := fmt.Sprintf("%s, %s (median, whisker min–max, %d round(s))", title, c.res.Started.Format("2006-01-02 15:04"), c.res.Options.Rounds)
	fmt.Fprintf(&head, `<text x="%d" y="20" class="t">%s</text>`+"\n", barMargin, xmlEscape(fitText(t, fontTitle, float64(c.width-2*barMargin))))
	left := "requests/s (higher is better)"
	if c.rate > 0 {
		left = fmt.Sprintf("p99 latency at %s req/s offered (lower is better)", fmtInt(c.rate))
	}
	fmt.Fprintf(&head, `<text x="%d" y="44" class="h">%s</text>`+"\n", c.x1, xmlEscape(fitText(left, fontHead, float64(c.x2-c.x1-10))))
	fmt.Fprintf(&head, `<text x="%d" y="44" class="h">%s</text>`+"\n", c.x2, xmlEscape(fitText("server CPU µs per request (lower is better)", fontHead, float64(c.width-c.x2-barMargin))))
	return head.String()
}
