package app

import (
	"gale/httpcache"
	"gale/metrics"
)

// cacheRow is one route cache's counters, summed over the loops.
type cacheRow struct {
	route string
	s     httpcache.Stats
}

// writeProxyCacheMetrics writes the route caches' families, labelled by
// route. The counters belong to the router: a reload starts them anew.
func (s *Server) writeProxyCacheMetrics(w *metrics.Writer) {
	router := s.sh.Set.Load().Router
	if router == nil {
		return
	}
	var rows []cacheRow
	for _, rt := range router.Routes() {
		if st := rt.CacheStore(); st != nil {
			rows = append(rows, cacheRow{rt.Label(), st.Stats()})
		}
	}
	if len(rows) == 0 {
		return
	}
	w.Family("gale_proxy_cache_requests_total", metrics.Counter, "Requests a route cache saw, by outcome: hit, miss, revalidated (stale, asked upstream), stale_error (stale, served in place of an upstream error), collapsed (waited for another request's fetch, then counted again as what it became), bypass (unsafe method, or the client asked for validation).")
	for _, r := range rows {
		for o, n := range r.s.Requests {
			w.Uint("gale_proxy_cache_requests_total", n, "route", r.route, "outcome", httpcache.OutcomeNames[o])
		}
	}
	w.Family("gale_proxy_cache_stored_total", metrics.Counter, "Responses stored (new, replaced or refreshed by a 304).")
	for _, r := range rows {
		w.Uint("gale_proxy_cache_stored_total", r.s.Stored, "route", r.route)
	}
	w.Family("gale_proxy_cache_evictions_total", metrics.Counter, "Keys evicted to stay within max_bytes.")
	for _, r := range rows {
		w.Uint("gale_proxy_cache_evictions_total", r.s.Evictions, "route", r.route)
	}
	w.Family("gale_proxy_cache_bytes", metrics.Gauge, "Bytes the route cache holds (bodies, fields, keys).")
	for _, r := range rows {
		w.Int("gale_proxy_cache_bytes", r.s.Bytes, "route", r.route)
	}
	w.Family("gale_proxy_cache_entries", metrics.Gauge, "Keys the route cache holds.")
	for _, r := range rows {
		w.Int("gale_proxy_cache_entries", r.s.Entries, "route", r.route)
	}
}
