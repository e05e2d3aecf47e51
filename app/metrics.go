package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"gale/cache"
	"gale/config"
	"gale/metrics"
)

// The metrics listener (config metrics:): Prometheus's text format,
// served by net/http on a listener of its own, never on the event loops.
// A scrape reads what the loops count for themselves (Stats, written by
// their owner only) with atomic loads, and the cache's, proxy's and
// budget's counters likewise, so it takes no lock a loop takes and adds
// nothing to the request path.

// opsState is the server's operational state: the metrics listener and
// the reload counters it reports.
type opsState struct {
	ln   net.Listener // nil when metrics are off
	srv  *http.Server
	path string
	stub string // the stub_status page's path; "" = none

	reloadsOK     atomic.Uint64
	reloadsFailed atomic.Uint64
	lastReload    atomic.Int64 // unix ns of the last successful reload; 0 = none yet
	started       time.Time
}

// openMetrics binds the metrics listener of cfg, so that a taken address
// fails New rather than a running server.
func (s *Server) openMetrics(cfg *config.Config) error {
	s.ops.started = time.Now()
	m := cfg.Metrics
	if m.Listen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", m.Listen)
	if err != nil {
		return fmt.Errorf("metrics.listen: %w", err)
	}
	s.ops.ln, s.ops.path, s.ops.stub = ln, m.Path, m.Stub
	s.sh.Metered = true // before any loop runs
	// serveMetrics compares the path itself: a ServeMux would read
	// metrics.path as a pattern ("{" starts a wildcard, and a bad one
	// panics).
	s.ops.srv = &http.Server{Handler: http.HandlerFunc(s.serveMetrics), ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second}
	return nil
}

// MetricsAddr is the metrics listener's address ("" when metrics are
// off).
func (s *Server) MetricsAddr() string {
	if s.ops.ln == nil {
		return ""
	}
	return s.ops.ln.Addr().String()
}

// runMetrics serves scrapes until closeMetrics.
func (s *Server) runMetrics() {
	if s.ops.srv == nil {
		return
	}
	if err := s.ops.srv.Serve(s.ops.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.log.Warn("metrics listener", "err", err)
	}
}

// closeMetrics stops the metrics listener.
func (s *Server) closeMetrics() {
	if s.ops.srv != nil {
		_ = s.ops.srv.Shutdown(context.Background())
	} else if s.ops.ln != nil {
		_ = s.ops.ln.Close()
	}
}

// reloaded counts a reload's outcome.
func (o *opsState) reloaded(err error) {
	if err != nil {
		o.reloadsFailed.Add(1)
		return
	}
	o.reloadsOK.Add(1)
	o.lastReload.Store(time.Now().UnixNano())
}

// ReopenLogs has the access log reopen its file (SIGUSR1, after a
// rotation by another program). It does not block.
func (s *Server) ReopenLogs() {
	if s.sh.Access != nil {
		s.sh.Access.Reopen()
	}
}

// ReloadRejected counts a reload whose config file did not load (it never
// reached Reload).
func (s *Server) ReloadRejected() { s.ops.reloaded(errRejected) }

var errRejected = errors.New("app: the reloaded config was rejected")

// metricsNotes reports metrics settings a reload cannot change.
func metricsNotes(old, cfg *config.Config) []string {
	if old.Metrics.Listen != cfg.Metrics.Listen || old.Metrics.Path != cfg.Metrics.Path || old.Metrics.Stub != cfg.Metrics.Stub {
		return []string{"metrics settings changed: restart gale to apply them"}
	}
	return nil
}

// serveMetrics answers one scrape.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if s.ops.stub != "" && r.URL.Path == s.ops.stub {
		s.serveStubStatus(w)
		return
	}
	if r.URL.Path != s.ops.path {
		http.NotFound(w, r)
		return
	}
	var mw metrics.Writer
	s.WriteMetrics(&mw)
	w.Header().Set("Content-Type", metrics.ContentType)
	_, _ = w.Write(mw.Bytes())
}

// WriteMetrics writes every metric the server keeps to w.
func (s *Server) WriteMetrics(w *metrics.Writer) {
	s.writeLoopMetrics(w)
	s.writeExchangeMetrics(w)
	s.writeConnMetrics(w)
	s.writeTLSMetrics(w)
	s.writeBudgetMetrics(w)
	s.writeCacheMetrics(w)
	s.writeProxyMetrics(w)
	s.writeUpstreamMetrics(w)
	s.writeProxyCacheMetrics(w)
	s.writeFastCGIMetrics(w)
	s.writeReloadMetrics(w)
	s.writeAccessLogMetrics(w)
	s.writeClusterMetrics(w)
	writeProcessMetrics(w, s.ops.started)
}

// loopCounter is one per-loop counter family: its name, help and how to
// read it from a loop's Stats.
type loopCounter struct {
	name, help string
	typ        metrics.Type
	read       func(*Stats) int64
}

var loopCounters = []loopCounter{
	{"gale_connections_accepted_total", "Client connections accepted, by event loop.", metrics.Counter, func(s *Stats) int64 { return int64(s.Accepted.Load()) }},
	{"gale_connections_open", "Client connections open, by event loop.", metrics.Gauge, func(s *Stats) int64 { return s.Open.Load() }},
	{"gale_connections_rejected_total", "Connections refused: descriptor budget, limits.connections, stopping, or a client address's share of TLS handshakes.", metrics.Counter, func(s *Stats) int64 { return int64(s.Rejected.Load()) }},
	{"gale_connections_timed_out_total", "Connections closed by a timeout.", metrics.Counter, func(s *Stats) int64 { return int64(s.TimedOut.Load()) }},
	{"gale_http2_connections_total", "Connections that chose HTTP/2 (ALPN h2 or the h2c preface).", metrics.Counter, func(s *Stats) int64 { return int64(s.H2Conns.Load()) }},
	{"gale_http2_no_preface_total", "Connections closed unanswered on a listener without h1 because they did not open with the HTTP/2 preface.", metrics.Counter, func(s *Stats) int64 { return int64(s.NoPreface.Load()) }},
	{"gale_connections_screened_total", "Connections closed unanswered at accept by a listener's deny list or its max_conns_per_address.", metrics.Counter, func(s *Stats) int64 { return int64(s.Screened.Load()) }},
	{"gale_http2_reset_floods_total", "HTTP/2 connections closed or refused because their client address or event loop spent its budget of reset streams.", metrics.Counter, func(s *Stats) int64 { return int64(s.ResetFloods.Load()) }},
	{"gale_http2_over_share_total", "HTTP/2 streams of proxy and FastCGI routes answered 503 because their client address held its share of a descriptor budget more than half spent.", metrics.Counter, func(s *Stats) int64 { return int64(s.OverShare.Load()) }},
	{"gale_proxy_protocol_rejected_total", "Connections closed unanswered on a proxy_protocol listener because they did not open with a valid PROXY protocol header.", metrics.Counter, func(s *Stats) int64 { return int64(s.BadProxyHdr.Load()) }},
	{"gale_requests_total", "Requests answered (errors included), every protocol, by event loop.", metrics.Counter, func(s *Stats) int64 { return int64(s.Requests.Load()) }},
	{"gale_http2_requests_total", "HTTP/2 streams answered (included in gale_requests_total).", metrics.Counter, func(s *Stats) int64 { return int64(s.H2Requests.Load()) }},
	{"gale_http3_connections_total", "QUIC connections (HTTP/3), by the event loop that answers their requests.", metrics.Counter, func(s *Stats) int64 { return int64(s.H3Conns.Load()) }},
	{"gale_http3_requests_total", "HTTP/3 requests answered (included in gale_requests_total).", metrics.Counter, func(s *Stats) int64 { return int64(s.H3Requests.Load()) }},
	{"gale_parse_errors_total", "Requests answered with a parse error (400, 413, 414, 431, 501, 505).", metrics.Counter, func(s *Stats) int64 { return int64(s.ParseErrors.Load()) }},
	{"gale_received_bytes_total", "Request bytes consumed.", metrics.Counter, func(s *Stats) int64 { return int64(s.BytesIn.Load()) }},
	{"gale_sent_bytes_total", "Response bytes handed to the socket layer.", metrics.Counter, func(s *Stats) int64 { return int64(s.BytesOut.Load()) }},
}

// statusClasses are the labels of gale_responses_total.
var statusClasses = [6]string{"", "1xx", "2xx", "3xx", "4xx", "5xx"}

// loopLabels are the loop label values, made once ("0", "1", ...).
var loopLabels = func() []string {
	l := make([]string, 256)
	for i := range l {
		l[i] = strconv.Itoa(i)
	}
	return l
}()

func loopLabel(i int) string {
	if i < len(loopLabels) {
		return loopLabels[i]
	}
	return strconv.Itoa(i)
}

// writeLoopMetrics writes the per-loop counters: each family once, one
// sample per event loop (loops are numbered in the order they took their
// first connection), so that a sum over loop is the server's total.
func (s *Server) writeLoopMetrics(w *metrics.Writer) {
	loops := s.loopSlice()
	for _, c := range loopCounters {
		w.Family(c.name, c.typ, c.help)
		for i, l := range loops {
			w.Int(c.name, c.read(&l.Stats), "loop", loopLabel(i))
		}
	}
	w.Family("gale_responses_total", metrics.Counter, "Responses by status class, by event loop.")
	for i, l := range loops {
		for c := 1; c < len(statusClasses); c++ {
			w.Uint("gale_responses_total", l.Stats.ByClass[c].Load(), "loop", loopLabel(i), "class", statusClasses[c])
		}
	}
	w.Gauge("gale_event_loops", "Event loops that have taken a connection.", int64(len(loops)))
}

// writeBudgetMetrics writes the descriptor budget's state.
func (s *Server) writeBudgetMetrics(w *metrics.Writer) {
	b := s.sh.Budget.Snapshot()
	w.Gauge("gale_descriptors_limit", "Descriptors gale may hold (the budget under RLIMIT_NOFILE).", b.Limit)
	w.Gauge("gale_descriptors_used", "Descriptors held: clients, upstreams, duplicated sockets, open files, tunnels.", b.Used)
	w.Counter("gale_descriptors_refused_total", "Acquisitions refused for want of descriptors.", b.Refused)
	w.Counter("gale_connections_limit_refused_total", "Client connections refused by limits.connections.", b.Full)
}

// writeCacheMetrics writes the file cache's state.
func (s *Server) writeCacheMetrics(w *metrics.Writer) {
	if s.files == nil {
		return
	}
	c := s.files.Stats()
	w.Gauge("gale_cache_entries", "Live cache slots (files, directories, negative results).", int64(c.Entries))
	w.Gauge("gale_cache_bytes", "Bytes charged to the cache budget, pinned old versions included.", c.Bytes)
	w.Gauge("gale_cache_max_bytes", "The cache budget (cache.max_bytes).", c.MaxBytes)
	w.Counter("gale_cache_loads_total", "Files read from disk, directories and negative results recorded.", c.Loads)
	w.Counter("gale_cache_evictions_total", "Slots evicted to stay within the budget.", c.Evictions)
	w.Counter("gale_cache_revalidations_total", "Stats done because revalidation was due.", c.Revalidations)
	w.Counter("gale_cache_changes_total", "Revalidations that found a file changed, deleted or replaced.", c.Changes)
	w.Counter("gale_cache_sidecars_total", "Precompressed sidecar files read.", c.Sidecars)
	w.Counter("gale_cache_uncached_total", "Loads served without being kept.", c.Uncached)
	w.Family("gale_cache_compressions_total", metrics.Counter, "Bodies compressed on the fly, by encoding.")
	for e := cache.Gzip; int(e) < len(c.Compressions); e++ {
		w.Uint("gale_cache_compressions_total", c.Compressions[e], "encoding", e.String())
	}
}

// writeProxyMetrics writes the proxy's counters, summed over loops.
func (s *Server) writeProxyMetrics(w *metrics.Writer) {
	p := s.ProxyStats()
	w.Counter("gale_upstream_requests_total", "Requests forwarded to upstreams.", p.Requests)
	w.Counter("gale_upstream_dials_total", "Connections dialed to upstreams.", p.Dials)
	w.Counter("gale_upstream_dial_failures_total", "Dials refused, failed or timed out.", p.DialFails)
	w.Counter("gale_upstream_reused_total", "Requests sent on a pooled connection.", p.Reused)
	w.Counter("gale_upstream_retries_total", "Further attempts after a failed one.", p.Retries)
	w.Counter("gale_upstream_errors_total", "502 and 504 answered by the proxy.", p.Errors)
	w.Counter("gale_upstream_timeouts_total", "Connect, response-header or body-read timeouts.", p.Timeouts)
	w.Counter("gale_upstream_truncated_total", "Responses cut short after they started (the client closed).", p.Truncated)
	w.Counter("gale_upstream_refused_total", "Requests answered 503 for want of a descriptor for a new upstream connection.", p.Refused)
	w.Counter("gale_upstream_tunnels_total", "Upgraded connections tunnelled.", p.Tunnels)
	w.Gauge("gale_upstream_connections_open", "Connections to upstreams open, pooled or in use.", p.Open)
	w.Counter("gale_forward_auth_requests_total", "Subrequests to forward_auth services.", p.Auths)
	w.Counter("gale_forward_auth_failures_total", "Subrequests to forward_auth services that got no answer (502, 503, 504 to the client).", p.AuthFailures)
}

// writeFastCGIMetrics writes the FastCGI routes' counters, summed over
// routes and loops.
func (s *Server) writeFastCGIMetrics(w *metrics.Writer) {
	f := s.FastCGIStats()
	w.Counter("gale_fastcgi_requests_total", "Requests sent to FastCGI servers.", f.Requests)
	w.Counter("gale_fastcgi_dials_total", "Connections dialed to FastCGI servers.", f.Dials)
	w.Counter("gale_fastcgi_reused_total", "Requests sent on a kept connection.", f.Reused)
	w.Counter("gale_fastcgi_queued_total", "Requests that waited for a connection (max_conns).", f.Queued)
	w.Counter("gale_fastcgi_errors_total", "502, 503 and 504 answered by the FastCGI gateway itself.", f.Errors)
	w.Counter("gale_fastcgi_offloop_total", "Responses whose connection left the event loop for a slow client.", f.OffLoop)
	w.Gauge("gale_fastcgi_connections_open", "Connections to FastCGI servers open, pooled or in use.", f.Open)
}

// writeAccessLogMetrics writes what the access log lost.
func (s *Server) writeAccessLogMetrics(w *metrics.Writer) {
	if s.sh.Access == nil {
		return
	}
	w.Counter("gale_access_log_dropped_total", "Access log lines dropped: the writer fell behind, or writing failed (a full disk).", s.sh.Access.Dropped())
}

// writeReloadMetrics writes the reload counters.
func (s *Server) writeReloadMetrics(w *metrics.Writer) {
	w.Family("gale_config_reloads_total", metrics.Counter, "Config reloads (SIGHUP), by result.")
	w.Uint("gale_config_reloads_total", s.ops.reloadsOK.Load(), "result", "success")
	w.Uint("gale_config_reloads_total", s.ops.reloadsFailed.Load(), "result", "failure")
	w.Family("gale_config_last_reload_success_timestamp_seconds", metrics.Gauge, "When the last reload succeeded (unix seconds); 0 = none yet.")
	w.Float("gale_config_last_reload_success_timestamp_seconds", float64(s.ops.lastReload.Load())/1e9)
}
