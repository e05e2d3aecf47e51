package proxy

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/codec"
	"gale/handlers"
)

// This file paces a response body for a client whose connection carries
// other exchanges (HTTP/2): its socket cannot be handed to a goroutine
// the way an HTTP/1.1 client's is (transfer.go), and gnet cannot stop
// reading the upstream. Once such a client falls behind, the upstream
// connection leaves gnet as for an off-loop copy, and a goroutine reads
// it one buffer at a time, only when the loop asks: the loop relays each
// buffer through the client's sink when the sink has room again (the
// client's engine resumes the exchange as its windows open), then asks
// for the next. Between reads nothing reads the upstream's socket, so
// TCP flow control slows the upstream down to the client's pace, and an
// exchange holds one buffer whatever the body's size.

// pacedBuf is how much the pacer reads at a time: the most a paced
// exchange holds beyond what its client's sink queued.
const pacedBuf = 32 << 10

// pacer reads the rest of a response body from an upstream connection
// that left gnet. Between ready turning true and the loop asking for more
// (more), buf, start, end and err are the loop's; otherwise the
// goroutine's.
type pacer struct {
	up      net.Conn          // the upstream connection's duplicate, counted in the budget
	wake    handlers.Exchange // woken (Wake) when a read completed
	timeout time.Duration

	buf        [pacedBuf]byte
	start, end int   // buf[start:end] is read and not yet relayed
	err        error // the read that ended the body (EOF) or failed

	ready   atomic.Bool
	more    chan struct{} // the loop asks for the next read (capacity 1)
	quit    chan struct{} // closed when the loop wants nothing more
	stopped bool          // quit is closed (the loop's)
}

// run reads whenever the loop asks, until a read fails or the loop quits.
// It runs on its own goroutine and touches only the pacer.
func (p *pacer) run() {
	for {
		_ = p.up.SetReadDeadline(time.Now().Add(p.timeout))
		n, err := p.up.Read(p.buf[p.end:])
		p.end += n
		p.err = err
		p.ready.Store(true)
		p.wake.Wake()
		if err != nil {
			return
		}
		select {
		case <-p.more:
		case <-p.quit:
			return
		}
	}
}

// stop tells the goroutine to end (on the loop; idempotent).
func (p *pacer) stop() {
	if !p.stopped {
		p.stopped = true
		close(p.quit)
	}
}

// abort ends the pacing when the client went away: closing the socket
// ends a read in progress.
func (p *pacer) abort() {
	p.stop()
	_ = p.up.Close()
}

// startPaced runs inside the upstream connection's OnTraffic, where
// leaveLoop would hand the body to an off-loop copy, when the client's
// connection is shared: the upstream leaves gnet and its body is paced.
// One descriptor of the budget is held for the upstream's duplicate. It
// returns the action for the upstream's OnTraffic.
func (ex *exchange) startPaced() gnet.Action {
	uc := ex.uc
	b := ex.h.budget
	rest := uc.Inbound() // framing bytes relayBody left for more input
	up, err := uc.DupConn()
	if err != nil || len(rest) > pacedBuf/2 {
		if up != nil {
			_ = up.Close()
		}
		b.Release(1)
		ex.noHandoff = true
		ex.debug("cannot pace the body off the loop; relaying in it", "no duplicate of the upstream")
		return gnet.None
	}
	p := &pacer{
		up:      track(b, up),
		wake:    ex.cl,
		timeout: time.Duration(ex.h.headerTimeout),
		more:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
	}
	p.end = copy(p.buf[:], rest)
	ex.pace = p
	act := ex.goOffLoop(uc, exPaced, &ex.lp.Stats.Paced)
	go p.run()
	return act
}

// pacedResume runs on the loop whenever the client's engine resumes the
// exchange: a completed read is relayed once the sink has room, then the
// next is asked for, or the exchange ends with the body.
func (ex *exchange) pacedResume() {
	p := ex.pace
	if !p.ready.Load() || p.end > p.start && ex.sink.Room() == 0 {
		return
	}
	ex.now = nanotime()
	ex.Busy = true
	if p.end > p.start {
		p.start = ex.relayBody(p.buf[:p.end], p.start)
		if !ex.ClientGone {
			ex.sink.Flush()
		}
	}
	ex.Busy = false
	switch {
	case ex.ClientGone:
		ex.abort()
	case ex.Fault != 0:
		ex.Fault = 0
		ex.pacedEnd(false)
		ex.finishTruncated(ex.Why)
	case ex.rstate == rsDone:
		ex.pacedEnd(p.start == p.end && p.err == nil)
		ex.finish()
	case p.err != nil:
		ex.pacedLost(p.err)
	default:
		p.end = copy(p.buf[:], p.buf[p.start:p.end])
		p.start = 0
		p.ready.Store(false)
		p.more <- struct{}{}
	}
}

// pacedEnd ends the pacing: a connection whose body ended where its
// framing says, with nothing after it, goes back to the pool when the
// upstream keeps it alive; any other is closed.
func (ex *exchange) pacedEnd(clean bool) {
	p := ex.pace
	ex.pace = nil
	ex.state = exActive
	p.stop()
	if clean && ex.resp.KeepAlive && ex.kind != codec.BodyUntilClose && ex.pool != nil && ex.lp.el != nil && !ex.h.closed.Load() && ex.up.tls == nil {
		if nc, ok := handBack(p.up); ok {
			ex.reenroll(nc)
		}
		return
	}
	_ = p.up.Close()
}

// pacedLost handles the read that ended a paced body before its framing
// did: the close that delimits a close-delimited body, a timeout, or a
// lost connection.
func (ex *exchange) pacedLost(err error) {
	ex.pacedEnd(false)
	var ne net.Error
	switch {
	case err == io.EOF && ex.kind == codec.BodyUntilClose:
		ex.rstate = rsDone
		ex.finish()
	case errors.As(err, &ne) && ne.Timeout():
		ex.lp.Stats.Timeouts.Add(1)
		ex.fail(FailTimeout)
		ex.up.logFailure(ex.now, "response body read timeout")
		ex.finishTruncated("response body read timeout")
	default:
		ex.up.failed(ex.now, "connection lost mid-body: "+err.Error())
		ex.fail(FailReset)
		ex.finishTruncated("upstream closed mid-body: " + err.Error())
	}
}
