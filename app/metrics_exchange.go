package app

import (
	"gale/app/wire"
	"gale/metrics"
)

// The per-route families: what each loop's wire.Meters counted, summed
// over the loops at scrape time. Routes are labelled by their configured
// name or their index in the file, never by anything a request says, and
// methods and codes come from fixed sets, so the series are bounded.

// noRouteLabel labels exchanges that matched no route: requests that
// could not be parsed, or that no route answered.
const noRouteLabel = "none"

// routeTotals are one route's counters, summed over the loops.
type routeTotals struct {
	seen      bool
	requests  [wire.NumMethods][]uint64 // by code slot
	duration  []uint64
	firstByte []uint64
	durSum    uint64
	fbSum     uint64
	in, out   uint64
}

// sumRouteMeters adds up the loops' route counters, by slot.
func (s *Server) sumRouteMeters() []routeTotals {
	var t []routeTotals
	for _, l := range s.loopSlice() {
		for slot, rm := range l.Meters.Routes() {
			if rm == nil {
				continue
			}
			for len(t) <= slot {
				t = append(t, routeTotals{})
			}
			t[slot].add(rm)
		}
	}
	return t
}

func (rt *routeTotals) add(rm *wire.RouteMeter) {
	if !rt.seen {
		rt.seen = true
		for m := range rt.requests {
			rt.requests[m] = make([]uint64, wire.NumCodes)
		}
		rt.duration = make([]uint64, len(wire.DurationBounds)+1)
		rt.firstByte = make([]uint64, len(wire.DurationBounds)+1)
	}
	for m := range rt.requests {
		for c := range rt.requests[m] {
			rt.requests[m][c] += rm.Requests[m][c].Load()
		}
	}
	rt.durSum = rm.Duration.AddTo(rt.duration, rt.durSum)
	rt.fbSum = rm.FirstByte.AddTo(rt.firstByte, rt.fbSum)
	rt.in += rm.InBytes.Load()
	rt.out += rm.OutBytes.Load()
}

// durationBounds are wire.DurationBounds in seconds.
var durationBounds = func() []float64 {
	b := make([]float64, len(wire.DurationBounds))
	for i, ns := range wire.DurationBounds {
		b[i] = float64(ns) / 1e9
	}
	return b
}()

// writeExchangeMetrics writes the per-route families. They are empty
// when the server counts no exchanges (no metrics listener).
func (s *Server) writeExchangeMetrics(w *metrics.Writer) {
	totals := s.sumRouteMeters()
	router := s.sh.Set.Load().Router
	labels := make([]string, len(totals))
	for slot := range totals {
		labels[slot] = noRouteLabel
		if slot > 0 {
			labels[slot] = router.RouteLabel(slot - 1)
		}
	}
	w.Family("gale_http_requests_total", metrics.Counter, "Requests answered, by route (its name, or its index in the file; none = no route), method and status code.")
	for slot := range totals {
		writeRouteRequests(w, labels[slot], &totals[slot])
	}
	w.Family("gale_http_request_duration_seconds", metrics.Histogram, "From the request head's first byte to the response's last byte handed to the transport, by route.")
	for slot, t := range totals {
		if t.seen {
			w.Histogram("gale_http_request_duration_seconds", &metrics.HistogramSample{Bounds: durationBounds, Counts: t.duration, Sum: float64(t.durSum) / 1e9}, "route", labels[slot])
		}
	}
	w.Family("gale_http_time_to_first_byte_seconds", metrics.Histogram, "From the request head's first byte to the response head handed to the transport, by route.")
	for slot, t := range totals {
		if t.seen {
			w.Histogram("gale_http_time_to_first_byte_seconds", &metrics.HistogramSample{Bounds: durationBounds, Counts: t.firstByte, Sum: float64(t.fbSum) / 1e9}, "route", labels[slot])
		}
	}
	writeRouteBytes(w, "gale_http_request_body_bytes_total", "Request body bytes read (HTTP/1.1 chunk framing included), by route.", totals, labels, func(t *routeTotals) uint64 { return t.in })
	writeRouteBytes(w, "gale_http_response_body_bytes_total", "Response body bytes sent, by route.", totals, labels, func(t *routeTotals) uint64 { return t.out })
}

// writeRouteRequests writes a route's request counts, the non-zero ones.
func writeRouteRequests(w *metrics.Writer, route string, t *routeTotals) {
	if !t.seen {
		return
	}
	for m := range t.requests {
		for c, n := range t.requests[m] {
			if n > 0 {
				w.Uint("gale_http_requests_total", n, "route", route, "method", wire.MethodNames[m], "code", wire.CodeLabel(c))
			}
		}
	}
}

// writeRouteBytes writes one per-route byte counter family.
func writeRouteBytes(w *metrics.Writer, name, help string, totals []routeTotals, labels []string, read func(*routeTotals) uint64) {
	w.Family(name, metrics.Counter, help)
	for slot := range totals {
		if totals[slot].seen {
			w.Uint(name, read(&totals[slot]), "route", labels[slot])
		}
	}
}
