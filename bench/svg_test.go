package main

import (
	"encoding/xml"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// svgBox is an element's extent.
type svgBox struct {
	what                   string
	minX, minY, maxX, maxY float64
}

var reNumber = regexp.MustCompile(`-?[0-9]*\.?[0-9]+`)

// svgBoxes parses an SVG and returns its view box and the extent of every
// drawn element: rect, line, circle, polyline, path (M, H, V, L) and text,
// whose width is estimated with textWidth at the size its class gives.
func svgBoxes(t *testing.T, svg string) (w, h float64, boxes []svgBox) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	attr := func(se xml.StartElement, name string) float64 {
		for _, a := range se.Attr {
			if a.Name.Local == name {
				v, err := strconv.ParseFloat(a.Value, 64)
				if err != nil {
					t.Fatalf("%s %s=%q", se.Name.Local, name, a.Value)
				}
				return v
			}
		}
		return 0
	}
	str := func(se xml.StartElement, name string) string {
		for _, a := range se.Attr {
			if a.Name.Local == name {
				return a.Value
			}
		}
		return ""
	}
	var text *xml.StartElement
	var content strings.Builder
	inTitle := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "svg":
				f := strings.Fields(str(e, "viewBox"))
				if len(f) != 4 || f[0] != "0" || f[1] != "0" {
					t.Fatalf("viewBox %q", str(e, "viewBox"))
				}
				w, _ = strconv.ParseFloat(f[2], 64)
				h, _ = strconv.ParseFloat(f[3], 64)
				if str(e, "width") != f[2] || str(e, "height") != f[3] {
					t.Errorf("width/height %s×%s differ from the viewBox %s×%s", str(e, "width"), str(e, "height"), f[2], f[3])
				}
			case "rect":
				x, y := attr(e, "x"), attr(e, "y")
				boxes = append(boxes, svgBox{"rect", x, y, x + attr(e, "width"), y + attr(e, "height")})
			case "line":
				x1, y1, x2, y2 := attr(e, "x1"), attr(e, "y1"), attr(e, "x2"), attr(e, "y2")
				boxes = append(boxes, svgBox{"line", min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)})
			case "circle":
				cx, cy, r := attr(e, "cx"), attr(e, "cy"), attr(e, "r")
				boxes = append(boxes, svgBox{"circle", cx - r, cy - r, cx + r, cy + r})
			case "polyline":
				boxes = append(boxes, pointsBox("polyline", reNumber.FindAllString(str(e, "points"), -1)))
			case "path":
				boxes = append(boxes, pathBox(t, str(e, "d")))
			case "text":
				e := e
				text = &e
				content.Reset()
			case "title":
				inTitle = true
			}
		case xml.CharData:
			if text != nil && !inTitle {
				content.Write(e)
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "title":
				inTitle = false
			case "text":
				boxes = append(boxes, textBox(*text, content.String(), attr(*text, "x"), attr(*text, "y"), str(*text, "class")))
				text = nil
			}
		}
	}
	return w, h, boxes
}

func pointsBox(what string, nums []string) svgBox {
	b := svgBox{what: what, minX: 1e18, minY: 1e18, maxX: -1e18, maxY: -1e18}
	for i := 0; i+1 < len(nums); i += 2 {
		x, _ := strconv.ParseFloat(nums[i], 64)
		y, _ := strconv.ParseFloat(nums[i+1], 64)
		b.minX, b.maxX, b.minY, b.maxY = min(b.minX, x), max(b.maxX, x), min(b.minY, y), max(b.maxY, y)
	}
	return b
}

// pathBox follows the absolute M, L, H and V commands the charts use.
func pathBox(t *testing.T, d string) svgBox {
	t.Helper()
	b := svgBox{what: "path " + d, minX: 1e18, minY: 1e18, maxX: -1e18, maxY: -1e18}
	var x, y float64
	toks := regexp.MustCompile(`[MLHV]|-?[0-9]*\.?[0-9]+`).FindAllString(d, -1)
	cmd := ""
	for i := 0; i < len(toks); {
		if strings.ContainsAny(toks[i], "MLHV") {
			cmd = toks[i]
			i++
			continue
		}
		num := func() float64 { v, _ := strconv.ParseFloat(toks[i], 64); i++; return v }
		switch cmd {
		case "M", "L":
			x = num()
			y = num()
		case "H":
			x = num()
		case "V":
			y = num()
		default:
			t.Fatalf("path %q: unexpected %q", d, toks[i])
		}
		b.minX, b.maxX, b.minY, b.maxY = min(b.minX, x), max(b.maxX, x), min(b.minY, y), max(b.maxY, y)
	}
	return b
}

// textBox estimates a text element's extent from its anchor and class.
func textBox(e xml.StartElement, s string, x, y float64, class string) svgBox {
	size := float64(fontText)
	cls := strings.Fields(class)
	for _, c := range cls {
		switch c {
		case "t":
			size = fontTitle
		case "h", "w":
			size = fontHead
		case "v":
			size = fontValue
		}
	}
	w := textWidth(s, size)
	minX, maxX := x, x+w
	for _, c := range cls {
		switch c {
		case "l":
			minX, maxX = x-w, x
		case "m":
			minX, maxX = x-w/2, x+w/2
		}
	}
	return svgBox{"text " + strconv.Quote(s), minX, y - size, maxX, y + 0.3*size}
}

// checkInside fails for every element outside the view box.
func checkInside(t *testing.T, name, svg string) {
	t.Helper()
	w, h, boxes := svgBoxes(t, svg)
	if w <= 0 || h <= 0 || len(boxes) < 5 {
		t.Fatalf("%s: view box %v×%v with %d elements", name, w, h, len(boxes))
	}
	for _, b := range boxes {
		if b.minX < -0.01 || b.minY < -0.01 || b.maxX > w+0.01 || b.maxY > h+0.01 {
			t.Errorf("%s: %s spans (%.1f,%.1f)–(%.1f,%.1f), outside 0 0 %v %v", name, b.what, b.minX, b.minY, b.maxX, b.maxY, w, h)
		}
	}
}

// TestChartsInsideViewBox renders every chart kind, with long labels, and
// checks that every element lies inside its view box.
func TestChartsInsideViewBox(t *testing.T) {
	long := "reuse_port=false load_balancing=source-addr-hash read_buffer=256KiB write_buffer=256KiB edge_triggered=true"
	closed := sweepRun(3, nil, map[string][][2]float64{
		baselineLabel:   {{100000, 6}, {90000, 6.6}, {110000, 5.4}},
		aaLabel:         {{102000, 6.1}, {89000, 6.5}, {108000, 5.5}},
		long:            {{1500000, 5}, {1400000, 5.5}, {1600000, 4.5}},
		"event_loops=2": {{80000, 60}, {70000, 66}, {90000, 54}},
	})
	open := sweepRun(3, []float64{5000, 10000, 20000, 40000, 80000, 160000, 320000, 640000, 1000000}, map[string][][2]float64{
		baselineLabel:   {{0, 6}, {0, 6}, {0, 6}},
		aaLabel:         {{0, 6.05}, {0, 5.97}, {0, 6.02}},
		"event_loops=2": {{0, 900}, {0, 930}, {0, 910}},
		long:            {{0, 0.01}, {0, 0.02}, {0, 0.01}},
	})
	scaling := sweepRun(3, []float64{20000}, map[string][][2]float64{
		baselineLabel:     {{0, 6}, {0, 6}, {0, 6}},
		aaLabel:           {{0, 6}, {0, 6}, {0, 6}},
		"event_loops=2":   {{0, 7}, {0, 7}, {0, 7}},
		"event_loops=4":   {{0, 9}, {0, 9}, {0, 9}},
		"server_cpus=0-1": {{0, 5}, {0, 5}, {0, 5}},
	})
	charts := map[string]string{"compare": renderSVG(testResults())}
	for name, res := range map[string]*results{"closed sweep": closed, "open sweep": open, "scaling sweep": scaling} {
		for suffix, svg := range chartFiles(res) {
			charts[name+suffix] = svg
		}
	}
	for _, want := range []string{"compare", "closed sweep", "open sweep", "open sweep-latency", "scaling sweep-scaling"} {
		if _, ok := charts[want]; !ok {
			t.Errorf("no %s chart (have %d)", want, len(charts))
		}
	}
	for name, svg := range charts {
		checkInside(t, name, svg)
	}
	if !strings.Contains(charts["closed sweep"], "▲ better") || !strings.Contains(charts["closed sweep"], "A/A") {
		t.Errorf("the sweep chart shows no verdicts")
	}
	if n := strings.Count(charts["open sweep-latency"], "<polyline"); n != 3*4 {
		t.Errorf("latency chart: %d curves, want 3 panels × 4 variants", n)
	}
}
