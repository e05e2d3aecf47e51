package app

import (
	"time"

	"gale/handlers"
	"gale/metrics"
	"gale/proxy"
)

// upstreamRow is one configured upstream of a proxy route with its
// counters summed over the loops.
type upstreamRow struct {
	route, addr string
	healthy     bool
	s           proxy.UpstreamSnapshot
}

// upstreamRows gathers every upstream of the current config's proxy
// routes. The counters belong to the router: a reload starts them anew.
func (s *Server) upstreamRows() []upstreamRow {
	var rows []upstreamRow
	now := time.Now().UnixNano()
	router := s.sh.Set.Load().Router
	if router == nil {
		return nil
	}
	for _, rt := range router.Routes() {
		h, ok := handlers.Unwrap(rt.Handler).(*proxy.Handler)
		if !ok {
			continue
		}
		for _, u := range h.Upstreams() {
			row := upstreamRow{route: rt.Label(), addr: u.String(), healthy: u.Healthy(now)}
			u.Stats(&row.s)
			rows = append(rows, row)
		}
	}
	return rows
}

// writeUpstreamMetrics writes the per-upstream families, labelled by the
// route and the upstream as configured.
func (s *Server) writeUpstreamMetrics(w *metrics.Writer) {
	rows := s.upstreamRows()
	if len(rows) == 0 {
		return
	}
	w.Family("gale_upstream_server_attempts_total", metrics.Counter, "Attempts at each upstream of each proxy route (a retry is another attempt).")
	for _, r := range rows {
		w.Uint("gale_upstream_server_attempts_total", r.s.Attempts, "route", r.route, "upstream", r.addr)
	}
	w.Family("gale_upstream_server_failures_total", metrics.Counter, "Failed attempts at each upstream, by kind: connect, timeout, reset (closed before or while answering), bad_response.")
	for _, r := range rows {
		for k, n := range r.s.Failures {
			w.Uint("gale_upstream_server_failures_total", n, "route", r.route, "upstream", r.addr, "kind", proxy.FailKindNames[k])
		}
	}
	w.Family("gale_upstream_server_retries_total", metrics.Counter, "Attempts at each upstream that were followed by another.")
	for _, r := range rows {
		w.Uint("gale_upstream_server_retries_total", r.s.Retries, "route", r.route, "upstream", r.addr)
	}
	w.Family("gale_upstream_server_healthy", metrics.Gauge, "1 while the upstream is in service (no failed active check, no passive cooldown), else 0.")
	for _, r := range rows {
		v := int64(0)
		if r.healthy {
			v = 1
		}
		w.Int("gale_upstream_server_healthy", v, "route", r.route, "upstream", r.addr)
	}
	w.Family("gale_upstream_server_idle_connections", metrics.Gauge, "Idle keep-alive connections to each upstream, over every loop's pool.")
	for _, r := range rows {
		w.Int("gale_upstream_server_idle_connections", r.s.Idle, "route", r.route, "upstream", r.addr)
	}
}
