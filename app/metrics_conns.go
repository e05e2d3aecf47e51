package app

import (
	"gale/app/wire"
	"gale/metrics"
)

// writeConnMetrics writes the connections by protocol and by state,
// summed over the loops.
func (s *Server) writeConnMetrics(w *metrics.Writer) {
	var open [wire.NumProtos]int64
	var chosen [wire.NumProtos]uint64
	var states [wire.NumStates]int64
	for _, l := range s.loopSlice() {
		g := &l.Conns
		for p := range open {
			open[p] += g.Open[p].Load()
			chosen[p] += g.Chosen[p].Load()
		}
		for st := range states {
			states[st] += g.States[st].Load()
		}
	}
	w.Family("gale_connections_protocol_open", metrics.Gauge, "Client connections open, by the protocol they chose (h1, h1-tls, h2, h2c); those still choosing are not counted.")
	for p := wire.ProtoH1; p < wire.NumProtos; p++ {
		w.Int("gale_connections_protocol_open", open[p], "protocol", wire.ProtoNames[p])
	}
	w.Family("gale_connections_protocol_total", metrics.Counter, "Client connections that chose each protocol.")
	for p := wire.ProtoH1; p < wire.NumProtos; p++ {
		w.Uint("gale_connections_protocol_total", chosen[p], "protocol", wire.ProtoNames[p])
	}
	w.Family("gale_connections_state", metrics.Gauge, "Client connections by state (handshake, reading, writing, idle), as each loop's last timeout sweep (every 100 ms) found them.")
	for st := range states {
		w.Int("gale_connections_state", states[st], "state", wire.StateNames[st])
	}
}
