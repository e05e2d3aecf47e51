package app

import (
	"gale/app/tlsconn"
	"gale/metrics"
)

// writeTLSMetrics writes the TLS handshakes' outcomes, summed over the
// loops.
func (s *Server) writeTLSMetrics(w *metrics.Writer) {
	var t struct {
		done, unknown, resumed, v13, v12 uint64
		failed                           [tlsconn.NumReasons]uint64
	}
	for _, l := range s.loopSlice() {
		st := &l.tls.Stats
		t.done += st.Done.Load()
		t.unknown += st.UnknownName.Load()
		t.resumed += st.Resumed.Load()
		t.v13 += st.TLS13.Load()
		t.v12 += st.TLS12.Load()
		for r := range t.failed {
			t.failed[r] += st.Failed[r].Load()
		}
	}
	w.Family("gale_tls_handshakes_total", metrics.Counter, "TLS handshakes that succeeded, by version.")
	w.Uint("gale_tls_handshakes_total", t.v13, "version", "1.3")
	w.Uint("gale_tls_handshakes_total", t.v12, "version", "1.2")
	w.Counter("gale_tls_resumed_total", "TLS handshakes that resumed a session.", t.resumed)
	w.Counter("gale_tls_unknown_server_name_total", "TLS handshakes whose server name matched no certificate (the listener's first certificate answered).", t.unknown)
	w.Family("gale_tls_handshake_failures_total", metrics.Counter, "TLS handshakes that failed, by reason: timeout, not_tls, bad_record, version, cipher, alpn, client_alert, closed (the client went away), refused (its address held its share of handshakes), other.")
	for r := range t.failed {
		w.Uint("gale_tls_handshake_failures_total", t.failed[r], "reason", tlsconn.ReasonNames[r])
	}
	if s.acme != nil {
		w.Family("gale_tls_certificate_expiry_timestamp_seconds", metrics.Gauge, "When the automatic certificate of each listed name expires (Unix time); renewal starts in its last third.")
		for _, e := range s.acme.Expiries() {
			w.Int("gale_tls_certificate_expiry_timestamp_seconds", e.NotAfter.Unix(), "name", e.Name)
		}
		n, earliest := s.acme.OnDemand()
		w.Gauge("gale_tls_on_demand_certificates", "Certificates obtained on demand, in memory.", int64(n))
		if n > 0 {
			w.Gauge("gale_tls_on_demand_certificate_expiry_earliest_timestamp_seconds", "When the first of the certificates obtained on demand expires (Unix time).", earliest.Unix())
		}
	}
}
