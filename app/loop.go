package app

import (
	"context"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/app/h1"
	"gale/app/tlsconn"
	"gale/app/wire"
)

// loop is the state of one event loop: the services its engines share
// (wire.Loop), its connections, and the loop's state of the TLS transport
// and of the HTTP/1.1 engine. All fields but Stats are touched only on
// that loop.
type loop struct {
	wire.Loop
	srv     *Server
	conns   []*conn      // open connections, for the sweep; conn.idx is the position
	tls     tlsconn.Loop // the TLS buffers of the loop's connections
	sweepFn gnet.Runnable
	victims []*conn // scratch for the sweep
	visit   []*conn // the connections a sweep or drain walks (snapshot)
	refused []byte  // the 503 of a connection refused in OnOpen (budget.go)
	h1      h1.Loop // the HTTP/1.1 engine's state of the loop
}

func newLoop(s *Server, el gnet.EventLoop) *loop {
	l := &loop{srv: s}
	l.Init(&s.sh, el)
	l.h1.Loop = &l.Loop
	l.sweepFn = gnet.RunnableFunc(func(context.Context) error {
		l.sweep()
		return nil
	})
	return l
}

func (l *loop) open(c gnet.Conn) {
	cs := newConn(l, c)
	cs.idx = len(l.conns)
	l.conns = append(l.conns, cs)
	c.SetContext(cs)
	l.Stats.Accepted.Add(1)
	l.Stats.Open.Add(1)
}

func (l *loop) closed(cs *conn) {
	if cs.Dead {
		return
	}
	cs.Dead = true
	last := len(l.conns) - 1
	if cs.idx <= last && l.conns[cs.idx] == cs {
		l.conns[cs.idx] = l.conns[last]
		l.conns[cs.idx].idx = cs.idx
		l.conns[last] = nil
		l.conns = l.conns[:last]
	}
	cs.release()
	l.Stats.Open.Add(-1)
}

// snapshot copies the open connections into l.visit for a walk that may
// write to them: a failing write closes a connection inside the write,
// and OnClose then reorders l.conns under the walk. Walkers skip the
// connections found dead, and clear l.visit when done.
func (l *loop) snapshot() []*conn {
	l.visit = append(l.visit[:0], l.conns...)
	return l.visit
}

// sweep enforces timeouts, closes connections whose final output has
// drained, and resumes connections that paused for output to drain.
func (l *loop) sweep() {
	now := time.Now().UnixNano()
	set := l.srv.sh.Set.Load()
	l.victims = l.victims[:0]
	for _, cs := range l.snapshot() {
		if cs.check(now, set) {
			l.victims = append(l.victims, cs)
		}
	}
	clear(l.visit)
	for i, cs := range l.victims {
		if !cs.Dead {
			_ = l.EL.Close(cs.C)
		}
		l.victims[i] = nil
	}
	l.FlushAccessLog()
	l.srv.endRefusalRun(now)
}

// drain starts a graceful stop on this loop: idle connections close now,
// busy ones close after their current response.
func (l *loop) drain() {
	l.victims = l.victims[:0]
	for _, cs := range l.snapshot() {
		if cs.Dead {
			continue // closed by a failed write earlier in this walk
		}
		if cs.engine().Drain() {
			l.victims = append(l.victims, cs)
		}
	}
	for i, cs := range l.victims {
		if !cs.Dead {
			_ = l.EL.Close(cs.C)
		}
		l.victims[i] = nil
	}
	clear(l.visit)
	l.FlushAccessLog()
}
