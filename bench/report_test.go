package main

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// okRun is a successful synthetic measurement.
func okRun(round int, server, workload string, rps, cpu float64) measurement {
	return measurement{Round: round, Server: server, Label: server, Workload: workload, Status: "ok",
		Wrk:         &wrkResult{Requests: int64(rps), ReqPerSec: rps, LatencyUs: map[string]float64{"50": 500, "99": 1500}},
		CPUUsPerReq: cpu, ServerBusy: 0.9, SwitchIns: uint64(rps / 20), PeakRSSKiB: 10240, ServerCPUs: cpuShares{Others: 0.05}}
}

func testResults() *results {
	ms := []measurement{
		okRun(1, "gale", "static-128", 120000, 6), okRun(1, "nginx", "static-128", 100000, 8),
		okRun(2, "gale", "static-128", 110000, 6.5), okRun(2, "nginx", "static-128", 115000, 8.2),
		okRun(3, "gale", "static-128", 130000, 5.5), okRun(3, "nginx", "static-128", 105000, 7.9),
		{Round: 1, Server: "gale", Label: "gale", Workload: "proxy-128", Status: "unsupported",
			Reason: "server exited at start (exit status 1): gale.yaml:11:5: routes[1].proxy: not supported yet | x"},
		okRun(1, "nginx", "proxy-128", 50000, 14),
	}
	ms[len(ms)-1].Upstream = &upstreamStats{Conns: 10, Requests: 50000}
	return &results{
		Kind: "compare", Started: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC),
		Options:      options{Rounds: 3, Seconds: 2, Connections: 64, Threads: 1, ServerCPUs: "0", ClientCPUs: "1", Workers: 1},
		Servers:      []*serverSpec{{Name: "gale", Version: "gale dev"}, {Name: "nginx", Version: "nginx/1.22.1"}},
		Fairness:     map[string][]string{"nginx": {"access_log off"}},
		Workloads:    []string{"static-128", "proxy-128"},
		Measurements: ms,
		Notes:        []string{"caddy: not installed; skipped (install with: " + installHint + ")"},
	}
}

func TestRenderMarkdownCompare(t *testing.T) {
	res := testResults()
	if md := renderMarkdown(res); strings.Contains(md, "Warning") {
		t.Errorf("warning without foreign load:\n%s", md)
	}
	res.Measurements[1].ServerCPUs.Others = 0.9
	md := renderMarkdown(res)
	for _, want := range []string{
		"**Warning: in 1 run(s) other processes used more than 25% of the server CPUs (up to 90%).",
		"## static-128: static file, 128 B (GET /s128.bin)",
		// gale median 120000 (110000–130000), CPU 6.00 (5.50–6.50).
		"| gale | 120,000 (110,000–130,000) | 6.00 (5.50–6.50) | 90% | 0.050 | 0.50 ms | 1.50 ms | 10.0 | 0 / 0 | 5% | 3/3 | — | — |",
		// nginx median 105000; gale ÷ nginx = 1.14, ahead in rounds 1 and 3; CPU 6/8 = 0.75, cheaper in 3 of 3.
		"| nginx | 105,000 (100,000–115,000) | 8.00 (7.90–8.20) | 90% | 0.050 | 0.50 ms | 1.50 ms | 10.0 | 0 / 0 | 5% | 3/3 | 1.14× (2/3) | 0.75× (3/3) |", // median of 5, 90, 5
		"| gale | not supported: server exited at start (exit status 1): gale.yaml:11:5: routes[1].proxy: not supported yet \\| x |",
		"- nginx: 5000.0 upstream requests per upstream connection",
		"| static-128 | 1.14× (2/3) | 0.75× (3/3) |",
		// Per round: 6/8, 6.5/8.2, 5.5/7.9.
		"| static-128 | 0.75× (0.70–0.79) |",
		"| proxy-128 | — | — |",
		"- **nginx** `nginx/1.22.1`",
		"  - access_log off",
		"- caddy: not installed; skipped (install with: " + installHint + ")",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q\n%s", want, md)
		}
	}
}

func TestRenderMarkdownSweep(t *testing.T) {
	res := testResults()
	res.Kind = "sweep"
	res.Workloads = []string{"static-128"}
	res.Sweep = &sweepInfo{Workload: "static-128", Variants: []variant{{Label: baselineLabel}, {Label: "event_loops=2", Settings: []setting{{"event_loops", "2"}}}}}
	var ms []measurement
	for _, m := range res.Measurements {
		if m.Workload == "static-128" {
			if m.Label == "gale" {
				m.Label = baselineLabel
			} else {
				m.Label, m.Server = "event_loops=2", "gale"
			}
			ms = append(ms, m)
		}
	}
	res.Measurements = ms
	md := renderMarkdown(res)
	for _, want := range []string{
		"# gale reactor sweep",
		"| baseline | 120,000 (110,000–130,000) |",
		// Per round: 100/120, 115/110, 105/130 and 8/6, 8.2/6.5, 7.9/5.5; no A/A copy to judge them by.
		"| event_loops=2 | 105,000 (100,000–115,000) | 8.00 (7.90–8.20) | 90% | 0.050 | 0.50 ms | 1.50 ms | 10.0 | 0 / 0 | 5% | 3/3 | 0.83× (0.81–1.05) | no A/A run | 1.33× (1.26–1.44) | no A/A run |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q\n%s", want, md)
		}
	}
}

func TestRenderSVG(t *testing.T) {
	svg := renderSVG(testResults())
	d := xml.NewDecoder(strings.NewReader(svg))
	elems := map[string]int{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok {
			elems[se.Name.Local]++
		}
	}
	// Two panels × (2 series on static-128 + 1 bar on proxy-128).
	if elems["svg"] != 1 || elems["rect"] != 1+2*3 {
		t.Fatalf("elements %v", elems)
	}
	for _, want := range []string{">static-128<", ">proxy-128<", "not supported", "120,000", "6.00", "requests/s (higher is better)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

func TestFormatting(t *testing.T) {
	tests := []struct{ got, want string }{
		{fmtInt(1234567.4), "1,234,567"},
		{fmtInt(999), "999"},
		{fmtInt(-1234), "-1,234"},
		{fmtMs(1500), "1.50 ms"},
		{fmtRange(summary{N: 1, Median: 2, Min: 2, Max: 2}, cpuPrec), "2.00"},
		{fmtRange(summary{}, cpuPrec), "—"},
		{fmtRatio(1.234, 2, 3), "1.23× (2/3)"},
		{xmlEscape(`a<b & "c">`), "a&lt;b &amp; &quot;c&quot;&gt;"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// TestReportCommand renders a results.json again and refuses bad usage.
func TestReportCommand(t *testing.T) {
	res := testResults()
	for i := range res.Measurements {
		res.Measurements[i].ServerBusy = 0 // as recorded before server_busy and server_switch_ins existed
		res.Measurements[i].SwitchIns = 0
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if code := run([]string{"report", in}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	md, err := os.ReadFile(strings.TrimSuffix(in, ".json") + ".md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| static-128 | 0.75× (0.70–0.79) |",
		"| gale | 120,000 (110,000–130,000) | 6.00 (5.50–6.50) | — | — | 0.50 ms",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if svg, err := os.ReadFile(strings.TrimSuffix(in, ".json") + ".svg"); err != nil || !strings.HasPrefix(string(svg), "<svg") {
		t.Errorf("svg: %v %.40q", err, svg)
	}
	for _, args := range [][]string{{"report"}, {"report", "x.md"}, {"report", "a.json", "b.json"}} {
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if code := run([]string{"report", filepath.Join(t.TempDir(), "missing.json")}, &stdout, &stderr); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
}
