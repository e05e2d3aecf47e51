package app

import (
	"gale/app/wire"
	"gale/fds"
)

// Stats are one event loop's counters (see wire.Stats). Sum the loops'
// Stats with Server.Stats.
type Stats = wire.Stats

// StatsSnapshot is a plain copy of summed Stats.
type StatsSnapshot struct {
	Accepted, Requests, BytesIn, BytesOut, TimedOut, Rejected, ParseErrors uint64
	H2Conns, H2Requests, NoPreface, BadProxyHdr, Screened, ResetFloods     uint64
	OverShare                                                              uint64
	H3Conns, H3Requests                                                    uint64
	Open                                                                   int64
	ByClass                                                                [6]uint64
	Budget                                                                 fds.Snapshot // the descriptor budget, process-wide
}

// addStats adds the counters of s to d.
func addStats(d *StatsSnapshot, s *Stats) {
	d.Accepted += s.Accepted.Load()
	d.Open += s.Open.Load()
	d.Requests += s.Requests.Load()
	for i := range s.ByClass {
		d.ByClass[i] += s.ByClass[i].Load()
	}
	d.BytesIn += s.BytesIn.Load()
	d.BytesOut += s.BytesOut.Load()
	d.TimedOut += s.TimedOut.Load()
	d.Rejected += s.Rejected.Load()
	d.ParseErrors += s.ParseErrors.Load()
	d.H2Conns += s.H2Conns.Load()
	d.H2Requests += s.H2Requests.Load()
	d.NoPreface += s.NoPreface.Load()
	d.BadProxyHdr += s.BadProxyHdr.Load()
	d.Screened += s.Screened.Load()
	d.ResetFloods += s.ResetFloods.Load()
	d.OverShare += s.OverShare.Load()
	d.H3Conns += s.H3Conns.Load()
	d.H3Requests += s.H3Requests.Load()
}
