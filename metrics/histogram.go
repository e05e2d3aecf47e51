package metrics

import "strconv"

// HistogramSample is one histogram's state as a scrape writes it:
// Counts[i] is how many observations fell into bucket i alone (at most
// Bounds[i], above Bounds[i-1]), and the last of Counts, one longer than
// Bounds, counts those above every bound. Sum is the sum of the
// observations, in the bounds' unit.
type HistogramSample struct {
	Bounds []float64 // upper bounds, ascending
	Counts []uint64  // len(Bounds)+1 counts, not cumulative
	Sum    float64
}

// Histogram writes one histogram's samples (name_bucket for each bound
// and +Inf, cumulative as the format asks, then name_sum and name_count)
// with labels. The family must have been started with Family(name,
// Histogram, help).
func (w *Writer) Histogram(name string, h *HistogramSample, labels ...string) {
	if len(h.Counts) != len(h.Bounds)+1 {
		panic("metrics: a histogram needs one count more than it has bounds")
	}
	bucket := name + "_bucket"
	ls := make([]string, len(labels), len(labels)+2)
	copy(ls, labels)
	ls = append(ls, "le", "")
	total := uint64(0)
	for i, c := range h.Counts {
		total += c
		if i < len(h.Bounds) {
			ls[len(ls)-1] = strconv.FormatFloat(h.Bounds[i], 'g', -1, 64)
		} else {
			ls[len(ls)-1] = "+Inf"
		}
		w.Uint(bucket, total, ls...)
	}
	w.Float(name+"_sum", h.Sum, labels...)
	w.Uint(name+"_count", total, labels...)
}
