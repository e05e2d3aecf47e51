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

// renderSVG draws, per workload, two horizontal bar panels: requests/s
// and server CPU µs per request, one bar per series at its median with a
// min–max whisker, and in a sweep each variant's verdict next to its
// value. The width is computed from the labels and the panels, so every
// element lies inside the view box.
func renderSVG(res *results) string {
	labs := labels(res)
	colour := seriesColours(labs)
	sweep := res.Kind == "sweep"
	const (
		barH    = 14
		barGap  = 5
		groupTo = 24 // title height per workload
		top     = 56
		panelW  = 300
		margin  = 10
	)
	labelW := 60.0
	for _, l := range labs {
		labelW = math.Max(labelW, textWidth(l, fontText)+10)
	}
	labelW = math.Min(labelW, 420)
	valueRoom := textWidth("1,000,000", fontValue) + 8
	if sweep {
		valueRoom += textWidth(" ▲ better", fontValue)
	}
	x1 := int(margin + labelW)
	x2 := x1 + panelW + int(valueRoom) + 20
	width := x2 + panelW + int(valueRoom) + margin
	rate := -1.0
	if sweep && len(res.Options.Rates) > 0 {
		rate = res.Options.Rates[len(res.Options.Rates)-1]
	}
	var body strings.Builder
	y := top
	for _, wid := range res.Workloads {
		var rows []seriesStats
		for _, l := range labs {
			if s := aggregateAt(res.Measurements, wid, l, rate); s.Total > 0 {
				rows = append(rows, s)
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&body, `<text x="%d" y="%d" class="w">%s</text>`+"\n", margin, y+14, xmlEscape(fitText(wid, fontHead, float64(width-2*margin))))
		y += groupTo
		panels := []struct {
			x   int
			get func(seriesStats) summary
			fmt func(float64) string
			m   metric
		}{
			{x1, func(s seriesStats) summary { return s.RPS }, fmtInt, metricRPS},
			{x2, func(s seriesStats) summary { return s.CPU }, cpuPrec, metricCPU},
		}
		if rate > 0 {
			panels[0].get, panels[0].fmt, panels[0].m = func(s seriesStats) summary { return s.P99 }, fmtMs, metricP99
		}
		for i, s := range rows {
			by := y + i*(barH+barGap)
			fmt.Fprintf(&body, `<text x="%d" y="%d" class="l">%s</text>`+"\n", x1-5, by+11, xmlEscape(fitText(s.Label, fontText, labelW-10)))
		}
		for pi, p := range panels {
			scale := 0.0
			for _, s := range rows {
				if v := p.get(s); v.N > 0 {
					scale = math.Max(scale, v.Max)
				}
			}
			if scale <= 0 {
				scale = 1
			}
			fmt.Fprintf(&body, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`+"\n", p.x, y-2, p.x, y+len(rows)*(barH+barGap))
			for i, s := range rows {
				by := y + i*(barH+barGap)
				if pi == 1 && p.x > x1 {
					// The CPU panel's rows are read against the labels on the left.
					fmt.Fprintf(&body, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="grid"/>`+"\n", p.x-15, by+barH/2, p.x-2, by+barH/2)
				}
				v := p.get(s)
				if v.N == 0 {
					what := "not supported"
					if s.Status == "failed" {
						what = "failed"
					}
					fmt.Fprintf(&body, `<text x="%d" y="%d" class="na">%s</text>`+"\n", p.x+4, by+11, what)
					continue
				}
				w := float64(panelW) * v.Median / scale
				fmt.Fprintf(&body, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s</title></rect>`+"\n",
					p.x, by, w, barH, colour[s.Label], xmlEscape(s.Label), xmlEscape(fmtRange(v, p.fmt)))
				wx1 := float64(p.x) + float64(panelW)*v.Min/scale
				wx2 := float64(p.x) + float64(panelW)*v.Max/scale
				my := float64(by) + barH/2.0
				fmt.Fprintf(&body, `<path d="M%.1f %.1fH%.1fM%.1f %.1fV%.1fM%.1f %.1fV%.1f" class="wh"/>`+"\n",
					wx1, my, wx2, wx1, my-4, my+4, wx2, my-4, my+4)
				tx := math.Max(wx2, float64(p.x)+w) + 4
				fmt.Fprintf(&body, `<text x="%.1f" y="%d" class="v">%s</text>`+"\n", tx, by+11, xmlEscape(p.fmt(v.Median)))
				if sweep {
					if mark, cls := verdictMark(judgeVariant(res.Measurements, wid, s.Label, math.Max(rate, 0), p.m).Verdict); mark != "" {
						fmt.Fprintf(&body, `<text x="%.1f" y="%d" class="v %s">%s</text>`+"\n", tx+textWidth(p.fmt(v.Median)+" ", fontValue), by+11, cls, xmlEscape(mark))
					}
				}
			}
		}
		y += len(rows)*(barH+barGap) + 14
	}
	if sweep {
		note := "▲/▼: every round beyond the A/A noise floor; ≈: within it"
		if rate > 0 {
			note = fmt.Sprintf("at %s req/s offered (open loop); ", fmtInt(rate)) + note
		}
		fmt.Fprintf(&body, `<text x="%d" y="%d" class="v">%s</text>`+"\n", margin, y+4, xmlEscape(fitText(note, fontValue, float64(width-2*margin))))
		y += 12
	}
	height := y + 10
	title := "gale benchmark"
	if sweep {
		title = "gale reactor sweep"
	}
	var head strings.Builder
	t := fmt.Sprintf("%s, %s (median, whisker min–max, %d round(s))", title, res.Started.Format("2006-01-02 15:04"), res.Options.Rounds)
	fmt.Fprintf(&head, `<text x="%d" y="20" class="t">%s</text>`+"\n", margin, xmlEscape(fitText(t, fontTitle, float64(width-2*margin))))
	left := "requests/s (higher is better)"
	if rate > 0 {
		left = fmt.Sprintf("p99 latency at %s req/s offered (lower is better)", fmtInt(rate))
	}
	fmt.Fprintf(&head, `<text x="%d" y="44" class="h">%s</text>`+"\n", x1, xmlEscape(fitText(left, fontHead, float64(x2-x1-10))))
	fmt.Fprintf(&head, `<text x="%d" y="44" class="h">%s</text>`+"\n", x2, xmlEscape(fitText("server CPU µs per request (lower is better)", fontHead, float64(width-x2-margin))))
	return svgDoc(width, height, head.String()+body.String())
}
