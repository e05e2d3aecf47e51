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
	perRoute(w, "gale_proxy_cache_requests_total", metrics.Counter, "Requests a route cache saw, by outcome: hit, miss, revalidated (stale, asked upstream), stale_error (stale, served in place of an upstream error), collapsed (waited for another request's fetch, then counted again as what it became), bypass (unsafe method, or the client asked for validation), stale (served stale while another request revalidates).", rows, func(name string, r cacheRow) {
		for o, n := range r.s.Requests {
			w.Uint(name, n, "route", r.route, "outcome", httpcache.OutcomeNames[o])
		}
	})
	perRoute(w, "gale_proxy_cache_stored_total", metrics.Counter, "Responses stored (new, replaced or refreshed by a 304).", rows, func(name string, r cacheRow) {
		w.Uint(name, r.s.Stored, "route", r.route)
	})
	perRoute(w, "gale_proxy_cache_evictions_total", metrics.Counter, "Keys evicted to stay within max_bytes.", rows, func(name string, r cacheRow) {
		w.Uint(name, r.s.Evictions, "route", r.route)
	})
	perRoute(w, "gale_proxy_cache_bytes", metrics.Gauge, "Bytes the route cache holds (bodies, fields, keys).", rows, func(name string, r cacheRow) {
		w.Int(name, r.s.Bytes, "route", r.route)
	})
	perRoute(w, "gale_proxy_cache_entries", metrics.Gauge, "Keys the route cache holds.", rows, func(name string, r cacheRow) {
		w.Int(name, r.s.Entries, "route", r.route)
	})
}

// perRoute writes a family with the samples write gives for each route's row.
func perRoute(w *metrics.Writer, name string, typ metrics.Type, help string, rows []cacheRow, write func(name string, r cacheRow)) {
	w.Family(name, typ, help)
	for _, r := range rows {
		write(name, r)
	}
}
