package app

import (
	"context"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/cache"
)

// loop is the state of one event loop. All fields but stats are touched
// only on that loop.
type loop struct {
	srv       *Server
	el        gnet.EventLoop
	conns     []*conn   // open connections, for the sweep; conn.idx is the position
	out       []byte    // response bytes of one OnTraffic call, written with one Write
	iov       [][]byte  // out split around large bodies referenced in place
	bodies    []segment // large bodies between out's bytes
	fileBuf   []byte    // small file bodies are read here
	alog      []byte    // access log lines not yet handed to the writer
	tlsOut    []byte    // TLS records written on the loop, handed to gnet with one Write (tls_conn.go)
	tlsIn     []byte    // plaintext decrypted on the loop, lent to one connection at a time (tls_conn.go)
	tlsLent   *tlsConn  // the connection whose plain aliases tlsIn, or nil
	sweepFn   gnet.Runnable
	victims   []*conn // scratch for the sweep
	visit     []*conn // the connections a sweep or drain walks (snapshot)
	refused   []byte  // the 503 of a connection refused in OnOpen (budget.go)
	stats     Stats
	sinkBuf   []byte      // response bytes an HTTP/1.1 sink gathered, until its Flush (h1_sink.go)
	sinkOwner *h1Sink     // the sink whose bytes sinkBuf holds
	sinkSegs  []segment   // body pieces an HTTP/1.1 sink references in place, between sinkBuf's bytes
	sinkIov   [][]byte    // scratch for the sink's writev
	view      *cache.View // this loop's view of the file cache (static_glue.go); nil until a static request
}

// segment places an in-memory body (referenced, not copied) at offset at
// of the loop's out buffer.
type segment struct {
	at   int
	body []byte
}

func newLoop(s *Server, el gnet.EventLoop) *loop {
	l := &loop{srv: s, el: el, out: make([]byte, 0, 64<<10)}
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
	l.stats.Accepted.Add(1)
	l.stats.Open.Add(1)
}

func (l *loop) closed(cs *conn) {
	if cs.dead {
		return
	}
	cs.dead = true
	last := len(l.conns) - 1
	if cs.idx <= last && l.conns[cs.idx] == cs {
		l.conns[cs.idx] = l.conns[last]
		l.conns[cs.idx].idx = cs.idx
		l.conns[last] = nil
		l.conns = l.conns[:last]
	}
	cs.release()
	l.stats.Open.Add(-1)
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
	set := l.srv.set.Load()
	l.victims = l.victims[:0]
	for _, cs := range l.snapshot() {
		if cs.check(now, set) {
			l.victims = append(l.victims, cs)
		}
	}
	clear(l.visit)
	for i, cs := range l.victims {
		if !cs.dead {
			_ = l.el.Close(cs.c)
		}
		l.victims[i] = nil
	}
	l.flushAccessLog(false)
}

// drain starts a graceful stop on this loop: idle connections close now,
// busy ones close after their current response.
func (l *loop) drain() {
	l.victims = l.victims[:0]
	for _, cs := range l.snapshot() {
		if cs.dead {
			continue // closed by a failed write earlier in this walk
		}
		if cs.h2 != nil {
			cs.h2.goAway()
			if !cs.dead && cs.closing && cs.h2.pendingOutput() == 0 {
				l.victims = append(l.victims, cs)
			}
			continue
		}
		if cs.idleNow() || (cs.closing && cs.outboundBuffered() == 0) {
			l.victims = append(l.victims, cs)
		} else {
			cs.closeAfter = true
		}
	}
	for i, cs := range l.victims {
		if !cs.dead {
			_ = l.el.Close(cs.c)
		}
		l.victims[i] = nil
	}
	clear(l.visit)
	l.flushAccessLog(true)
}

func (l *loop) flushAccessLog(force bool) {
	if len(l.alog) == 0 || l.srv.access == nil {
		return
	}
	if force || len(l.alog) > 0 {
		l.alog = l.srv.access.Submit(l.alog)
	}
}
