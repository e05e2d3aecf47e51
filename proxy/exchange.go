package proxy

import (
	"context"
	"errors"
	"log/slog"
	"math/bits"
	"net"
	"net/netip"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/codec"
	"gale/handlers"
	"gale/upstream"
)

// MaxPendingInput bounds the bytes a client may send beyond what an
// exchange consumes (pipelined requests, bytes ahead of a tunnel) while
// its response is pending; past it the connection is closed, since gnet
// cannot stop reading a socket.
const MaxPendingInput = 1 << 20

// Exchange states (besides relaying in the loop).
const (
	exActive      uint8 = iota // request and response flow through the loop
	exHandoffWait              // the upstream left gnet; waiting for the client's output to drain
	exHandoff                  // a goroutine copies the rest of the body
	exTunnelWait               // a 101 was relayed; waiting for both outputs to drain
	exPaced                    // the upstream left gnet; a goroutine reads the body at the client's pace (paced.go)
	exH2C                      // a goroutine exchanges the request with an h2c upstream (h2c.go)
)

// Response states.
const (
	rsHead   uint8 = iota // waiting for a (final) response head
	rsBody                // relaying the body
	rsDone                // the whole response was relayed
	rsTunnel              // 101 relayed: the connections become a tunnel
)

// Kinds of deadline.
const (
	dlNone       uint8 = iota
	dlConnect          // dialing
	dlHeader           // waiting for the response head
	dlBody             // waiting for more of the response body
	dlClientBody       // waiting for more of the request body from the client
	dlQueue            // waiting for a connection under max_conns (queue.go)
)

var errLost = errors.New("proxy: upstream connection closed")

// exchange is one request on its way to an upstream and its response on
// the way back. It belongs to the client's loop, is recycled through the
// Loop, and implements handlers.Pending for the client connection.
//
// Callbacks can nest: a failing Write on either connection makes gnet
// close that connection inside the Write, which calls back into the
// exchange. While busy, such callbacks only record it (upstream.Deferred);
// the outer code acts on it when it is done (settle).
type exchange struct {
	upstream.Slot // its place in the loop's exchanges in flight

	lp   *Loop
	h    *Handler
	cl   handlers.Exchange
	sink handlers.ResponseSink // where the response goes (the client's engine frames it)
	set  handlers.ExchangeSettings
	up   *Upstream
	pool *upstream.Pool
	uc   *upstream.Conn

	state             uint8
	upstream.Deferred // what callbacks found while busy (settle)

	// The request.
	head        []byte     // request line, then the header lines after Host and the empty line
	lineEnd     int        // end of the request line in head
	host        []byte     // the client's Host, kept for preserve_host
	ruleHost    bool       // header rules set Host: add none
	ip          netip.Addr // the client's address (behind server.trusted_proxies, the one they name)
	peer        netip.Addr // the address the client connection came from
	peerTrusted bool       // it is one of server.trusted_proxies
	clientIP    netip.Addr // the client's, for client-ip-hash: ip, or what trusted proxies say
	clientV     codec.Version
	isHead      bool
	upgrade     bool // the request offers a protocol the route allows (upgrade.go)
	upFrom      int  // where the offered protocols are in head
	upTo        int
	safe        bool                // idempotent and without a body: may be sent twice
	json        bool                // error bodies in JSON
	body        handlers.BodySource // the request body, de-framed by the client's engine
	bodyCount   rawCounter          // the same, when its framing costs the client's inbound bytes (HTTP/1.1); nil otherwise
	reqChunked  bool                // the request body goes chunked: pumpBody frames it
	reqDone     bool                // the whole request was handed to the upstream connection
	bodyBound   int64               // raw request body bytes allowed, framing included (backpressure.go)
	bodyRaw     int64               // raw request body bytes handed to the upstream connection so far
	tried       uint64              // upstreams tried (bit per index in upset)
	upset       *upstreamSet        // the route's upstreams when the exchange began
	hkey        uint64              // the request's header-hash or cookie-hash key, hashed; 0 = none
	attempts    int
	gotBytes    bool // a response byte arrived on the current connection
	queued      bool // in its pool's waiting list (queue.go)
	lastReused  bool // the current (or just lost) connection came from the pool

	// The response.
	resp        codec.Response
	rstate      uint8
	kind        codec.BodyKind
	rbody       codec.BodyReader
	remaining   int64 // body bytes left (Content-Length bodies)
	closeClient bool
	started     bool // the final response head went to the client
	status      int
	bodyOut     int64
	out         int64
	deadline    int64
	dkind       uint8
	now         int64 // the clock, read once per event (unix ns)
	noHandoff   bool
	held        bool // relaying waits for the client to catch up (backpressure.go)
	noFds       bool // the last try to leave the loop found no descriptors for the duplicates
	upClosing   bool // the upstream connection is closing: relay what it kept, hold no more

	gen uint32 // counts the exchange's uses, to tell whether a callback ended it

	x    *transfer // off-loop copy, when one is pending or running
	pace *pacer    // paced body, while the state is exPaced
	hx   *h2cStream

	trailers   []codec.Header // trailer fields the response ends with (h2c upstreams; chunked HTTP/1.1 ones for shared clients)
	trailerRaw []byte         // the trailer section of a chunked response, as the body reader kept it
	cancelled  bool           // the upstream cancelled the stream: a cut response is cancelled, where the sink can say so
}

// reset clears ex for reuse, keeping its buffers.
func (ex *exchange) reset() {
	*ex = exchange{
		lp:   ex.lp,
		gen:  ex.gen + 1,
		head: ex.head[:0],
		host: ex.host[:0],
		resp: codec.Response{Headers: ex.resp.Headers[:0], ContentLength: -1},
	}
}

// setup copies what the exchange keeps of the request in c and renders
// the upstream request head.
func (ex *exchange) setup(h *Handler, cl handlers.Exchange, c *handlers.Ctx) {
	ex.h, ex.cl, ex.sink = h, cl, c.Sink
	ex.now = nanotime()
	ex.set = cl.Settings()
	req := c.Req
	ex.clientV = req.Version
	ex.isHead = req.IsHead()
	ex.upgrade = upgrading(cl) && h.offersUpgrade(req.Headers)
	ex.safe = !req.HasBody() && idempotent(req.Method)
	ex.ip = c.Remote.Addr().Unmap()
	ex.clientIP = ex.ip
	ex.upset = h.ups.Load()
	ex.hkey = h.requestKey(req)
	ex.peer = ex.ip
	if c.Peer.IsValid() {
		ex.peer = c.Peer.Addr().Unmap() // behind server.trusted_proxies, the hop that connected
	}
	ex.peerTrusted = c.FromTrustedProxy()
	ex.body = c.Body
	ex.bodyCount, _ = c.Body.(rawCounter)
	ex.reqChunked = req.LengthUnknown()
	ex.reqDone = !req.HasBody()
	ex.initBodyBound()
	ex.renderRequest(c)
	ex.lp.Stats.Requests.Add(1)
}

// idempotent reports whether a method is idempotent (RFC 9110 section
// 9.2.2).
func idempotent(m []byte) bool {
	switch string(m) {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return false
}

func nanotime() int64 { return time.Now().UnixNano() }

// begin makes the first attempt from Serve (upstream.Deferred.Begin).
func (ex *exchange) begin() int {
	return ex.Begin(ex.attempt, func() { ex.dropConn(false) })
}

// attempt picks an upstream (the current one when fresh is set, for a
// retry after a stale pooled connection) and sends the head on a pooled
// connection, or dials a new one. It reports false when no upstream is
// left to try. A connection that fails as the head is written is retried
// here when the request is safe to repeat; otherwise fault is set.
func (ex *exchange) attempt(fresh bool) bool {
	now := ex.now
	up := ex.up
	if !fresh || up == nil {
		up = ex.h.pick(ex.lp, ex.upset, ex.clientIP, ex.hkey, ex.tried, now)
		if up == nil {
			return false
		}
	}
	ex.use(up)
	if !fresh {
		if uc := ex.pool.Take(); uc != nil {
			if ex.sendPooled(uc, false) {
				return true
			}
			if !ex.safe || ex.attempts > ex.h.retries {
				ex.Fault, ex.Why = 502, "pooled connection closed as the request was written"
				return true
			}
			ex.retrying()
			ex.use(up)
		}
	}
	if ex.pool.Full() {
		ex.queue(now)
		return true
	}
	ex.dialNew(now)
	return true
}

// sendPooled sends the request on uc, an idle connection of the pool,
// and with pump the body that is already there. It reports false when uc
// was stale (the upstream closed it while it sat in the pool): uc is
// dropped, and the caller decides whether to try again.
func (ex *exchange) sendPooled(uc *upstream.Conn, pump bool) bool {
	ex.lp.Stats.Reused.Add(1)
	ex.attach(uc)
	was := ex.Busy
	ex.Busy = true
	ok := ex.send()
	if ok && pump && !ex.reqDone {
		ex.pumpBody()
	}
	ex.Busy = was
	if !ok {
		ex.dropConn(false)
		ex.ForgetConn()
	}
	return ok
}

// use makes up the exchange's upstream for the next attempt.
func (ex *exchange) use(up *Upstream) {
	if ex.pool != nil && ex.up != up {
		ex.release()
	}
	ex.up = up
	if ex.pool == nil {
		ex.pool = ex.lp.pool(up)
		ex.pool.Active++
		ex.lp.Stats.Load.Add(1)
	}
	if i := ex.upset.index(up); i >= 0 {
		ex.tried |= 1 << i
	}
	ex.attempts++
	up.statsFor(ex.lp).Attempts.Add(1)
}

// attach makes uc the exchange's connection.
func (ex *exchange) attach(uc *upstream.Conn) {
	ex.uc = uc
	uc.Attach(ex)
	ex.gotBytes = false
	ex.lastReused = uc.Reused()
}

// dialNew starts a new connection to the current upstream. When the
// descriptor budget is spent it dials nothing and sets fault to 503 (the
// request reached no upstream; RFC 9110 section 15.6.4); when another
// loop took the address's last place (max_conns) first, the exchange
// waits for one.
func (ex *exchange) dialNew(now int64) {
	uc, err := ex.pool.Dial(ex, &ex.lp.Stats.Counters)
	switch err {
	case upstream.ErrFull:
		ex.queue(now)
		return
	case upstream.ErrBudget:
		ex.Fault, ex.Why = 503, errBudget.Error()
		ex.refused()
		return
	}
	if !uc.Dialing() {
		return // opened at once (a dial of tests'): Connected ran
	}
	ex.attach(uc)
	ex.deadline, ex.dkind = now+ex.h.connectTimeout, dlConnect
}

// dropConn detaches the exchange from its connection, closing the
// connection when closeIt is set (unless it is still connecting: then it
// joins the pool once open). Inside the connection's own OnTraffic, pass
// closeIt false, mark it closed, and return gnet.Close instead.
func (ex *exchange) dropConn(closeIt bool) {
	if uc := ex.uc; uc != nil {
		ex.uc = nil
		uc.Abandon(ex, closeIt)
	}
}

// send writes the request head on the exchange's (open) connection. It
// reports whether the write succeeded.
func (ex *exchange) send() bool {
	uc := ex.uc
	b := append(ex.lp.buf[:0], ex.head[:ex.lineEnd]...)
	if !ex.ruleHost {
		host := ex.host
		if len(host) == 0 {
			host = ex.up.host
		}
		b = codec.AppendFieldLine(b, hdrHost, host)
	}
	b = append(b, ex.head[ex.lineEnd:]...)
	ex.lp.buf = b
	err := uc.Write(b)
	ex.requestDeadline()
	return err == nil
}

// Connected implements upstream.User: the exchange's connection is up.
func (ex *exchange) Connected(uc *upstream.Conn) {
	if ex.uc == nil {
		ex.attach(uc)
	}
	ex.now = nanotime()
	ex.Busy = true
	if ex.send() && !ex.reqDone {
		ex.pumpBody()
	}
	ex.Busy = false
	ex.settle()
}

// pumpBody forwards the request body bytes the client has sent, as its
// body source de-framed them. A Content-Length body goes as it is (the
// head declared the same length), written from the source's memory; a
// chunked body is framed again by appendChunk, so that chunk sizes,
// extensions and trailer fields of the client's never reach the upstream.
func (ex *exchange) pumpBody() {
	chunked := ex.reqChunked
	out := ex.lp.buf[:0]
	raw0 := ex.bodyRaw
	moved := false
	var err error
	for !ex.reqDone {
		if ex.bodyCount == nil && ex.uc.OutboundBuffered() >= maxUpstreamBacklog {
			break // the upstream reads slowly: the client's windows wait (backpressure.go)
		}
		p, done, berr := ex.body.Next()
		if berr != nil {
			status := 400
			var ce *codec.Error
			if errors.As(berr, &ce) {
				status = ce.Status
			}
			ex.Fault, ex.Why = status, "request body: "+berr.Error()
			break
		}
		if len(p) > reframeBytes && chunked {
			p, done = p[:reframeBytes], false // payloads copied into out stay small
		}
		if chunked {
			out = appendChunk(out, p, done)
			if len(out) >= reframeBytes || done {
				err = ex.uc.Write(out)
				out = out[:0]
			}
		} else if len(p) > 0 {
			err = ex.uc.Write(p)
		}
		if err != nil {
			break // the connection closed inside Write
		}
		ex.body.Consume(len(p))
		moved = moved || len(p) > 0 || done
		if done {
			ex.reqDone = true
		}
		ex.countRaw()
		if len(p) == 0 {
			break
		}
	}
	if err == nil && len(out) > 0 {
		err = ex.uc.Write(out)
	}
	if chunked {
		ex.lp.buf = out[:0]
	}
	if !moved && ex.bodyRaw == raw0 && (ex.bodyCount == nil || ex.bodyCount.Raw() == raw0) {
		return // nothing of the body arrived
	}
	switch {
	case err != nil:
	case ex.held:
		ex.heldDeadline() // the body moved: its read_body clock starts again
	case ex.rstate == rsHead:
		ex.requestDeadline()
	}
}

// reframeBytes bounds the chunked body bytes pumpBody copies into the
// loop's buffer before writing them: a body that waited while the
// upstream was dialed (up to limits.body_bytes) is re-framed and written
// in pieces of this size, so the buffer, which the loop keeps, never grows
// to the body's size.
const reframeBytes = 64 << 10

// appendChunk appends a payload segment of a chunked request body as one
// chunk of gale's own framing (RFC 9112 section 7.1), and the last chunk
// with an empty trailer section when last is set. Segments are not the
// client's chunks: a chunk split across reads goes as several.
func appendChunk(b, payload []byte, last bool) []byte {
	b = codec.AppendChunk(b, payload)
	if last {
		b = append(b, codec.LastChunk...)
	}
	return b
}

// requestDeadline sets the deadline while the request goes out: the
// client's read_body timeout while its body is still arriving, then the
// upstream's response-header timeout.
func (ex *exchange) requestDeadline() {
	if ex.reqDone {
		ex.deadline, ex.dkind = ex.now+ex.h.headerTimeout, dlHeader
	} else {
		ex.deadline, ex.dkind = ex.now+int64(ex.set.ReadBodyTimeout), dlClientBody
	}
}

// Resume implements handlers.Pending: the client sent more bytes, or an
// off-loop copy woke the connection. The exchange ends through the
// client's Exchange.End, never by answering here.
func (ex *exchange) Resume(c *handlers.Ctx) handlers.Progress {
	switch ex.state {
	case exHandoff:
		if ex.x.finished() {
			ex.handoffDone()
			return handlers.Waiting
		}
	case exPaced:
		ex.pacedResume()
		return handlers.Waiting
	case exH2C:
		ex.h2cResume(c)
		return handlers.Waiting
	case exActive:
		if ex.held && ex.sink.Room() > 0 {
			// The client caught up (an HTTP/2 client's windows opened):
			// relay what was held now rather than at the next sweep.
			ex.now = nanotime()
			ex.checkHeld()
		}
		if !ex.reqDone && ex.uc != nil && ex.uc.Busy() && ex.rstate != rsTunnel {
			ex.now = nanotime()
			ex.Busy = true
			ex.pumpBody()
			ex.Busy = false
			if ex.settle() {
				return handlers.Waiting
			}
		}
	}
	if ex.inputOverflow() {
		ex.abort()
		return handlers.CloseNow
	}
	return handlers.Waiting
}

// Closed implements handlers.Pending: the client connection closed.
func (ex *exchange) Closed() { ex.EndOnClose(ex.abort) }

// abort drops the exchange when the client is gone: nothing more is
// written to it and its connection to the upstream, unless idle, closes.
func (ex *exchange) abort() {
	if ex.started && ex.rstate != rsDone {
		ex.lp.Stats.Truncated.Add(1)
	}
	if x := ex.x; x != nil {
		x.abort()
	}
	if p := ex.pace; p != nil {
		ex.pace = nil
		p.abort()
	}
	if hx := ex.hx; hx != nil {
		ex.hx = nil
		hx.stop()
	}
	ex.dropConn(true)
	ex.lp.putExchange(ex)
}

// release gives back the exchange's share of its pool's load (read by
// least-connections and random-two). putExchange calls it, so that every
// way an exchange ends gives the share back.
func (ex *exchange) release() {
	if ex.queued {
		ex.queued = false
		ex.pool.Unwait(ex)
	}
	if ex.pool != nil {
		ex.pool.Active--
		ex.pool = nil
		ex.lp.Stats.Load.Add(-1)
	}
}

// settle acts on what a busy section found: the client gone, the
// upstream connection lost, or a fault. It reports whether the exchange
// ended (it must not be touched then).
func (ex *exchange) settle() bool { return ex.Settle(ex.abort, ex.failNow, ex.lost) }

// failNow answers status for a fault, closing the connection.
func (ex *exchange) failNow(status int, why string) {
	ex.dropConn(true)
	ex.finishError(status, why)
}

// Lost implements upstream.User: the connection closed (OnClose, which
// already detached it) while the exchange used it.
func (ex *exchange) Lost(err error) {
	if ex.held && !ex.Busy && ex.uc != nil && ex.relayHeld() {
		return
	}
	ex.uc = nil
	if !ex.ConnLost(err) {
		ex.lost(err)
	}
}

// lost handles the loss of the exchange's connection.
func (ex *exchange) lost(err error) {
	ex.now = nanotime()
	ex.dropConn(false)
	if err == nil {
		err = errLost
	}
	switch ex.rstate {
	case rsBody:
		if ex.kind == codec.BodyUntilClose {
			ex.finish() // the close delimits the body
			return
		}
		// An upstream that dies in the middle of a body is unhealthy
		// (passive health), as one that dies before its head is.
		ex.up.failed(ex.now, "connection lost mid-body: "+err.Error())
		ex.fail(FailReset)
		ex.finishTruncated("upstream closed mid-body: " + err.Error())
		return
	case rsDone, rsTunnel:
		ex.finishTruncated("upstream closed: " + err.Error())
		return
	}
	// No final response head yet.
	if !ex.gotBytes && ex.pool != nil && ex.lastReused && ex.safe && ex.attempts <= ex.h.retries {
		// A pooled connection the upstream closed as we used it.
		ex.retrying()
		ex.Busy = true
		ex.attempt(true)
		ex.Busy = false
		ex.settle()
		return
	}
	if ex.gotBytes || !ex.lastReused {
		// (A pooled connection closed before answering went stale: the
		// upstream is not unhealthy for it.)
		ex.up.failed(ex.now, "connection lost: "+err.Error())
		ex.fail(FailReset)
	}
	ex.finishError(502, "upstream closed before responding: "+err.Error())
}

// DialFailed implements upstream.User: connecting failed. It counts
// against the upstream's health, and another upstream is tried when
// retries are left (the request reached none).
func (ex *exchange) DialFailed(err error) {
	ex.uc = nil
	ex.now = nanotime()
	ex.up.failed(ex.now, "connect: "+err.Error())
	ex.fail(dialFailKind(err))
	status := 502
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		status = 504
		ex.lp.Stats.Timeouts.Add(1)
	}
	ex.retryOrFail(status, "connect: "+err.Error())
}

// retryOrFail retries a request that reached no upstream on an upstream
// not tried yet (or the same one when it is the only one), or answers
// status.
func (ex *exchange) retryOrFail(status int, why string) {
	if ex.attempts <= ex.h.retries {
		ex.retrying()
		tried := ex.tried
		if bits.OnesCount64(tried) >= len(ex.upset.ups) {
			ex.tried = 0 // every upstream was tried: start over
		}
		ex.Busy = true
		ok := ex.attempt(false)
		ex.Busy = false
		if ok {
			ex.settle()
			return
		}
		ex.tried = tried
	}
	ex.finishError(status, why)
}

// check runs from the sweep: timeouts, and off-loop copies waiting for
// the client's output to drain.
func (ex *exchange) check(now int64) {
	switch ex.state {
	case exHandoffWait:
		if ex.outboundBuffered() == 0 {
			ex.startHandoff()
		}
		return
	case exTunnelWait:
		if ex.outboundBuffered() == 0 && (ex.uc == nil || ex.uc.OutboundBuffered() == 0) {
			ex.startTunnel(false)
		}
		return
	case exH2C:
		// The goroutine enforces its own deadlines. A body buffer held
		// for want of room is relayed once there is some: an HTTP/1.1
		// client sends nothing as its output drains, so no resume comes.
		// (A client that shares its connection resumes the exchange as
		// its windows open; the sweep stays out of its way.)
		if _, own := ex.cl.(handlers.Duplicator); !own {
			return
		}
		if hx := ex.hx; hx != nil && hx.headUp && hx.ready.Load() && ex.sink.Room() > 0 {
			ex.now = now
			ex.h2cBody()
		}
		return
	case exHandoff, exPaced:
		return // the goroutine enforces its own deadlines
	}
	if ex.resumeBody(now) {
		return // it ended
	}
	if ex.held {
		ex.now = now
		if ex.dkind != dlClientBody || now < ex.deadline {
			ex.checkHeld()
			return
		}
		ex.held = false // the client stopped sending its body: time it out below
	}
	if ex.deadline == 0 || now < ex.deadline {
		return
	}
	ex.now = now
	ex.lp.Stats.Timeouts.Add(1)
	switch ex.dkind {
	case dlConnect:
		// Give up on this dial: if it completes later, the connection
		// joins the pool; if it fails, DialFailed counts the failure
		// (for the upstream's health; this attempt is counted here).
		ex.fail(FailTimeout)
		ex.up.logFailure(now, "connect timeout")
		ex.dropConn(false)
		ex.retryOrFail(504, "connect timeout")
	case dlHeader:
		ex.fail(FailTimeout)
		ex.dropConn(true)
		ex.up.failed(now, "response header timeout")
		ex.finishError(504, "response header timeout")
	case dlBody:
		ex.fail(FailTimeout)
		ex.up.logFailure(now, "response body read timeout")
		ex.dropConn(true)
		ex.finishTruncated("response body read timeout")
	case dlClientBody:
		// The client stopped sending its body: not the upstream's fault.
		ex.dropConn(true)
		ex.finishError(408, "request body read timeout")
	case dlQueue:
		// Every connection the route allows stayed busy: not the
		// upstream's fault either.
		ex.queued = false
		ex.pool.Unwait(ex)
		ex.finishError(504, "no upstream connection free within the connect timeout (max_conns)")
	}
}

// Traffic implements upstream.User: response bytes.
func (ex *exchange) Traffic() gnet.Action { return ex.upstreamData() }

// upstreamData runs from the connection's OnTraffic (and its OnClose for
// what a holding exchange kept): response bytes.
func (ex *exchange) upstreamData() gnet.Action {
	uc := ex.uc
	if ex.state == exTunnelWait {
		if uc.InboundBuffered() > MaxPendingInput {
			ex.dropConn(false)
			uc.Drop()
			ex.finishTruncated("tunnel: too much data before the tunnel started")
			return gnet.Close
		}
		return gnet.None // kept for the tunnel
	}
	buf := uc.Inbound()
	if len(buf) == 0 {
		if uc.Ended() {
			return gnet.Close // the TLS session ended: OnClose tells the exchange
		}
		return gnet.None
	}
	ex.gotBytes = true
	if ex.behind() {
		return ex.hold()
	}
	ex.now = nanotime()
	ex.Busy = true
	off := 0
	bad := ""
loop:
	for off < len(buf) {
		switch ex.rstate {
		case rsHead:
			n, err := codec.ParseResponse(buf[off:], &ex.resp, &respLimits)
			if err == codec.ErrNeedMore {
				break loop
			}
			if err != nil {
				bad = err.Error()
				break loop
			}
			off += n
			switch st := ex.resp.Status; {
			case st == 101:
				if !ex.upgrade || !ex.resp.ConnUpgrade {
					bad = "101 without an upgrade"
					break loop
				}
				if !upgradeGranted(ex.head[ex.upFrom:ex.upTo], ex.resp.Header("upgrade")) {
					bad = "101 to a protocol not offered"
					break loop
				}
				ex.relayHead()
				ex.rstate = rsTunnel
				break loop
			case st < 200:
				ex.relayInterim()
				ex.requestDeadline()
			default:
				ex.relayHead()
				if ex.kind == codec.BodyNone || ex.kind == codec.BodyLength && ex.remaining == 0 {
					ex.rstate = rsDone
					break loop
				}
				ex.rstate = rsBody
			}
		case rsBody:
			off = ex.relayBody(buf, off)
			if ex.Fault != 0 {
				break loop
			}
			if ex.rstate != rsDone {
				ex.deadline, ex.dkind = ex.now+ex.h.headerTimeout, dlBody
			}
			break loop
		default:
			break loop
		}
	}
	if !ex.ClientGone {
		ex.sink.Flush()
	}
	leftover := off < len(buf) && ex.rstate == rsDone
	uc.Consume(off) // after a 101, the tunnel's first bytes stay buffered
	ex.Busy = false

	switch {
	case ex.ClientGone:
		ex.dropConn(false)
		uc.Drop()
		ex.abort()
		return gnet.Close
	case bad != "":
		ex.dropConn(false)
		uc.Drop()
		ex.up.failed(ex.now, "bad response: "+bad)
		ex.fail(FailBadResponse)
		if ex.started {
			ex.finishTruncated("bad response: " + bad)
		} else {
			ex.finishError(502, "bad response: "+bad)
		}
		return gnet.Close
	case ex.Fault != 0:
		ex.Fault = 0
		ex.dropConn(false)
		uc.Drop()
		ex.finishTruncated(ex.Why)
		return gnet.Close
	case ex.rstate == rsDone:
		return ex.complete(leftover)
	case ex.rstate == rsTunnel:
		ex.state = exTunnelWait
		ex.deadline = 0
		if ex.outboundBuffered() == 0 && uc.OutboundBuffered() == 0 {
			return ex.startTunnel(true)
		}
		return gnet.None
	case !ex.upClosing && ex.sink.Room() == 0 && ex.mayLeave():
		return ex.leaveLoop()
	}
	return gnet.None
}

// relayBody relays the body bytes in buf from off, de-framed, to the
// sink, and returns the new offset.
func (ex *exchange) relayBody(buf []byte, off int) int {
	switch ex.kind {
	case codec.BodyUntilClose:
		ex.sink.WriteBody(buf[off:])
		return len(buf)
	case codec.BodyLength:
		n := len(buf) - off
		if int64(n) > ex.remaining {
			n = int(ex.remaining)
		}
		ex.sink.WriteBody(buf[off : off+n])
		ex.remaining -= int64(n)
		if ex.remaining == 0 {
			ex.rstate = rsDone
		}
		return off + n
	}
	// Chunked: only the payloads go on; the sink frames them again, so
	// chunk extensions and trailer fields of the upstream's never reach
	// the client.
	for off < len(buf) {
		n, payload, done, err := ex.rbody.Next(buf[off:])
		if err != nil {
			ex.Fault, ex.Why = 502, "response body: "+err.Error()
			return len(buf)
		}
		off += n
		ex.sink.WriteBody(payload)
		if done {
			ex.rstate = rsDone
			if ex.rbody.Keep != nil {
				ex.trailers = relayedTrailers(ex.trailers[:0], ex.trailerRaw)
			}
			break
		}
		if n == 0 {
			break
		}
	}
	return off
}

// complete ends an exchange whose response was relayed in full. It
// returns the action for the connection's OnTraffic.
func (ex *exchange) complete(leftover bool) gnet.Action {
	uc := ex.uc
	act := gnet.None
	keep := ex.resp.KeepAlive && ex.reqDone && !leftover && ex.kind != codec.BodyUntilClose && uc.Busy()
	ex.dropConn(false)
	if !keep || !uc.Release(ex.now) {
		uc.Drop()
		act = gnet.Close
	}
	ex.finish()
	return act
}

// finish reports the completed response to the client and recycles the
// exchange. Nothing may touch ex afterwards.
func (ex *exchange) finish() {
	res := handlers.Result{
		Status:    ex.status,
		BodyBytes: ex.bodyOut,
		BytesOut:  ex.out,
		Close:     ex.closeClient || !ex.reqDone,
		Unread:    !ex.reqDone,
		At:        ex.now,
	}
	if !ex.endSink(false) {
		return
	}
	cl := ex.cl
	ex.lp.putExchange(ex)
	cl.End(res)
}

// endSink ends the response in the sink (Abort when cut, else Finish)
// before the exchange reports to the client. It reports false when the
// client closed meanwhile (a failed write): the exchange was dropped
// then and must not be touched.
func (ex *exchange) endSink(cut bool) bool {
	was := ex.Busy
	ex.Busy = true
	if c, ok := ex.sink.(handlers.Canceler); cut && ok && ex.cancelled {
		c.Cancel()
	} else if cut {
		ex.sink.Abort()
	} else {
		ex.sink.Finish(ex.trailers)
	}
	ex.Busy = was
	if ex.ClientGone {
		ex.abort()
		return false
	}
	return true
}

// finishTruncated ends an exchange whose response cannot be completed:
// the client connection closes, so a cut body never passes for a whole
// one (nothing else can be said once the head went out).
func (ex *exchange) finishTruncated(why string) {
	ex.lp.Stats.Truncated.Add(1)
	ex.debug("response truncated", why)
	res := handlers.Result{Status: ex.status, BodyBytes: ex.bodyOut, BytesOut: ex.out, Close: true, Unread: !ex.reqDone, At: ex.now}
	if !ex.started {
		res.Status = 502
	}
	if !ex.endSink(true) {
		return
	}
	cl := ex.cl
	ex.lp.putExchange(ex)
	cl.End(res)
}

// finishError answers status (502, 504, or a request body error) with a
// fixed body when nothing of the response was sent yet, else truncates.
func (ex *exchange) finishError(status int, why string) {
	if ex.started {
		ex.finishTruncated(why)
		return
	}
	if status >= 500 {
		ex.lp.Stats.Errors.Add(1)
	}
	ex.debug("answered "+codec.StatusText(status), why)
	ex.status = status
	ex.closeClient = true
	if ex.reqDone && status >= 500 {
		// The request was read in full: the connection may serve
		// another one.
		ex.closeClient = ex.cl.Closing()
	}
	lp := ex.lp
	r := &lp.resp
	r.SetError(status, ex.json, nil) // Server goes first, after the rules
	body := r.Body
	ex.h.route.ApplyResponseHeaders(r)
	hs := lp.hdrs[:0]
	if len(ex.set.Server) > 0 {
		hs = append(hs, codec.Header{Name: codec.NameServer, Value: ex.set.Server})
	}
	hs = append(hs, r.Headers...)
	ex.Busy = true
	ex.sink.WriteHead(handlers.Head{Status: status, Fields: hs, Length: int64(len(body)), Close: ex.closeClient})
	ex.sink.WriteBody(body)
	clear(hs)
	lp.hdrs = hs[:0]
	ex.Busy = false
	if ex.ClientGone {
		ex.abort()
		return
	}
	ex.started = true
	ex.rstate = rsDone
	ex.finish()
}

// debug logs an exchange event at debug level, at no cost when off.
func (ex *exchange) debug(msg, why string) {
	l := ex.lp.log
	if l == nil || !l.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	up := ""
	if ex.up != nil {
		up = ex.up.raw
	}
	l.Debug("proxy: "+msg, "route", ex.h.route.Conf.Path, "upstream", up, "reason", why)
}

// canTunnel reports whether the client's connection can become a tunnel
// after a 101: it switches protocols and hands over its socket (HTTP/1.1).
// A request from any other is forwarded without its Upgrade.
func canTunnel(x handlers.Exchange) bool {
	_, up := x.(handlers.Upgrader)
	_, dup := x.(handlers.Duplicator)
	return up && dup
}

// upgrading reports whether the request asks to switch protocols on an
// exchange that can become a tunnel (HTTP/1.1).
func upgrading(x handlers.Exchange) bool {
	u, ok := x.(handlers.Upgrader)
	return ok && canTunnel(x) && u.Upgrading()
}
