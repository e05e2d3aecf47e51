package h1

import (
	"net/netip"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/accesslog"
	"gale/app/serve"
	"gale/app/wire"
	"gale/codec"
	"gale/handlers"
)

const (
	// batch is how many pipelined requests one connection may answer per
	// turn before other connections on its loop get theirs.
	batch = 16
	// inlineBody is the largest body copied into the loop's output buffer;
	// larger in-memory bodies are referenced in place by a writev.
	inlineBody = 4 << 10
)

// Conn is the HTTP/1.1 engine of one client connection: its request
// parsing, answering, pipelining, timeouts and close, over the
// connection's transport. It is owned by its loop.
type Conn struct {
	*wire.Conn // the transport: every byte to and from the client goes through it
	loop       *Loop

	req  codec.Request
	ctx  handlers.Ctx
	body codec.BodyReader
	sink responseSink // the response sink of a handler that answers later (sink.go)
	src  requestBody  // the request body, for a handler that forwards it (body.go)

	inBody    bool       // the current request's body is still arriving (and is discarded)
	headStart int64      // when the current partial request head started; 0 = none
	meter     wire.Meter // the current exchange, for the metrics

	closeAfter  bool  // the response being written is the last one
	closing     bool  // the last response is written; close once it drained
	linger      bool  // keep reading after the last response before closing
	lingerUntil int64 // when a lingering close gives up waiting for the client
	paused      bool  // parsing stopped until the output drains
	woke        bool  // a Wake for the next batch is pending

	xfer *transfer // large body being sent off the loop, or waiting to start

	// The exchange answered later (handlers.Pending: a static route
	// waiting for a file load, the proxy waiting for its upstream), and
	// its request, copied out of the inbound buffer (pending.go).
	pending  handlers.Pending
	kept     codec.Request
	keptBuf  []byte
	inResume bool // pending.Resume is running: an end it reports waits for it (endNow, endResume)
	endClose bool // the pending exchange ended during Resume and asked to close
	endParse bool // the pending exchange ended during Resume: parse what follows

	st staticConn // static routes: the file cache's completion of a load (static.go)

	redirect handlers.Handler // answers every request on redirect_to_https listeners; nil elsewhere
	noH1     bool             // the listener speaks no HTTP/1.1: a head that never completes is part of an HTTP/2 preface
	altSvc   []byte           // the Alt-Svc value advertising HTTP/3 on the listener (altsvc.go); nil for none
}

var _ wire.Engine = (*Conn)(nil)

// ClientIs makes ap the client's address for the connection's requests
// (a PROXY protocol header named it before any request).
func (cs *Conn) ClientIs(ap netip.AddrPort) { cs.ctx.Remote = ap }

// Open makes cs the HTTP/1.1 engine of transport wc, on the loop whose
// HTTP/1.1 state is l. cs must not be copied afterwards.
func (cs *Conn) Open(wc *wire.Conn, l *Loop) {
	cs.Conn, cs.loop = wc, l
	cs.ctx.Req = &cs.req
	cs.ctx.Remote = cs.Remote
	cs.ctx.Exchange = cs // for handlers that answer later (exchange.go)
	cs.sink.cs = cs
	cs.ctx.Sink = &cs.sink // handlers.ResponseSink, likewise
	cs.src.cs = cs
	cs.ctx.Body = &cs.src // handlers.BodySource
	cs.ctx.Cache = cs     // handlers.CacheAccess, for static routes
	cs.req.ContentLength = -1
}

// SetListener tells the engine about the listener that accepted the
// connection: whether it is TLS, the handler of its redirect_to_https
// requests (nil for none), and whether it speaks HTTP/1.1 at all.
func (cs *Conn) SetListener(tls bool, redirect handlers.Handler, h1 bool) {
	cs.ctx.TLS = tls
	cs.redirect = redirect
	cs.noH1 = !h1
}

// WaitHead notes that the connection's first bytes began to arrive at
// now, while they do not yet tell its protocol: timeouts.read_header
// bounds the wait, as it bounds a request head.
func (cs *Conn) WaitHead(now int64) {
	if cs.headStart == 0 {
		cs.headStart = now
	}
}

// EndHeadWait ends the wait of WaitHead once the protocol is chosen.
func (cs *Conn) EndHeadWait() { cs.headStart = 0 }

// CloseAfterAlert closes the connection once its output (a TLS alert)
// drained, without lingering.
func (cs *Conn) CloseAfterAlert() {
	cs.closing, cs.closeAfter, cs.linger = true, true, false
}

// Release implements wire.Engine: it drops what the connection holds once
// gnet has closed it.
func (cs *Conn) Release() {
	if cs.xfer != nil && !cs.xfer.started {
		cs.xfer.abandon()
	}
	cs.pendingClosed()
	cs.sink.release()
	cs.ctx.Resp.Reset()
}

// Drain implements wire.Engine for a graceful stop: a connection between
// requests with nothing to send reports that it can close now, as does
// one whose last response drained; any other closes after its current
// response.
func (cs *Conn) Drain() bool {
	if cs.idleNow() || (cs.closing && cs.OutboundBuffered() == 0) {
		return true
	}
	cs.closeAfter = true
	return false
}

// idleNow reports whether the connection is between requests with
// nothing to send.
func (cs *Conn) idleNow() bool {
	return cs.headStart == 0 && !cs.inBody && cs.xfer == nil && !cs.closing && cs.pending == nil &&
		cs.OutboundBuffered() == 0 && cs.InboundBuffered() == 0
}

// Traffic implements wire.Engine: it moves a pending exchange or a
// transfer along, or parses and answers what arrived.
func (cs *Conn) Traffic() gnet.Action {
	cs.woke = false
	if cs.pending != nil {
		return cs.resumePending()
	}
	if x := cs.xfer; x != nil {
		if !x.finished() {
			if cs.InboundBuffered() > cs.transferInputBound() {
				return gnet.Close
			}
			return gnet.None
		}
		cs.xfer = nil
		now := time.Now().UnixNano()
		if x.err != nil || cs.closeAfter {
			if x.err == nil && x.onLoop {
				return cs.finish(now) // the body's end may wait in gnet's buffer
			}
			return gnet.Close
		}
		cs.LastActive = now
	}
	if cs.closing {
		cs.Consume(-1)
		return gnet.None
	}
	if cs.paused {
		if cs.InboundBuffered() > wire.MaxPendingInput {
			return gnet.Close
		}
		return gnet.None
	}
	if cs.Layered() {
		return cs.afterLayer(cs.serve())
	}
	return cs.serve()
}

// transferInputBound is how many received bytes may wait while a
// transfer is under way (the loop reads nothing then): the request's body
// when it is still arriving (a large file asked for with a body, which is
// discarded once the transfer ended), bounded as for a pending exchange,
// else wire.MaxPendingInput of pipelined requests.
func (cs *Conn) transferInputBound() int {
	if cs.inBody {
		return pendingInputBound(cs.loop.Shared.Set.Load())
	}
	return wire.MaxPendingInput
}

// serve parses and answers the requests buffered on the connection, up to
// batch of them, and writes all their responses with one call.
func (cs *Conn) serve() gnet.Action {
	l := cs.loop
	set := l.Shared.Set.Load()
	buf := cs.Inbound()
	if len(buf) == 0 {
		return gnet.None
	}
	now := time.Now().UnixNano()
	l.Out = l.Out[:0]
	l.Bodies = l.Bodies[:0]
	off, served := 0, 0
	for {
		if cs.inBody {
			n, _, done, err := cs.body.Next(buf[off:])
			off += n
			if err != nil {
				// The response went out already; the framing of
				// whatever follows is unknown.
				cs.closeAfter, off = true, len(buf)
				break
			}
			if n > 0 {
				cs.LastActive = now
			}
			if done {
				cs.inBody = false
				continue
			}
			if n == 0 || off == len(buf) {
				break
			}
			continue
		}
		if cs.closeAfter || cs.xfer != nil {
			if cs.closeAfter {
				// Nothing after the last response is parsed.
				if off < len(buf) {
					cs.linger = true
				}
				off = len(buf)
			}
			break
		}
		if off == len(buf) {
			break
		}
		if served == batch || len(l.Out)+cs.OutboundBuffered() > set.MaxOut {
			if served == batch && !cs.woke {
				cs.woke = true
				cs.Wake()
			} else if served < batch {
				cs.paused = true
			}
			break
		}
		n, err := codec.Parse(buf[off:], &cs.req, &set.Limits)
		if err == codec.ErrNeedMore {
			if cs.headStart == 0 {
				cs.headStart = now
			}
			break
		}
		start := cs.headStart
		if start == 0 {
			start = now
		}
		cs.headStart = 0
		if err != nil {
			status := 400
			if ce, ok := err.(*codec.Error); ok {
				status = ce.Status
			}
			l.Stats.ParseErrors.Add(1)
			cs.meter = wire.Meter{Start: start, Method: wire.MethodOther}
			cs.writeError(set, status)
			cs.closeAfter, cs.linger = true, true
			off = len(buf)
			break
		}
		off += n
		served++
		cs.meter.Begin(cs.req.Method, start)
		cs.answer(set, now)
		if cs.pending != nil {
			break // answered later; nothing further is parsed meanwhile
		}
		cs.expectBody(set)
	}
	if off > 0 {
		cs.Consume(off)
		l.Stats.BytesIn.Add(uint64(off))
	}
	if cs.pending != nil {
		cs.src.arm() // the pending request's head is gone: its body is next
	}
	return cs.endBatch(now)
}

// expectBody follows an answered request with its body, which is read and
// discarded so that the next request parses (or, when the connection
// closes after the response, drained while lingering).
func (cs *Conn) expectBody(set *wire.Settings) {
	req := cs.ctx.Req
	if !req.HasBody() {
		return
	}
	if cs.closeAfter {
		cs.linger = true // the body is not read: drain it while closing
		return
	}
	cs.body.Init(req, set.Limits.BodyBytes)
	cs.inBody = true
}

// endBatch hands what serve answered to the client and moves the
// connection on: to the pending exchange, which may take what follows
// its head now that earlier responses are out, to a transfer, or to
// closing after the last response.
func (cs *Conn) endBatch(now int64) gnet.Action {
	cs.flush()
	if cs.Dead {
		return gnet.None
	}
	if cs.pending != nil {
		return cs.resumePending()
	}
	if cs.xfer != nil {
		if !cs.startTransfer() {
			return gnet.None
		}
		// Sent on the loop: go on as after a transfer's end.
		cs.xfer = nil
		cs.LastActive = now
		if cs.closeAfter {
			return cs.finish(now)
		}
		if cs.InboundBuffered() > 0 && !cs.woke {
			cs.woke = true
			cs.Wake() // pipelined requests wait behind it
		}
		return gnet.None
	}
	if cs.closeAfter {
		return cs.finish(now)
	}
	return gnet.None
}

// finish begins closing after the last response: at once when everything
// is sent and no request bytes may be left unread, else after a drain and
// a linger.
func (cs *Conn) finish(now int64) gnet.Action {
	if ly := cs.Layer(); ly != nil {
		ly.CloseNotify()
	}
	cs.closing = true
	if cs.inBody {
		cs.linger = true
	}
	if cs.OutboundBuffered() > 0 {
		return gnet.None // the sweep continues once the output drained
	}
	if !cs.linger {
		return gnet.Close
	}
	cs.startLinger(now)
	return gnet.None
}

func (cs *Conn) startLinger(now int64) {
	cs.CloseWrite()
	cs.lingerUntil = now + int64(wire.LingerTime)
	cs.Consume(-1)
}

// answer routes the parsed request, runs its handler and renders the
// response into the loop's output, unless the handler answers later.
func (cs *Conn) answer(set *wire.Settings, now int64) {
	req := &cs.req
	ctx := &cs.ctx
	ctx.Req = req
	ctx.Resp.Reset()
	ctx.Scratch = ctx.Scratch[:0]
	ctx.Route, ctx.Path, ctx.Rest = nil, nil, nil
	cs.sink.start(req, set)
	cs.src.start(req, set)

	// A Content-Length over limits.body_bytes never gets here: Parse
	// answers it with 413.
	ctx.Cert = cs.Cert
	ctx.Remote, ctx.Peer = cs.Remote, netip.AddrPort{} // Serve finds the request's client anew (server.trusted_proxies)
	serve.Dispatch(ctx, cs.redirect, set.Router)
	cs.meter.Route = ctx.Route
	if ctx.Resp.Pending != nil {
		cs.pend(ctx.Resp.Pending)
		return
	}
	cs.respond(set, now)
}

// respond renders the exchange's response (Ctx.Resp) into the loop's
// output, or hands a large body to a transfer, and counts and logs it.
func (cs *Conn) respond(set *wire.Settings, now int64) {
	l := cs.loop
	ctx := &cs.ctx
	req := ctx.Req
	resp := &ctx.Resp
	closeConn := !req.KeepAlive || resp.Close || cs.closeAfter || l.Shared.Draining.Load() ||
		(req.Expect100 && req.HasBody())
	own := resp.Headers // a Date among them (a stored response's) is sent instead of the current one
	if resp.Head != nil {
		own = nil
	}
	common := wire.CommonFields(cs.altSvc, set.ServerHeader, own)
	head := codec.ResponseHead{
		Status:        resp.Status,
		Version:       req.Version,
		Headers:       resp.Headers,
		ContentLength: -1,
		Close:         closeConn,
		KeepAlive10:   req.Version == codec.HTTP10 && !closeConn,
		Server:        common.Server,
		OwnDate:       common.Date == nil,
	}
	isHead := req.IsHead()
	bodyless := codec.NoBody(false, resp.Status)
	body := resp.Body
	size := resp.BodySize()
	if !bodyless {
		head.ContentLength = size
	}
	mark := len(l.Out)
	if resp.Head != nil {
		l.Out = handlers.AppendHead(l.Out, resp.Head, head.Close, head.KeepAlive10)
	} else {
		l.Out = codec.AppendResponseHead(l.Out, &head)
	}
	l.Out = insertAltSvc(l.Out, &common)
	sent := int64(0)
	if !isHead && !bodyless && size > 0 {
		switch {
		case size > int64(set.MaxOut):
			// Too large for the loop's buffers: the head and the body
			// go out from a goroutine once earlier output drained.
			held := transferFDs(resp)
			if !l.Shared.Budget.Acquire(held) {
				// No descriptors for the transfer: 503 rather than a
				// body the loop would have to buffer whole.
				size = cs.answerInstead(&head, mark, 503)
				closeConn = true
				break
			}
			x := newTransfer(cs, l.Out[mark:], resp, set.Write, held)
			l.Out = l.Out[:mark]
			cs.xfer = x
			resp.File = nil // the transfer owns it now
		case resp.File != nil || resp.Parts != nil:
			if err := cs.appendFileBody(resp, size); err != nil {
				// The file changed or failed under us: answer 500
				// rather than a body that does not match its head.
				size = cs.answerInstead(&head, mark, 500)
				closeConn = true
			}
		case len(body) <= inlineBody:
			l.Out = append(l.Out, body...)
		default:
			l.Bodies = append(l.Bodies, cs.blobSegment(resp, body))
		}
		sent = size
	}
	if resp.File != nil {
		_ = resp.File.Close()
		resp.File = nil
	}
	if closeConn {
		cs.closeAfter = true
	}
	cs.LastActive = now
	var rec accesslog.Record
	if l.Shared.Access != nil {
		rec.FromRequest(req, cs.ctx.Cert) // parsed during this event, or kept: its bytes are valid
	}
	cs.meter.InBytes = max(req.ContentLength, 0)
	cs.RecordFor(cs.ctx.Remote.Addr(), &rec, &cs.meter, head.Status, sent)
	cs.forgetLoad()
}

// writeError renders a fixed error response that echoes nothing of the
// request and closes the connection. Its log line names no request: the
// head could not be parsed (or has not ended), and cs.req holds nothing
// of it.
func (cs *Conn) writeError(set *wire.Settings, status int) {
	l := cs.loop
	l.Out = codec.AppendErrorResponse(l.Out, status, false, true, set.ServerHeader)
	var rec accesslog.Record
	cs.Record(&rec, &cs.meter, status, 0)
}

// flush hands the loop's output to the connection: one write, or one
// writev when large bodies are referenced in place (with a sendfile for
// each body sent from a Blob).
func (cs *Conn) flush() {
	l := cs.loop
	if len(l.Out) == 0 && len(l.Bodies) == 0 {
		return
	}
	total := len(l.Out)
	if len(l.Bodies) == 0 {
		cs.Send(l.Out)
	} else {
		total = cs.flushBodies()
	}
	l.Stats.BytesOut.Add(uint64(total))
	l.Out = l.Out[:0]
	l.Bodies = l.Bodies[:0]
}

// answerInstead replaces the response whose head was rendered at mark of
// the loop's output with the fixed error response for status, closing
// the connection after it, and returns the new body's size. The
// response's File, if any, is closed.
func (cs *Conn) answerInstead(head *codec.ResponseHead, mark, status int) int64 {
	l := cs.loop
	ctx := &cs.ctx
	l.Out = l.Out[:mark]
	ctx.Error(status)
	head.Status, head.Headers, head.ContentLength, head.Close = status, ctx.Resp.Headers, int64(len(ctx.Resp.Body)), true
	l.Out = codec.AppendResponseHead(l.Out, head)
	l.Out = append(l.Out, ctx.Resp.Body...)
	return head.ContentLength
}

// Check implements wire.Engine: it runs on the loop from the sweep,
// enforces the timeouts, moves closing and paused connections along, and
// reports whether the connection must be closed now.
func (cs *Conn) Check(now int64, set *wire.Settings) bool {
	if cs.Dead {
		return false
	}
	if cs.xfer != nil && cs.xfer.started {
		return false // the transfer goroutine enforces the write timeout
	}
	if cs.WriteStalled(now, set.Write) {
		cs.loop.Stats.TimedOut.Add(1)
		return true
	}
	if cs.OutboundBuffered() > 0 {
		return false
	}
	if cs.pending != nil {
		// The proxy enforces its own deadlines; a file load gets the
		// idle timeout.
		if cs.loadOverdue(now, set.Idle) {
			cs.loop.Stats.TimedOut.Add(1)
			return true
		}
		return false
	}
	switch {
	case cs.xfer != nil:
		if cs.startTransfer() {
			cs.Wake() // Traffic goes on from the transfer's end
		}
		return false
	case cs.closing:
		if !cs.linger {
			return true
		}
		if cs.lingerUntil == 0 {
			cs.startLinger(now)
			return false
		}
		return now > cs.lingerUntil
	case cs.paused:
		cs.paused = false
		if !cs.woke {
			cs.woke = true
			cs.Wake()
		}
		return false
	case cs.inBody:
		if now-cs.LastActive > set.ReadBody {
			cs.loop.Stats.TimedOut.Add(1)
			return true
		}
	case cs.headStart != 0:
		if now-cs.headStart > set.ReadHeader {
			cs.loop.Stats.TimedOut.Add(1)
			if cs.noH1 {
				cs.loop.Stats.NoPreface.Add(1)
				return true // part of a preface, on a listener that answers nothing over HTTP/1.1
			}
			l := cs.loop
			l.Out = l.Out[:0]
			cs.meter = wire.Meter{Start: cs.headStart, Method: wire.MethodOther}
			cs.writeError(set, 408)
			cs.flush()
			if cs.Dead {
				return false
			}
			cs.closing, cs.linger, cs.closeAfter = true, false, true
			cs.headStart = 0
			return cs.OutboundBuffered() == 0
		}
	default:
		if now-cs.LastActive > set.Idle {
			cs.loop.Stats.TimedOut.Add(1)
			return true
		}
	}
	return false
}

// afterLayer runs after the request path on an open TLS connection:
// when the client sent close_notify (or the session failed), the
// connection closes once the responses to what came before are out.
func (cs *Conn) afterLayer(a gnet.Action) gnet.Action {
	ly := cs.Layer()
	eof, fatal := ly.Ended()
	if a != gnet.None || cs.Dead || !eof {
		return a
	}
	if fatal {
		if cs.OutboundBuffered() == 0 {
			return gnet.Close
		}
		cs.closing, cs.closeAfter, cs.linger = true, true, false
		return gnet.None
	}
	if cs.closing {
		return a
	}
	cs.closeAfter = true
	if cs.xfer != nil || cs.paused || ly.Unconsumed() > 0 || cs.pending != nil {
		return a // the pending work finishes first, then closes
	}
	return cs.finish(time.Now().UnixNano())
}
