package h2conn

import (
	"gale/accesslog"
	"gale/app/wire"
	"gale/h2"
)

var _ h2.RejectHandler = (*Conn)(nil)

// Rejected implements h2.RejectHandler: a request the core refused
// before it became an exchange (malformed, its pseudo-header fields lost
// to the header list limit, or past the concurrent streams) is logged and
// counted as HTTP/1.1 logs a request it cannot parse: a line with what
// can be known of it ("-"), and the status it stands for.
func (h *Conn) Rejected(status int) {
	cs := h.wc
	if status != 503 {
		cs.Loop.Stats.ParseErrors.Add(1)
	}
	cs.Loop.Stats.H2Requests.Add(1)
	var rec accesslog.Record
	m := wire.Meter{Start: h.now, Method: wire.MethodOther}
	cs.Record(&rec, &m, status, 0)
}
