package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/codec"
	"gale/fastcgi"
	"gale/handlers"
	"gale/proxy"
	"gale/upstream"
)

// Kinds of deadline.
const (
	dlNone       uint8 = iota
	dlConnect          // dialing
	dlHeader           // waiting for the CGI head
	dlBody             // waiting for more of the response
	dlClientBody       // waiting for more of the request body
	dlQueue            // waiting for a connection of the loop's pool
	dlHeld             // holding the response for a client that has no room
)

// requestID is the id of every request: one request per connection.
const requestID = 1

// maxPieces bounds the body pieces gathered before the head is written
// (a response that ends within one read goes with its length).
const maxPieces = 4

// maxStderr bounds the FCGI_STDERR bytes logged per request.
const maxStderr = 8 << 10

// exchange is one request on its way to a FastCGI server and its
// response on the way back. It belongs to the client's loop, is recycled
// through the loop, and implements handlers.Pending.
//
// Callbacks nest: a failing write on either connection makes gnet close
// it inside the write, which calls back into the exchange. While busy,
// such callbacks only record it (upstream.Deferred); settle acts on it.
type exchange struct {
	upstream.Slot // its place in the loop's exchanges in flight

	lp   *loop
	h    *Handler
	cl   handlers.Exchange
	sink handlers.ResponseSink
	body handlers.BodySource
	set  handlers.ExchangeSettings

	srv      int // the server of the current attempt; -1 none
	tried    uint64
	attempts int
	conn     *upstream.Conn

	req        []byte // FCGI_BEGIN_REQUEST, FCGI_PARAMS (and the empty FCGI_STDIN without a body)
	reqDone    bool   // the whole request went to the connection
	safe       bool   // no body: may be sent again on a fresh connection
	expect100  bool   // the client waits for 100 Continue before it sends the body
	isHead     bool
	json       bool
	env        envScratch
	rec        [fastcgi.HeaderLen]byte
	iov        [2][]byte
	logMethod  []byte
	logURI     []byte
	stderrSeen int

	head       fastcgi.Head
	headBuf    []byte // the CGI head while it spans records
	headDone   bool
	headWait   bool // the head is parsed but not written: pieces gather
	resp       handlers.Response
	pieces     [maxPieces][]byte
	npieces    int
	piecesLen  int64
	started    bool
	status     int
	ended      bool // FCGI_END_REQUEST arrived
	gotBytes   bool
	lastReused bool

	deadline int64
	dkind    uint8
	now      int64
	held     bool
	waiting  bool // in its pool's waiting list

	upstream.Deferred // what callbacks found while busy (settle)

	off *offReader // the connection left gnet (offloop.go)
}

func newExchange(lp *loop) *exchange {
	ex := &exchange{lp: lp, srv: -1}
	ex.resp.Headers = make([]codec.Header, 0, 16)
	ex.head.Fields = make([]codec.Header, 0, 16)
	ex.req = make([]byte, 0, 2<<10)
	return ex
}

// reset clears ex for reuse, keeping its buffers.
func (ex *exchange) reset() {
	*ex = exchange{
		lp:        ex.lp,
		srv:       -1,
		req:       ex.req[:0],
		env:       envScratch{name: ex.env.name[:0], val: ex.env.val[:0]},
		logMethod: ex.logMethod[:0],
		logURI:    ex.logURI[:0],
		headBuf:   ex.headBuf[:0],
		head:      fastcgi.Head{Fields: ex.head.Fields[:0]},
		resp:      handlers.Response{Headers: ex.resp.Headers[:0]},
	}
}

func nanotime() int64 { return time.Now().UnixNano() }

// setup renders the request: FCGI_BEGIN_REQUEST and the environment.
func (ex *exchange) setup(h *Handler, cl handlers.Exchange, c *handlers.Ctx, script, info []byte, decoded bool) int {
	ex.h, ex.cl, ex.sink, ex.body = h, cl, c.Sink, c.Body
	ex.now = nanotime()
	ex.set = cl.Settings()
	req := c.Req
	ex.isHead = req.IsHead()
	ex.json = codec.AcceptsJSONOnly(req.Header("Accept"))
	ex.reqDone = false
	ex.safe = !req.HasBody()
	ex.expect100 = req.Expect100 && req.HasBody()
	ex.logMethod = append(ex.logMethod[:0], req.Method...)
	ex.logURI = append(ex.logURI[:0], req.Target[:min(len(req.Target), 512)]...)
	lp := ex.lp
	pairs, status := h.appendEnv(lp.pairs[:0], c, &ex.env, script, info, decoded)
	lp.pairs = pairs[:0]
	if status != 0 {
		return status
	}
	lp.stats.Requests.Add(1)
	b := fastcgi.AppendBeginRequest(ex.req[:0], requestID, fastcgi.RoleResponder, h.beginFlags)
	b = fastcgi.AppendStream(b, fastcgi.TypeParams, requestID, pairs)
	b = fastcgi.AppendHeader(b, fastcgi.TypeParams, requestID, 0)
	if !req.HasBody() {
		b = fastcgi.AppendHeader(b, fastcgi.TypeStdin, requestID, 0)
	}
	ex.req = b
	return 0
}

// attempt picks a server (the current one when fresh is set) and sends
// the request on a pooled connection, or dials a new one. It reports
// false when no server is left to try.
func (ex *exchange) attempt(fresh bool) bool {
	if !fresh || ex.srv < 0 {
		srv := ex.h.pick(ex.lp, ex.tried, ex.now)
		if srv < 0 {
			return false
		}
		ex.use(srv)
	} else {
		ex.attempts++
	}
	p := ex.lp.pool(ex.srv)
	if !fresh {
		for {
			c := p.Take()
			if c == nil {
				break
			}
			ex.attach(c)
			ex.lp.stats.Reused.Add(1)
			ex.Busy = true
			ok := ex.send()
			ex.Busy = false
			if ok {
				return true
			}
			ex.dropConn(false) // stale: closed as the request was written
			ex.ForgetConn()
			if ex.Fault != 0 {
				return true
			}
		}
		if p.Full() {
			ex.queue(p)
			return true
		}
	}
	ex.dialNew()
	return true
}

// queue makes the exchange wait for a connection of p, up to
// timeouts.response_header.
func (ex *exchange) queue(p *upstream.Pool) {
	ex.waiting = true
	ex.lp.stats.Queued.Add(1)
	ex.deadline, ex.dkind = ex.now+ex.h.headerTimeout, dlQueue
	p.Wait(ex)
}

// Dequeued implements upstream.Waiter: the pool hands the waiting
// exchange a connection another request freed (c), or room to dial one.
func (ex *exchange) Dequeued(c *upstream.Conn) {
	ex.waiting = false
	ex.now = nanotime()
	ex.deadline, ex.dkind = 0, dlNone
	if c == nil {
		ex.dialNew()
		if ex.Fault != 0 {
			ex.settle()
		}
		return
	}
	ex.attach(c)
	ex.lp.stats.Reused.Add(1)
	ex.Busy = true
	if !ex.send() {
		if c.Closed() {
			ex.ConnLost(nil)
		}
	}
	ex.Busy = false
	ex.settle()
}

// use makes srv the server of the next attempt.
func (ex *exchange) use(srv int) {
	ex.release()
	ex.srv = srv
	ex.lp.pools[srv].Active++
	ex.tried |= 1 << srv
	ex.attempts++
}

// release gives back the exchange's share of its server's load, and its
// place in the waiting list.
func (ex *exchange) release() {
	if ex.waiting {
		ex.lp.pools[ex.srv].Unwait(ex)
		ex.waiting = false
	}
	if ex.srv >= 0 {
		ex.lp.pools[ex.srv].Active--
		ex.srv = -1
	}
}

func (ex *exchange) attach(c *upstream.Conn) {
	ex.conn = c
	c.Attach(ex)
	ex.gotBytes = false
	ex.lastReused = c.Reused()
}

// dialNew starts a connection to the current server; without a
// descriptor left, fault is 503.
func (ex *exchange) dialNew() {
	p := ex.lp.pool(ex.srv)
	c, err := p.Dial(ex, &ex.lp.conns)
	switch err {
	case upstream.ErrFull: // another loop took the place first
		ex.queue(p)
		return
	case upstream.ErrBudget:
		ex.Fault, ex.Why = 503, err.Error()
		return
	}
	if !c.Dialing() {
		return // opened at once (a dial of tests'): Connected ran
	}
	ex.attach(c)
	ex.deadline, ex.dkind = ex.now+ex.h.connectTimeout, dlConnect
}

// dropConn detaches the exchange from its connection, closing it when
// closeIt is set (a connection still dialing joins the pool once open).
func (ex *exchange) dropConn(closeIt bool) {
	if c := ex.conn; c != nil {
		ex.conn = nil
		c.Abandon(ex, closeIt)
	}
}

// send writes the request on the exchange's open connection and as much
// of the body as has arrived. It reports whether the write succeeded.
func (ex *exchange) send() bool {
	if _, err := ex.conn.Gnet().Write(ex.req); err != nil {
		return false
	}
	if ex.expect100 {
		// The application is reached: the body may come (RFC 9110
		// section 10.1.1). FastCGI applications never answer 100
		// themselves.
		ex.expect100 = false
		ex.sink.WriteInterim(100, nil)
		ex.sink.Flush()
	}
	if ex.safe {
		ex.reqDone = true
	} else {
		ex.pumpBody()
	}
	ex.requestDeadline()
	return !ex.ConnGone()
}

// pumpBody sends the request body the client's engine has de-framed as
// FCGI_STDIN records, and the empty record that ends it.
func (ex *exchange) pumpBody() {
	for !ex.reqDone && ex.conn != nil && ex.conn.Gnet() != nil && !ex.ConnGone() {
		p, done, err := ex.body.Next()
		if err != nil {
			ex.Fault, ex.Why = 400, "request body: "+err.Error()
			var ce *codec.Error
			if errors.As(err, &ce) {
				ex.Fault = ce.Status
			}
			return
		}
		n := min(len(p), fastcgi.MaxContent)
		if n > 0 {
			ex.iov[0] = fastcgi.AppendHeader(ex.rec[:0], fastcgi.TypeStdin, requestID, n)
			ex.iov[1] = p[:n]
			_, werr := ex.conn.Gnet().Writev(ex.iov[:])
			ex.iov[1] = nil
			if werr != nil {
				return
			}
			ex.body.Consume(n)
			if n < len(p) {
				continue
			}
		}
		if done {
			if _, werr := ex.conn.Gnet().Write(fastcgi.AppendHeader(ex.rec[:0], fastcgi.TypeStdin, requestID, 0)); werr != nil {
				return
			}
			ex.reqDone = true
			ex.requestDeadline()
			return
		}
		if n == 0 {
			return
		}
		ex.deadline, ex.dkind = ex.now+int64(ex.set.ReadBodyTimeout), dlClientBody
	}
}

// requestDeadline sets the deadline while the request goes out.
func (ex *exchange) requestDeadline() {
	if ex.reqDone {
		ex.deadline, ex.dkind = ex.now+ex.h.headerTimeout, dlHeader
	} else {
		ex.deadline, ex.dkind = ex.now+int64(ex.set.ReadBodyTimeout), dlClientBody
	}
}

// Connected implements upstream.User: the exchange's connection is up.
func (ex *exchange) Connected(c *upstream.Conn) {
	if ex.conn == nil {
		ex.attach(c)
	}
	ex.now = nanotime()
	ex.Busy = true
	ex.send()
	ex.Busy = false
	ex.settle()
}

// DialFailed implements upstream.User: the connect failed; it counts
// against the server's health, and another server is tried, or 502.
func (ex *exchange) DialFailed(err error) {
	ex.conn = nil
	ex.now = nanotime()
	ex.h.servers[ex.srvOr()].failed(ex.now, "connect: "+err.Error())
	ex.retryOr(502, "connect: "+err.Error(), isTimeout(err))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// retryOr tries another server when one is left and retries allow, else
// answers status (504 when timedOut).
func (ex *exchange) retryOr(status int, why string, timedOut bool) {
	if timedOut {
		status = 504
	}
	if ex.attempts <= ex.h.retries && ex.attempt(false) {
		if ex.Fault == 0 {
			return
		}
		status, why = ex.Fault, ex.Why
		ex.Fault = 0
	}
	ex.dropConn(true)
	ex.finishError(status, why)
}

// Resume implements handlers.Pending: the client sent more bytes (the
// body), or a piece read off the loop is ready.
func (ex *exchange) Resume(*handlers.Ctx) handlers.Progress {
	ex.now = nanotime()
	if !ex.reqDone && ex.conn != nil && ex.conn.Busy() {
		ex.Busy = true
		ex.pumpBody()
		ex.Busy = false
		if ex.settle() {
			return handlers.Waiting
		}
	}
	if ex.off != nil {
		ex.offResume()
		return handlers.Waiting
	}
	if ex.reqDone && handlers.InboundBuffered(ex.cl) > proxy.MaxPendingInput {
		ex.abort()
		return handlers.CloseNow
	}
	return handlers.Waiting
}

// Closed implements handlers.Pending: the client connection closed.
func (ex *exchange) Closed() { ex.EndOnClose(ex.abort) }

// abort drops the exchange when the client is gone; its connection
// closes (the request cannot be taken back).
func (ex *exchange) abort() {
	if ex.off != nil {
		ex.off.stop()
	}
	ex.dropConn(true)
	ex.lp.putExchange(ex)
}

// Lost implements upstream.User: the connection closed while in use.
func (ex *exchange) Lost(err error) {
	if !ex.ConnLost(err) {
		ex.lost(err)
	}
}

// lost handles a connection closed before FCGI_END_REQUEST: a stale
// pooled connection is replaced when the request may be sent again;
// otherwise 502, or a truncated response.
func (ex *exchange) lost(err error) {
	ex.conn = nil
	why := "connection closed before FCGI_END_REQUEST"
	if err != nil {
		why += ": " + err.Error()
	}
	if !ex.gotBytes && ex.lastReused && ex.safe && !ex.started {
		ex.reqDone = false
		ex.attempt(true)
		if ex.Fault == 0 {
			return
		}
	}
	ex.h.servers[ex.srvOr()].failed(ex.now, why)
	ex.finishError(502, why)
}

// srvOr is the current server, or the first.
func (ex *exchange) srvOr() int { return max(ex.srv, 0) }

// settle acts on what a busy section found. It reports whether the
// exchange ended.
func (ex *exchange) settle() bool { return ex.Settle(ex.abort, ex.failNow, ex.lost) }

// failNow answers status for a fault, closing the connection.
func (ex *exchange) failNow(status int, why string) {
	ex.dropConn(true)
	ex.finishError(status, why)
}

// check runs from the sweep: deadlines, and relaying held for a client
// that caught up.
func (ex *exchange) check(now int64) {
	ex.now = now
	if ex.held && ex.sink.Room() > 0 {
		ex.held = false
		ex.deadline, ex.dkind = now+ex.h.headerTimeout, dlBody
		if ex.off != nil {
			ex.offResume()
		} else if c := ex.conn; c != nil && c.Gnet() != nil {
			_ = c.Gnet().Wake(nil) // its OnTraffic relays what it kept
		}
		return
	}
	if ex.dkind == dlNone || now < ex.deadline {
		return
	}
	switch ex.dkind {
	case dlConnect:
		ex.h.servers[ex.srvOr()].failed(now, "connect timeout")
		ex.dropConn(true)
		ex.retryOr(504, "connect timeout", true)
	case dlHeader:
		ex.h.servers[ex.srvOr()].failed(now, "response timeout")
		ex.dropConn(true)
		ex.finishError(504, "no response head within timeouts.response_header")
	case dlBody:
		ex.dropConn(true)
		ex.finishTruncated("response body stalled past timeouts.response_header")
	case dlClientBody:
		ex.dropConn(true)
		ex.finishError(408, "request body stalled past timeouts.read_body")
	case dlQueue:
		ex.release()
		ex.finishError(504, "no connection free within timeouts.response_header")
	case dlHeld:
		ex.dropConn(true)
		ex.finishTruncated("the client took nothing of the response for timeouts.write")
	}
}

// Traffic implements upstream.User: records from the server.
func (ex *exchange) Traffic() gnet.Action {
	c := ex.conn
	gc := c.Gnet()
	buf, _ := gc.Peek(-1)
	if len(buf) == 0 {
		return gnet.None
	}
	ex.gotBytes = true
	if ex.started && ex.sink.Room() <= 0 {
		return ex.hold()
	}
	ex.now = nanotime()
	ex.Busy = true
	off, full := ex.relayAll(buf)
	leftover := off < len(buf) && ex.ended
	if off > 0 {
		_, _ = gc.Discard(off) // gnet's Discard(0) would drop everything
	}
	ex.Busy = false
	switch {
	case ex.ClientGone:
		ex.dropConn(false)
		c.Drop()
		ex.abort()
		return gnet.Close
	case ex.Fault != 0:
		ex.h.servers[ex.srvOr()].failed(ex.now, ex.Why)
		ex.dropConn(false)
		c.Drop()
		ex.finishError(ex.Fault, ex.Why)
		return gnet.Close
	case ex.ended:
		return ex.complete(leftover)
	case full:
		return ex.hold()
	}
	if ex.headDone {
		ex.deadline, ex.dkind = ex.now+ex.h.headerTimeout, dlBody
	}
	return gnet.None
}

// relayAll relays the complete records at the start of buf, flushing
// the client's output after each run of them, and returns the bytes they
// took and whether records wait for the client's room (the exchange is
// to be held: the sweep resumes it). A run that stopped for want of room
// goes on when the flush made some (the output went into the socket):
// records left behind with room to spare would wait for an event that
// may never come, the server having sent its last. The answer is the
// relay's own, never a second look at the room, which a client's engine
// may free concurrently (HTTP/3).
func (ex *exchange) relayAll(buf []byte) (int, bool) {
	off := 0
	for {
		n, full := ex.relay(buf[off:])
		off += n
		ex.flushPieces()
		if !ex.ClientGone {
			ex.sink.Flush()
		}
		if !full {
			return off, false
		}
		if n == 0 || ex.sink.Room() <= 0 {
			return off, true
		}
	}
}

// relay handles the complete records at the start of buf while the
// client has room, and returns the bytes they took and whether it
// stopped for want of room with records left.
func (ex *exchange) relay(buf []byte) (int, bool) {
	off := 0
	for off < len(buf) && !ex.ended && ex.Fault == 0 && !ex.ClientGone {
		if ex.started && ex.sink.Room() <= 0 {
			return off, true
		}
		r, n, err := fastcgi.Parse(buf[off:])
		if err == fastcgi.ErrNeedMore {
			break
		}
		if err == nil && r.ID != requestID {
			err = errors.New("fastcgi: record for another request")
		}
		if err != nil {
			ex.Fault, ex.Why = 502, err.Error()
			break
		}
		off += n
		ex.record(r)
	}
	return off, false
}

// record handles one record of the exchange's request.
func (ex *exchange) record(r fastcgi.Record) {
	switch r.Type {
	case fastcgi.TypeStdout:
		ex.stdout(r.Content)
	case fastcgi.TypeStderr:
		ex.stderr(r.Content)
	case fastcgi.TypeEndRequest:
		_, proto, err := fastcgi.ParseEndRequest(r.Content)
		switch {
		case err != nil:
			ex.Fault, ex.Why = 502, err.Error()
		case proto == fastcgi.StatusOverloaded:
			ex.Fault, ex.Why = 503, "the application is overloaded"
		case proto != fastcgi.StatusRequestComplete:
			ex.Fault, ex.Why = 502, "the application refused the request"
		case !ex.headDone:
			ex.Fault, ex.Why = 502, "the response ended without a CGI head"
		default:
			ex.ended = true
		}
	default:
		ex.Fault, ex.Why = 502, "unexpected management record"
	}
}

// stdout takes FCGI_STDOUT content: the CGI head, then body bytes.
func (ex *exchange) stdout(p []byte) {
	if ex.headDone {
		ex.bodyPiece(p)
		return
	}
	src := p
	if len(ex.headBuf) > 0 {
		ex.headBuf = append(ex.headBuf, p...)
		src = ex.headBuf
	}
	err := fastcgi.ParseHead(src, &ex.head, headBytes, maxFields)
	switch {
	case err == fastcgi.ErrNeedMore:
		if len(ex.headBuf) == 0 {
			ex.headBuf = append(ex.headBuf, p...)
		}
		return
	case err != nil:
		ex.Fault, ex.Why = 502, err.Error()
		return
	}
	ex.headDone, ex.headWait = true, true
	ex.prepareHead()
	if rest := src[ex.head.Len:]; len(rest) > 0 {
		ex.bodyPiece(rest)
	}
}

// prepareHead turns the CGI head into the response's status and fields:
// a Location without Status is a 302 (RFC 3875 section 6.2.3-6.2.4);
// framing and hop-by-hop fields are the server's; the route's response
// rules apply.
func (ex *exchange) prepareHead() {
	st := ex.head.Status
	if st == 0 {
		st = 200
		if ex.head.Location != nil {
			st = 302
		}
	}
	ex.status = st
	r := &ex.resp
	r.Reset()
	r.Status = st
	if len(ex.set.Server) > 0 {
		r.Add(codec.NameServer, ex.set.Server)
	}
	for _, f := range ex.head.Fields {
		if codec.ConnectionSpecific(f.Name) || codec.EqualFold(f.Name, "Content-Length") || codec.EqualFold(f.Name, "Trailer") {
			continue
		}
		r.Add(f.Name, f.Value)
	}
	ex.h.route.ApplyResponseHeaders(r)
}

// bodyPiece relays body bytes, or gathers them while the head waits.
func (ex *exchange) bodyPiece(p []byte) {
	if len(p) == 0 {
		return
	}
	if ex.headWait {
		if ex.npieces < maxPieces {
			ex.pieces[ex.npieces] = p
			ex.npieces++
			ex.piecesLen += int64(len(p))
			return
		}
		ex.flushPieces()
	}
	ex.sink.WriteBody(p)
}

// flushPieces writes a waiting head (with the body's length when the
// response ended) and the pieces gathered behind it.
func (ex *exchange) flushPieces() {
	if !ex.headWait || ex.Fault != 0 || ex.ClientGone {
		return
	}
	ex.headWait = false
	length := int64(-1)
	if ex.ended {
		length = ex.piecesLen
	}
	ex.sink.WriteHead(handlers.Head{Status: ex.status, Fields: ex.resp.Headers, Length: length, Reason: ex.head.Reason, Close: !ex.reqDone})
	ex.started = true
	for i := 0; i < ex.npieces; i++ {
		ex.sink.WriteBody(ex.pieces[i])
		ex.pieces[i] = nil
	}
	ex.npieces, ex.piecesLen = 0, 0
}

// stderr logs FCGI_STDERR with the request, up to maxStderr bytes.
func (ex *exchange) stderr(p []byte) {
	l := ex.h.logger()
	if l == nil || ex.stderrSeen >= maxStderr || !l.Enabled(context.Background(), slog.LevelWarn) {
		return
	}
	p = p[:min(len(p), maxStderr-ex.stderrSeen)]
	ex.stderrSeen += len(p)
	l.Warn("fastcgi stderr", "route", ex.h.route.Conf.Path, "method", string(ex.logMethod),
		"uri", string(ex.logURI), "stderr", string(p))
}

// hold leaves the records in the connection's inbound buffer while the
// client has no room; past MaxHeld the connection leaves gnet.
func (ex *exchange) hold() gnet.Action {
	ex.markHeld()
	if ex.conn.Gnet().InboundBuffered() > MaxHeld {
		return ex.leaveLoop()
	}
	return gnet.None
}

// markHeld records that the response waits for the client's room. The
// wait is the client's, not the application's, so timeouts.write bounds
// it, counted from the last relay that made progress: an exchange the
// client never resumes (a client that takes nothing, or an engine that
// ended the client's side without a word) gives back its connection and
// the application's worker instead of holding them until the server
// stops.
func (ex *exchange) markHeld() {
	if ex.held {
		return
	}
	ex.held = true
	ex.now = nanotime()
	ex.deadline, ex.dkind = 0, dlNone
	if w := int64(ex.set.WriteTimeout); w > 0 {
		ex.deadline, ex.dkind = ex.now+w, dlHeld
	}
}

// MaxHeld bounds the response bytes an exchange leaves in its
// connection's inbound buffer while the client has no room.
const MaxHeld = 256 << 10

// complete ends an exchange whose response ended: the connection goes
// back to the pool when it is clean.
func (ex *exchange) complete(leftover bool) gnet.Action {
	c := ex.conn
	keep := ex.reqDone && !leftover && c.Busy() && ex.h.conf.KeepAlive
	ex.dropConn(false)
	now := ex.now
	ex.finish(false)
	if !keep || !c.Release(now) {
		c.Drop()
		return gnet.Close
	}
	return gnet.None
}

// finish ends the response in the sink and reports it to the client.
// Nothing may touch ex afterwards.
func (ex *exchange) finish(cut bool) {
	res := handlers.Result{Status: ex.status, Close: cut || !ex.reqDone, Unread: !ex.reqDone, At: ex.now}
	if !ex.started {
		res.Status = 502
	}
	ex.Busy = true
	if cut {
		ex.sink.Abort()
	} else {
		ex.sink.Finish(nil)
	}
	ex.Busy = false
	if ex.ClientGone {
		ex.abort()
		return
	}
	cl := ex.cl
	ex.lp.putExchange(ex)
	cl.End(res)
}

// finishTruncated ends a response that cannot be completed: the client
// connection closes, so a cut body never passes for a whole one.
func (ex *exchange) finishTruncated(why string) {
	ex.debug("response truncated", why)
	ex.finish(true)
}

// finishError answers status with a fixed body when nothing was sent
// yet, else truncates.
func (ex *exchange) finishError(status int, why string) {
	if ex.started {
		ex.finishTruncated(why)
		return
	}
	ex.debug("answered "+codec.StatusText(status), why)
	if status >= 500 {
		ex.lp.stats.Errors.Add(1)
	}
	ex.status = status
	r := &ex.resp
	r.SetError(status, ex.json, ex.set.Server)
	ex.h.route.ApplyResponseHeaders(r)
	body := r.Body
	ex.Busy = true
	ex.sink.WriteHead(handlers.Head{Status: status, Fields: r.Headers, Length: int64(len(body)), Close: !ex.reqDone})
	ex.sink.WriteBody(body)
	ex.Busy = false
	if ex.ClientGone {
		ex.abort()
		return
	}
	ex.started = true
	ex.finish(false)
}

// debug logs an exchange event at debug level, at no cost when off.
func (ex *exchange) debug(msg, why string) {
	l := ex.h.logger()
	if l == nil || !l.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	l.Debug("fastcgi: "+msg, "route", ex.h.route.Conf.Path, "uri", string(ex.logURI), "reason", why)
}
