// Package metrics writes the Prometheus text exposition format (version
// 0.0.4): families of counters and gauges, each sample a name, labels and
// a value. It holds no state of its own: a scrape asks the server for its
// counters (which each event loop writes for itself and anyone may read
// with atomic loads) and writes them through a Writer, so that metrics
// cost the request path nothing.
package metrics

import (
	"math"
	"strconv"
)

// ContentType is what a scrape is answered with.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Type is a metric family's type, as the format's TYPE line names it.
type Type string

// The family types gale exposes.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
)

// Writer appends families and their samples to a buffer. Name a family
// once (Family), then write its samples; names and label names must be
// valid metric and label names (they are fixed in the code, never taken
// from a request).
type Writer struct {
	b []byte
}

// Bytes returns what was written.
func (w *Writer) Bytes() []byte { return w.b }

// Family starts a family: its HELP and TYPE lines.
func (w *Writer) Family(name string, typ Type, help string) {
	w.b = append(w.b, "# HELP "...)
	w.b = append(w.b, name...)
	w.b = append(w.b, ' ')
	w.b = appendEscaped(w.b, help, false)
	w.b = append(w.b, "\n# TYPE "...)
	w.b = append(w.b, name...)
	w.b = append(w.b, ' ')
	w.b = append(w.b, typ...)
	w.b = append(w.b, '\n')
}

// Counter writes a counter family of one sample without labels.
func (w *Writer) Counter(name, help string, v uint64) {
	w.Family(name, Counter, help)
	w.Uint(name, v)
}

// Gauge writes a gauge family of one sample without labels.
func (w *Writer) Gauge(name, help string, v int64) {
	w.Family(name, Gauge, help)
	w.Int(name, v)
}

// Uint writes one sample with an integer value. labels are name, value
// pairs.
func (w *Writer) Uint(name string, v uint64, labels ...string) {
	w.sampleStart(name, labels)
	w.b = strconv.AppendUint(w.b, v, 10)
	w.b = append(w.b, '\n')
}

// Int writes one sample with a signed integer value.
func (w *Writer) Int(name string, v int64, labels ...string) {
	w.sampleStart(name, labels)
	w.b = strconv.AppendInt(w.b, v, 10)
	w.b = append(w.b, '\n')
}

// Float writes one sample with a floating-point value (NaN and the
// infinities as the format spells them).
func (w *Writer) Float(name string, v float64, labels ...string) {
	w.sampleStart(name, labels)
	switch {
	case math.IsNaN(v):
		w.b = append(w.b, "NaN"...)
	case math.IsInf(v, 1):
		w.b = append(w.b, "+Inf"...)
	case math.IsInf(v, -1):
		w.b = append(w.b, "-Inf"...)
	default:
		w.b = strconv.AppendFloat(w.b, v, 'g', -1, 64)
	}
	w.b = append(w.b, '\n')
}

// sampleStart writes a sample's name and labels and the space before its
// value. An odd label list is a programming error.
func (w *Writer) sampleStart(name string, labels []string) {
	if len(labels)%2 != 0 {
		panic("metrics: labels must be name, value pairs")
	}
	w.b = append(w.b, name...)
	if len(labels) > 0 {
		w.b = append(w.b, '{')
		for i := 0; i < len(labels); i += 2 {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, labels[i]...)
			w.b = append(w.b, `="`...)
			w.b = appendEscaped(w.b, labels[i+1], true)
			w.b = append(w.b, '"')
		}
		w.b = append(w.b, '}')
	}
	w.b = append(w.b, ' ')
}

// appendEscaped appends s escaped as the format asks: backslash and line
// feed in HELP text, and the double quote too in label values.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}
