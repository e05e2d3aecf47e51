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

// renderSVG draws, per workload, two horizontal bar panels: requests/s
// and server CPU µs per request, one bar per series at its median with a
// min–max whisker. Each panel has its own scale (the value is printed).
func renderSVG(res *results) string {
	labs := labels(res)
	colour := map[string]string{}
	next := 0
	for _, l := range labs {
		if l == "gale" || l == baselineLabel {
			colour[l] = palette[0]
			continue
		}
		next++
		colour[l] = palette[next%len(palette)]
	}
	const (
		width   = 1000
		barH    = 14
		barGap  = 5
		groupTo = 24 // title height per workload
		top     = 56
	)
	labelW := 60
	for _, l := range labs {
		labelW = max(labelW, 7*len(l)+10)
	}
	labelW = min(labelW, 300)
	panelW := (width - 2*labelW - 3*20 - 90) / 2
	if panelW < 120 {
		panelW = 120
	}
	var body strings.Builder
	y := top
	for _, wid := range res.Workloads {
		var rows []seriesStats
		for _, l := range labs {
			if s := aggregate(res.Measurements, wid, l); s.Total > 0 {
				rows = append(rows, s)
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&body, `<text x="10" y="%d" class="w">%s</text>`+"\n", y+14, xmlEscape(wid))
		y += groupTo
		panels := []struct {
			x   int
			get func(seriesStats) summary
			fmt func(float64) string
		}{
			{20 + labelW, func(s seriesStats) summary { return s.RPS }, fmtInt},
			{20 + labelW + panelW + 45 + labelW, func(s seriesStats) summary { return s.CPU }, cpuPrec},
		}
		for _, p := range panels {
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
				fmt.Fprintf(&body, `<text x="%d" y="%d" class="l">%s</text>`+"\n", p.x-5, by+11, xmlEscape(s.Label))
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
				x1 := float64(p.x) + float64(panelW)*v.Min/scale
				x2 := float64(p.x) + float64(panelW)*v.Max/scale
				my := float64(by) + barH/2.0
				fmt.Fprintf(&body, `<path d="M%.1f %.1fH%.1fM%.1f %.1fV%.1fM%.1f %.1fV%.1f" class="wh"/>`+"\n",
					x1, my, x2, x1, my-4, my+4, x2, my-4, my+4)
				fmt.Fprintf(&body, `<text x="%.1f" y="%d" class="v">%s</text>`+"\n", math.Max(x2, float64(p.x)+w)+4, by+11, xmlEscape(p.fmt(v.Median)))
			}
		}
		y += len(rows)*(barH+barGap) + 14
	}
	height := y + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">`+"\n", width, height, width, height)
	b.WriteString(`<style>text{font-size:11px;fill:#212529}.t{font-size:15px;font-weight:bold}.h{font-size:12px;font-weight:bold}.w{font-size:12px;font-weight:bold}` +
		`.l{text-anchor:end}.v{font-size:10px}.na{font-style:italic;fill:#868e96}.axis{stroke:#adb5bd}.wh{stroke:#212529;stroke-width:1;fill:none}</style>` + "\n")
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	title := "gale benchmark"
	if res.Kind == "sweep" {
		title = "gale reactor sweep"
	}
	fmt.Fprintf(&b, `<text x="10" y="20" class="t">%s, %s (median, whisker min–max, %d round(s))</text>`+"\n",
		xmlEscape(title), res.Started.Format("2006-01-02 15:04"), res.Options.Rounds)
	fmt.Fprintf(&b, `<text x="%d" y="44" class="h">requests/s (higher is better)</text>`+"\n", 20+labelW)
	fmt.Fprintf(&b, `<text x="%d" y="44" class="h">server CPU µs per request (lower is better)</text>`+"\n", 20+labelW+panelW+45+labelW)
	b.WriteString(body.String())
	b.WriteString("</svg>\n")
	return b.String()
}
