package app

import (
	"net/http"
	"strconv"

	"gale/app/tlsconn"
	"gale/app/wire"
)

// The nginx stub_status page (metrics.stub_status), on the metrics
// listener: the same counters as the metrics, in the layout of nginx's
// ngx_http_stub_status_module, so that tools written for nginx (its
// Prometheus exporter, monitoring agents) read gale unchanged.

// stubStatus are the page's figures, in nginx's terms.
type stubStatus struct {
	active, accepts, handled, requests int64
	reading, writing, waiting          int64
}

// stubStatusNow sums the loops' counters: active connections are those
// open; accepts counts every connection the listeners took, handled
// those served (not refused at the limits, the descriptor budget or
// during a stop); reading counts TLS handshakes and connections whose
// protocol is not known yet too, and waiting is nginx's name for idle
// keep-alive connections.
func (s *Server) stubStatusNow() stubStatus {
	var st stubStatus
	for _, l := range s.loopSlice() {
		st.active += l.Stats.Open.Load()
		st.handled += int64(l.Stats.Accepted.Load())
		// Rejected counts refusals at accept and refused TLS handshakes;
		// the latter were accepted and handled.
		st.accepts += int64(l.Stats.Rejected.Load() - l.tls.Stats.Failed[tlsconn.ReasonRefused].Load())
		st.requests += int64(l.Stats.Requests.Load())
		st.reading += l.Conns.States[wire.StateHandshake].Load() + l.Conns.States[wire.StateReading].Load()
		st.writing += l.Conns.States[wire.StateWriting].Load()
		st.waiting += l.Conns.States[wire.StateIdle].Load()
	}
	st.accepts += st.handled
	return st
}

// appendStubStatus renders st as nginx does, trailing spaces included.
func appendStubStatus(b []byte, st stubStatus) []byte {
	b = append(b, "Active connections: "...)
	b = strconv.AppendInt(b, st.active, 10)
	b = append(b, " \nserver accepts handled requests\n "...)
	b = strconv.AppendInt(b, st.accepts, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, st.handled, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, st.requests, 10)
	b = append(b, " \nReading: "...)
	b = strconv.AppendInt(b, st.reading, 10)
	b = append(b, " Writing: "...)
	b = strconv.AppendInt(b, st.writing, 10)
	b = append(b, " Waiting: "...)
	b = strconv.AppendInt(b, st.waiting, 10)
	return append(b, " \n"...)
}

// serveStubStatus answers the stub_status page.
func (s *Server) serveStubStatus(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(appendStubStatus(nil, s.stubStatusNow()))
}
