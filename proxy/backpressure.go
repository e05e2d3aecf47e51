package proxy

import (
	"github.com/panjf2000/gnet/v2"

	"gale/handlers"
)

// This file bounds what an exchange keeps in memory in either direction.
// gnet reads every readable socket and cannot pause one, so a bound is
// either a hand-off (the socket leaves gnet, and TCP flow control slows
// the peer down) or a limit past which the exchange ends.
//
// Towards the client, every byte goes through upstreamData, and every
// state of the exchange is bounded by server.max_buffered_output:
//
//   - With the request relayed in full and a response body under way, a
//     client that falls behind makes the upstream leave the loop
//     (leaveLoop, transfer.go), as before.
//   - In any other state (the request body still arriving, interim 1xx
//     responses, a request still queued towards the upstream, or a
//     transport that cannot be duplicated), the client's socket cannot
//     be given to a goroutine: the loop must go on reading it for the
//     body. The exchange then holds: it stops relaying and leaves the
//     upstream's bytes in that connection's inbound buffer, where gnet
//     keeps appending what it reads, up to MaxHeldResponse. The sweep
//     resumes relaying (Wake on the upstream connection runs its
//     OnTraffic again) once the client's output is back under the bound
//     or the exchange may leave the loop. Past MaxHeldResponse both
//     connections close and the response counts as truncated: the
//     client's connection is closed once its output drained or its
//     write timeout, which measures bytes leaving, fired.
//
// A slow reader whose request was sent in full is not held: its response
// leaves the loop. A client that both uploads and downloads at once and
// reads the download slowly is held, and cut off if the upstream runs
// MaxHeldResponse ahead of it.
//
// Towards the upstream, the request body waits in the client's inbound
// buffer while the connection is being dialed, and in the upstream
// connection's outbound buffer while the upstream is slow to read it.
// Either way it is bounded by the body itself: a Content-Length body by
// its length (at most limits.body_bytes, checked by the parser), a
// chunked body by limits.body_bytes of payload plus MaxPendingInput of
// framing (past it: 413 and close). Bytes beyond the request (pipelined
// requests, or bytes ahead of a tunnel) are counted apart, up to
// MaxPendingInput; past it the client is cut off.

// MaxHeldResponse bounds the response bytes an exchange leaves in its
// upstream connection's inbound buffer while it holds (see above).
const MaxHeldResponse = 1 << 20

// maxUpstreamBacklog bounds the request body bytes of a client on a
// shared connection (HTTP/2, HTTP/3) that wait in the upstream
// connection's output. Past it the exchange takes no more of the body,
// so the credit the client's windows need does not come back and a slow
// upstream paces a fast uploader; the sweep (or the client's next event)
// resumes the body once the upstream read some of it. An HTTP/1.1
// client's body waits in its own connection instead (see above).
const maxUpstreamBacklog = 1 << 20

// resumeBody moves more of a shared client's request body upstream from
// the sweep, once a backlog the upstream was slow to read went down.
func (ex *exchange) resumeBody(now int64) bool {
	if ex.state != exActive || ex.reqDone || ex.bodyCount != nil || ex.uc == nil || !ex.uc.Busy() || ex.rstate == rsTunnel {
		return false
	}
	ex.now = now
	ex.Busy = true
	ex.pumpBody()
	ex.Busy = false
	return ex.settle()
}

// behind reports whether the client can take no more (its sink has no
// room: the output reached server.max_buffered_output) while the response
// may not leave the loop: relaying must wait.
func (ex *exchange) behind() bool {
	return !ex.upClosing && ex.sink.Room() == 0 && !ex.mayLeave()
}

// mayLeave reports whether the rest of the response may be copied off
// the loop: its body is under way, the whole request went out (the loop
// has nothing left to read from the client or write to the upstream), and
// the client's transport can be duplicated.
func (ex *exchange) mayLeave() bool {
	return ex.rstate == rsBody && ex.reqDone && !ex.noHandoff && !ex.noFds && ex.uc.OutboundBuffered() == 0
}

// hold leaves the upstream's bytes where they are (see above), or ends
// the exchange when they passed MaxHeldResponse. It returns the action
// for the upstream's OnTraffic.
func (ex *exchange) hold() gnet.Action {
	uc := ex.uc
	if uc.InboundBuffered() > MaxHeldResponse {
		ex.lp.Stats.Cut.Add(1)
		ex.dropConn(false)
		uc.Drop()
		ex.finishTruncated("the client fell behind while the response could not leave the loop")
		return gnet.Close
	}
	if !ex.held {
		ex.held = true
		ex.lp.Stats.Held.Add(1)
		ex.heldDeadline()
	}
	return gnet.None
}

// heldDeadline sets the deadline of a holding exchange. The upstream is
// not the one stalling, so no upstream timeout runs; the client's write
// timeout applies (the connection measures bytes leaving), and while the
// request body is still arriving, so does read_body: a client that
// neither sends its body nor reads its response is not kept for longer
// than either allows. pumpBody calls it again as the body moves.
func (ex *exchange) heldDeadline() {
	if ex.reqDone {
		ex.deadline, ex.dkind = 0, dlNone
		return
	}
	ex.deadline, ex.dkind = ex.now+int64(ex.set.ReadBodyTimeout), dlClientBody
}

// checkHeld runs from the sweep while the exchange holds: once the client
// caught up, or the response may leave the loop, the upstream
// connection's OnTraffic runs again for the bytes it kept.
func (ex *exchange) checkHeld() {
	uc := ex.uc
	if uc == nil || uc.Gnet() == nil {
		ex.held = false
		return
	}
	if ex.noFds && ex.h.budget.Room(2) {
		ex.noFds = false // leaving the loop may work now: leaveLoop tries
	}
	if ex.sink.Room() == 0 && !ex.mayLeave() {
		return
	}
	ex.held = false
	if ex.rstate == rsBody {
		ex.deadline, ex.dkind = ex.now+ex.h.headerTimeout, dlBody
	} else {
		ex.requestDeadline()
	}
	_ = uc.Gnet().Wake(nil)
}

// relayHeld runs when the upstream connection of a holding exchange
// closed (from its OnClose, whose inbound buffer is still readable): what
// it kept is relayed now, whatever the client's output, since nothing
// more will come; the bound on held bytes bounds this last write. It
// reports whether the exchange ended or no longer uses the connection;
// ex must not be touched then.
func (ex *exchange) relayHeld() bool {
	ex.held = false
	ex.upClosing = true
	gen := ex.gen
	ex.upstreamData()
	if ex.gen != gen || !ex.Listed() {
		return true
	}
	ex.upClosing = false
	return ex.uc == nil
}

// initBodyBound sets how many raw bytes the request body may take,
// framing included, as its source says (the source enforces
// limits.body_bytes); a source whose framing costs no inbound bytes has
// no such bound.
func (ex *exchange) initBodyBound() {
	ex.bodyRaw, ex.bodyBound = 0, 0
	if ex.bodyCount != nil {
		ex.bodyBound = ex.bodyCount.RawBound()
	}
}

// bodyAhead is how many of the client's unconsumed bytes may belong to
// the request body: the rest of its bound.
func (ex *exchange) bodyAhead() int64 {
	if ex.reqDone {
		return 0
	}
	return max(ex.bodyBound-ex.bodyRaw, 0)
}

// rawCounter is a body source whose framing costs bytes of the client's
// inbound buffer (HTTP/1.1): Raw is how many bytes of the body, framing
// included, were consumed, and RawBound the most it may take (a
// Content-Length body its length, a chunked one limits.body_bytes of
// payload plus MaxPendingInput of framing). The bounds here count those
// bytes.
type rawCounter interface {
	Raw() int64
	RawBound() int64
}

// countRaw notes, after pumpBody consumed more of the body, how many raw
// bytes it took. (The source refuses a body past its bound with 413.)
func (ex *exchange) countRaw() {
	if ex.bodyCount != nil {
		ex.bodyRaw = ex.bodyCount.Raw()
	}
}

// inputOverflow checks the client's unconsumed bytes against their
// bounds (see above) while a response is pending. It reports whether the
// client connection must be cut off at once; a chunked body over its
// bound is answered 413 instead (through settle), and it reports false.
func (ex *exchange) inputOverflow() bool {
	n := int64(handlers.InboundBuffered(ex.cl))
	if n <= MaxPendingInput {
		return false
	}
	ahead := ex.bodyAhead()
	if n-ahead <= MaxPendingInput {
		return false
	}
	if ahead > 0 && ex.bodyBound > 0 && ex.reqChunked && ex.state == exActive {
		// The end of a chunked body is not known before it is framed:
		// the body may be what is too long.
		ex.Fault, ex.Why = 413, "request body: more held than its bound while the upstream was not taking it"
		ex.settle()
		return false
	}
	return true
}
