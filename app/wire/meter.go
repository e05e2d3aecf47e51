package wire

import (
	"sync/atomic"

	"gale/handlers"
)

// The per-exchange metrics: requests by route, method and status code,
// the time to the first and to the last byte of the response, and the
// body bytes each way. Each loop counts into Meters of its own, which only
// that loop writes and any goroutine reads with atomic loads (a scrape
// sums the loops), so that the request path gains no shared write; the
// tables are fixed-size arrays indexed by small numbers, so that it gains
// no allocation either, once a loop has counted a route.

// Method is a request method's class in the metrics: one of the methods
// RFC 9110 and RFC 5789 define, or MethodOther for any other token. The
// set is fixed so that the label's values are bounded.
type Method uint8

// The method classes.
const (
	MethodGet Method = iota
	MethodHead
	MethodPost
	MethodPut
	MethodDelete
	MethodConnect
	MethodOptions
	MethodTrace
	MethodPatch
	MethodOther
	NumMethods
)

// MethodNames are the method label values, by class.
var MethodNames = [NumMethods]string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "OTHER"}

// MethodOf classifies method (case-sensitive, as methods are). A request
// that could not be parsed has no method and is MethodOther.
func MethodOf(method []byte) Method {
	switch string(method) {
	case "GET":
		return MethodGet
	case "HEAD":
		return MethodHead
	case "POST":
		return MethodPost
	case "PUT":
		return MethodPut
	case "DELETE":
		return MethodDelete
	case "CONNECT":
		return MethodConnect
	case "OPTIONS":
		return MethodOptions
	case "TRACE":
		return MethodTrace
	case "PATCH":
		return MethodPatch
	}
	return MethodOther
}

// statusCodes are the codes counted under their own label: those of the
// IANA registry. Any other code is counted under its class ("2xx"...).
var statusCodes = []int{
	100, 101, 102, 103,
	200, 201, 202, 203, 204, 205, 206, 207, 208, 226,
	300, 301, 302, 303, 304, 305, 307, 308,
	400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 421, 422, 423, 424, 425, 426, 428, 429, 431, 451,
	500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511,
}

// NumCodes is how many code slots a table has: one per registered code,
// then one per class for the others.
var NumCodes = len(statusCodes) + 5

const maxCodes = 64 + 5 // room for the registry as it stands, checked at init

// codeSlots maps a status (100-599) to its slot; codeLabels names each slot.
var codeSlots, codeLabels = func() (s [600]uint8, l [maxCodes]string) {
	if len(statusCodes) > 64 {
		panic("bug: more registered status codes than code slots")
	}
	for c := 100; c < 600; c++ {
		s[c] = uint8(len(statusCodes) + c/100 - 1)
	}
	for i, c := range statusCodes {
		s[c] = uint8(i)
		l[i] = itoa3(c)
	}
	for k := 1; k <= 5; k++ {
		l[len(statusCodes)+k-1] = string(rune('0'+k)) + "xx"
	}
	return s, l
}()

func itoa3(c int) string {
	return string([]byte{byte('0' + c/100), byte('0' + c/10%10), byte('0' + c%10)})
}

// CodeSlot is the slot status is counted in; a status outside 100-599
// (none is sent) is counted as "5xx".
func CodeSlot(status int) int {
	if status < 100 || status >= 600 {
		return len(statusCodes) + 4
	}
	return int(codeSlots[status])
}

// CodeLabel is the code label value of slot i.
func CodeLabel(i int) string { return codeLabels[i] }

// DurationBounds are the upper bounds of the duration histograms'
// buckets, in nanoseconds: from 100 µs, since an edge server answers from
// memory in microseconds, to 10 s.
var DurationBounds = [...]int64{
	100e3, 250e3, 500e3,
	1e6, 2.5e6, 5e6, 10e6, 25e6, 50e6, 100e6, 250e6, 500e6,
	1e9, 2.5e9, 5e9, 10e9,
}

// Histogram counts durations into DurationBounds' buckets. Only its
// loop writes it; any goroutine reads it.
type Histogram struct {
	counts [len(DurationBounds) + 1]atomic.Uint64 // per bucket, not cumulative; the last counts those above every bound
	sum    atomic.Uint64                          // nanoseconds
}

// Observe counts one duration of ns nanoseconds (negative ones as 0).
func (h *Histogram) Observe(ns int64) {
	if ns < 0 {
		ns = 0
	}
	i := 0
	for i < len(DurationBounds) && ns > DurationBounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(uint64(ns))
}

// AddTo adds the histogram's counts to counts (len(DurationBounds)+1 of
// them) and returns sum plus its sum of nanoseconds.
func (h *Histogram) AddTo(counts []uint64, sum uint64) uint64 {
	for i := range h.counts {
		counts[i] += h.counts[i].Load()
	}
	return sum + h.sum.Load()
}

// RouteMeter is one route's counters on one loop.
type RouteMeter struct {
	Requests  [NumMethods][maxCodes]atomic.Uint64 // by method class and code slot
	Duration  Histogram                           // head arrived to the response's last byte handed to the transport
	FirstByte Histogram                           // head arrived to the response head handed to the transport
	InBytes   atomic.Uint64                       // request body bytes
	OutBytes  atomic.Uint64                       // response body bytes
	_         [64]byte                            // keeps the next loop's counters off this one's cache lines
}

// Meters are one loop's per-route counters: slot 0 counts exchanges that
// matched no route, slot i+1 those of the route at index i of the file.
// The loop grows the table when it first counts a route (the only
// allocation, once per route and loop); Routes reads it from anywhere.
type Meters struct {
	routes atomic.Pointer[[]*RouteMeter]
}

// Route returns the counters of slot i, made on first use. Loop only.
func (m *Meters) Route(i int) *RouteMeter {
	if p := m.routes.Load(); p != nil && i < len(*p) && (*p)[i] != nil {
		return (*p)[i]
	}
	return m.grow(i)
}

func (m *Meters) grow(i int) *RouteMeter {
	var old []*RouteMeter
	if p := m.routes.Load(); p != nil {
		old = *p
	}
	n := max(len(old), i+1)
	t := make([]*RouteMeter, n)
	copy(t, old)
	if t[i] == nil {
		t[i] = new(RouteMeter)
	}
	m.routes.Store(&t)
	return t[i]
}

// Routes returns the loop's route counters by slot (nil where a route
// was not counted yet). Safe from any goroutine; the counters are read
// with atomic loads.
func (m *Meters) Routes() []*RouteMeter {
	if p := m.routes.Load(); p != nil {
		return *p
	}
	return nil
}

// Meter is what an engine notes of one exchange for the metrics and the
// access log, besides its status and response body bytes: filled as the
// exchange goes, read by Conn.Record as it ends. It is owned by the
// exchange, on its loop.
type Meter struct {
	Start   int64           // when the request's head began to arrive (unix ns)
	Head    int64           // when the response head was handed to the transport; 0 = with the last byte
	Route   *handlers.Route // the route that answered; nil = none (a parse error, no route matched)
	Method  Method
	InBytes int64 // request body bytes, as known when the exchange ends
}

// Begin starts the meter of a request with method whose head began to
// arrive at start.
func (m *Meter) Begin(method []byte, start int64) {
	*m = Meter{Start: start, Method: MethodOf(method)}
}

// observe counts the exchange m describes, answered with status and
// bodyBytes, whose last byte was handed over at end.
func (ms *Meters) observe(m *Meter, status int, bodyBytes, end int64) {
	slot := 0
	if m.Route != nil {
		slot = m.Route.Index() + 1
	}
	r := ms.Route(slot)
	r.Requests[m.Method][CodeSlot(status)].Add(1)
	d := end - m.Start
	r.Duration.Observe(d)
	if m.Head != 0 {
		d = m.Head - m.Start
	}
	r.FirstByte.Observe(d)
	if m.InBytes > 0 {
		r.InBytes.Add(uint64(m.InBytes))
	}
	if bodyBytes > 0 {
		r.OutBytes.Add(uint64(bodyBytes))
	}
}
