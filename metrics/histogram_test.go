package metrics

import (
	"bytes"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// A histogram reads back with cumulative buckets, +Inf last, and its sum
// and count, under the labels it was written with.
func TestWriterHistogram(t *testing.T) {
	var w Writer
	w.Family("gale_x_seconds", Histogram, "X.")
	w.Histogram("gale_x_seconds", &HistogramSample{Bounds: []float64{0.001, 0.5}, Counts: []uint64{2, 0, 3}, Sum: 7.25}, "route", "a")
	w.Histogram("gale_x_seconds", &HistogramSample{Bounds: []float64{0.001, 0.5}, Counts: []uint64{0, 1, 0}, Sum: 0.25}, "route", "b")
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(w.Bytes()))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, w.Bytes())
	}
	f := fams["gale_x_seconds"]
	if f == nil || f.GetType().String() != "HISTOGRAM" || len(f.Metric) != 2 {
		t.Fatalf("family: %v\n%s", f, w.Bytes())
	}
	h := f.Metric[0].GetHistogram()
	if h.GetSampleCount() != 5 || h.GetSampleSum() != 7.25 || len(h.Bucket) != 3 ||
		h.Bucket[0].GetUpperBound() != 0.001 || h.Bucket[0].GetCumulativeCount() != 2 ||
		h.Bucket[1].GetUpperBound() != 0.5 || h.Bucket[1].GetCumulativeCount() != 2 {
		t.Errorf("histogram a: %v", h)
	}
	if h := f.Metric[1].GetHistogram(); h.GetSampleCount() != 1 || h.Bucket[1].GetCumulativeCount() != 1 {
		t.Errorf("histogram b: %v", h)
	}
	if !bytes.Contains(w.Bytes(), []byte(`gale_x_seconds_bucket{route="a",le="+Inf"} 5`)) {
		t.Errorf("no +Inf bucket:\n%s", w.Bytes())
	}
}
