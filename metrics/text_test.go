package metrics

import (
	"bytes"
	"math"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// What the Writer writes is what Prometheus's own parser reads back: the
// families, their types and help, every label (escapes included) and
// every value.
func TestWriterParses(t *testing.T) {
	var w Writer
	w.Family("gale_requests_total", Counter, `Requests answered, "quoted" \ and
two lines.`)
	w.Uint("gale_requests_total", 42, "loop", "0")
	w.Uint("gale_requests_total", 1<<63, "loop", `a"b\c
d`)
	w.Family("gale_connections_open", Gauge, "Open connections.")
	w.Int("gale_connections_open", -3)
	w.Family("gale_ratio", Gauge, "A float.")
	w.Float("gale_ratio", 0.125, "kind", "x")
	w.Float("gale_ratio", math.Inf(1), "kind", "inf")
	w.Float("gale_ratio", math.NaN(), "kind", "nan")

	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(w.Bytes()))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, w.Bytes())
	}
	req := fams["gale_requests_total"]
	if req == nil || req.GetType().String() != "COUNTER" || req.GetHelp() != "Requests answered, \"quoted\" \\ and\ntwo lines." || len(req.Metric) != 2 {
		t.Fatalf("requests family: %v", req)
	}
	if m := req.Metric[1]; m.GetLabel()[0].GetValue() != "a\"b\\c\nd" || m.GetCounter().GetValue() != float64(uint64(1)<<63) {
		t.Errorf("escaped label: %v", m)
	}
	if g := fams["gale_connections_open"]; g == nil || g.Metric[0].GetGauge().GetValue() != -3 {
		t.Errorf("gauge: %v", g)
	}
	r := fams["gale_ratio"]
	if r == nil || len(r.Metric) != 3 || r.Metric[0].GetGauge().GetValue() != 0.125 ||
		!math.IsInf(r.Metric[1].GetGauge().GetValue(), 1) || !math.IsNaN(r.Metric[2].GetGauge().GetValue()) {
		t.Errorf("floats: %v", r)
	}
}

// A scrape's buffer, reused, stops allocating.
func TestWriterAllocs(t *testing.T) {
	var w Writer
	run := func() {
		w.b = w.b[:0]
		w.Family("gale_requests_total", Counter, "Requests.")
		for i := uint64(0); i < 8; i++ {
			w.Uint("gale_requests_total", i, "loop", "3", "class", "2xx")
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("%v allocations per scrape, want 0", n)
	}
}

// A one-sample family reads back as its type with its value.
func TestWriterSingles(t *testing.T) {
	var w Writer
	w.Counter("gale_x_total", "X.", 7)
	w.Gauge("gale_y", "Y.", -2)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(w.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if f := fams["gale_x_total"]; f == nil || f.GetType().String() != "COUNTER" || f.Metric[0].GetCounter().GetValue() != 7 {
		t.Errorf("counter: %v", f)
	}
	if f := fams["gale_y"]; f == nil || f.GetType().String() != "GAUGE" || f.Metric[0].GetGauge().GetValue() != -2 {
		t.Errorf("gauge: %v", f)
	}
}
