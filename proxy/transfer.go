package proxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/codec"
	"gale/fds"
	"gale/handlers"
	"gale/upstream"
)

// This file moves bytes off the loop. gnet reads every readable socket
// into memory and cannot pause one, so once a client falls behind a fast
// upstream by more than server.max_buffered_output, the upstream
// connection leaves gnet: its descriptor is duplicated and the gnet
// connection closed (gnet unregisters and closes its own descriptor; the
// duplicate keeps the socket), so nothing reads it and TCP flow control
// slows the upstream down. When the client's gnet output has drained, a
// goroutine copies the rest of the body between duplicates of both
// sockets, through Go's poller, and wakes the client connection when
// done. The loop writes nothing to the client meanwhile. A Content-Length
// body, and a close-delimited one the client also reads to the close,
// move with splice(2); otherwise the copy writes the payload in the
// framing the response sink chose for the client (chunks of gale's own,
// or the payload alone for a close-delimited copy of a chunked body),
// and the loop's sink ends the body (the last chunk) once the copy is
// done. These copies exist on HTTP/1.1 only: the socket is the client's
// whole connection. Tunnels (after a 101) take both sockets out of gnet
// for good.

// transferStep is how much one copy step moves before the deadlines are
// pushed forward: the timeouts mean "no progress for that long".
const transferStep = 1 << 20

// copyBufPool holds the buffers of chunked copies and tunnels. It stores
// pointers to fixed-size arrays so Get and Put do not allocate.
var copyBufPool = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// transfer is one off-loop copy: the rest of a response body, or a
// tunnel. Fields are set on the loop before the goroutine starts and
// read-only afterwards, except err, clean and sent, which the goroutine
// writes before it sets done, and the loop reads after it saw done.
type transfer struct {
	tunnel bool
	up, cl net.Conn          // duplicates of the two sockets
	wake   handlers.Exchange // woken (Wake) when a body copy ends

	kind      codec.BodyKind
	body      codec.BodyReader // chunked framing state
	remaining int64            // Content-Length bytes left
	chunks    bool             // the client's copy is chunked: the payload is framed again

	upPrefix, clPrefix []byte      // tunnel: bytes read by gnet before the tunnel began
	budget             *fds.Budget // tunnel: the budget whose client place it holds

	write, read time.Duration // no-progress limits (tunnel: read is the idle time)

	started bool
	done    atomic.Bool
	aborted atomic.Bool
	err     error
	clean   bool  // the body ended exactly where its framing says
	sent    int64 // bytes written to the client
	payload int64 // body payload bytes among them
}

func (x *transfer) finished() bool { return x.done.Load() }

// running reports whether a goroutine may still use x.
func (x *transfer) running() bool { return x.started && !x.done.Load() }

// abort stops the copy (the client went away): closing the sockets makes
// the goroutine's reads and writes fail at once. Safe to call on the loop
// at any time; the goroutine releases nothing itself.
func (x *transfer) abort() {
	x.aborted.Store(true)
	if x.up != nil {
		_ = x.up.Close()
	}
	if x.cl != nil {
		_ = x.cl.Close()
	}
}

// leaveLoop runs inside the upstream connection's OnTraffic when the
// client's output is over the limit: the upstream leaves gnet and the
// rest of the body is copied off the loop once that output drained. It
// returns the action for the upstream's OnTraffic.
func (ex *exchange) leaveLoop() gnet.Action {
	uc := ex.uc
	b := ex.h.budget
	if !b.Acquire(2) {
		// No descriptors for the duplicates now: hold on the loop like a
		// response that may not leave it (backpressure.go), and try
		// again once the client has caught up.
		ex.noFds = true
		ex.lp.Stats.Deferred.Add(1)
		ex.debug("cannot leave the loop yet", errBudget.Error())
		return gnet.None
	}
	ex.noFds = false
	d, ok := ex.cl.(handlers.Duplicator)
	if !ok {
		b.Release(1) // the pacer needs one duplicate only
		return ex.startPaced()
	}
	cl, err := d.Dup()
	var up net.Conn
	if err == nil {
		cl = track(b, cl)
		up, err = uc.DupConn()
		if err != nil {
			_ = cl.Close()
			b.Release(1)
		}
	} else {
		b.Release(2)
	}
	if err != nil {
		ex.noHandoff = true
		ex.debug("cannot leave the loop; relaying in it", err.Error())
		return gnet.None
	}
	up = track(b, up)
	x := &transfer{
		up:        up,
		cl:        cl,
		wake:      ex.cl,
		kind:      ex.kind,
		body:      ex.rbody,
		remaining: ex.remaining,
		chunks:    d.Chunked(),
		write:     ex.set.WriteTimeout,
		read:      time.Duration(ex.h.headerTimeout),
	}
	ex.x = x
	return ex.goOffLoop(uc, exHandoffWait, &ex.lp.Stats.Handoffs)
}

// goOffLoop lets the exchange's connection uc go from the loop to the
// goroutine that copies its body off the loop (with a duplicate of its
// socket): the exchange enters state, with the goroutine's timeouts in
// place of its deadline, and count counts it. Its OnTraffic returns the
// result, which closes the loop's descriptor.
func (ex *exchange) goOffLoop(uc *upstream.Conn, state uint8, count *atomic.Uint64) gnet.Action {
	ex.state = state
	ex.deadline, ex.dkind = 0, dlNone
	ex.dropConn(false)
	uc.Drop()
	count.Add(1)
	return gnet.Close
}

// startHandoff starts the copy once the client's output drained (from the
// sweep).
func (ex *exchange) startHandoff() {
	ex.x.started = true
	ex.state = exHandoff
	go ex.x.runBody()
}

// handoffDone runs on the loop (from Input, after the goroutine's Wake)
// when the copy ended: a clean end returns the upstream connection to the
// pool (enrolled into gnet again), and the response completes.
func (ex *exchange) handoffDone() {
	ex.now = nanotime()
	x := ex.x
	ex.x = nil
	ex.state = exActive
	_ = x.cl.Close()
	ex.out += x.sent
	ex.bodyOut += x.payload
	if x.err != nil || !x.clean {
		_ = x.up.Close()
		why := "off-loop copy ended early"
		if x.err != nil {
			why = "off-loop copy: " + x.err.Error()
		}
		ex.finishTruncated(why)
		return
	}
	ex.rstate = rsDone
	if ex.resp.KeepAlive && ex.kind != codec.BodyUntilClose && ex.pool != nil && ex.lp.el != nil && !ex.h.closed.Load() && ex.up.tls == nil {
		if nc, ok := handBack(x.up); ok {
			ex.reenroll(nc)
		}
	} else {
		_ = x.up.Close()
	}
	ex.finish()
}

// reenroll gives a connection whose response ended cleanly off the loop
// back to gnet and to its pool (through OnOpen, like a new connection).
// nc's descriptor is counted in the budget and becomes the connection's.
func (ex *exchange) reenroll(nc net.Conn) {
	ex.lp.Stats.Reenrolls.Add(1)
	ex.pool.Adopt(nc, &ex.lp.Stats.Counters, ex.h.budget)
}

var errShortBody = errors.New("proxy: upstream body ended early")

// runBody copies the rest of a response body from up to cl, then wakes
// the client connection. It runs on its own goroutine.
func (x *transfer) runBody() {
	defer func() {
		x.done.Store(true)
		x.wake.Wake() // a no-op once the client closed
	}()
	switch {
	case x.kind == codec.BodyLength:
		for x.remaining > 0 {
			n := min(x.remaining, transferStep)
			x.deadlines()
			m, err := io.CopyN(x.cl, x.up, n) // splice(2) between the sockets
			x.sent += m
			x.payload += m
			x.remaining -= m
			if err != nil {
				if err == io.EOF {
					err = errShortBody
				}
				x.err = err
				return
			}
		}
		x.clean = true
	case x.kind == codec.BodyUntilClose && !x.chunks:
		for {
			x.deadlines()
			m, err := io.CopyN(x.cl, x.up, transferStep)
			x.sent += m
			x.payload += m
			if err == io.EOF {
				x.clean = true // the close ends the body
				return
			}
			if err != nil {
				x.err = err
				return
			}
		}
	default:
		x.copyFramed()
	}
}

// Room copyFramed keeps in its buffer around the payload for the chunk
// framing: the size line before it, CRLF after it.
const (
	framingBefore = 8
	framingAfter  = 2
)

// copyFramed relays a body through a buffer: a chunked one de-framed to
// find its end, a close-delimited one until the upstream closes; and
// writes the payload to the client framed as chunks when x.chunks is set.
func (x *transfer) copyFramed() {
	bp := copyBufPool.Get().(*[32 << 10]byte)
	defer copyBufPool.Put(bp)
	buf := bp[:]
	for {
		_ = x.up.SetReadDeadline(time.Now().Add(x.read))
		n, err := x.up.Read(buf[framingBefore : len(buf)-framingAfter])
		in := buf[framingBefore : framingBefore+n]
		out, ended := n, false
		if x.kind == codec.BodyChunked {
			var ferr error
			if out, ended, ferr = x.deframe(in); ferr != nil {
				x.err = ferr
				return
			}
		}
		if out > 0 {
			if werr := x.writePiece(buf, out); werr != nil {
				x.err = werr
				return
			}
		}
		if ended {
			return
		}
		if err == io.EOF && x.kind == codec.BodyUntilClose {
			x.clean = true // the close ends the body
			return
		}
		if err != nil {
			if err == io.EOF {
				err = errShortBody
			}
			x.err = err
			return
		}
	}
}

// deframe frames the chunked bytes in through x.body, gathers their
// payload at the front of in, and returns its length and whether the
// body ended (clean when nothing follows it).
func (x *transfer) deframe(in []byte) (out int, ended bool, err error) {
	off := 0
	for off < len(in) {
		m, payload, done, ferr := x.body.Next(in[off:])
		if ferr != nil {
			return out, false, ferr
		}
		off += m
		out += copy(in[out:], payload) // payload sits at or after out
		if done {
			if off < len(in) {
				return out, true, errLeftover
			}
			x.clean = true
			return out, true, nil
		}
		if m == 0 {
			break
		}
	}
	return out, false, nil
}

// writePiece writes the n payload bytes at buf[framingBefore:] to the
// client, as one chunk when x.chunks is set (framed in the room around
// them).
func (x *transfer) writePiece(buf []byte, n int) error {
	start, end := framingBefore, framingBefore+n
	if x.chunks {
		var line [framingBefore]byte
		size := codec.AppendChunkSize(line[:0], n)
		start -= copy(buf[start-len(size):start], size)
		end += copy(buf[end:], codec.ChunkEnd)
	}
	_ = x.cl.SetWriteDeadline(time.Now().Add(x.write))
	w, err := x.cl.Write(buf[start:end])
	x.sent += int64(w)
	if err == nil {
		x.payload += int64(n)
	}
	return err
}

var errLeftover = errors.New("proxy: bytes after the end of a response")

// deadlines pushes both sockets' deadlines forward for one step.
func (x *transfer) deadlines() {
	now := time.Now()
	_ = x.up.SetReadDeadline(now.Add(x.read))
	_ = x.cl.SetWriteDeadline(now.Add(x.write))
}

// startTunnel takes both connections out of gnet after a 101 and tunnels
// bytes between them on goroutines until either side closes. inside says
// the caller is the upstream's OnTraffic (which then closes it through the
// returned action).
func (ex *exchange) startTunnel(inside bool) gnet.Action {
	uc := ex.uc
	x := &transfer{tunnel: true, write: ex.set.WriteTimeout, read: time.Duration(ex.h.idleTimeout)}
	if b := uc.Inbound(); len(b) > 0 {
		x.upPrefix = append([]byte(nil), b...)
	}
	uc.Consume(-1)
	up := ex.cl.(handlers.Upgrader) // ex.upgrade: the client can tunnel (setup)
	if b := up.Inbound(); len(b) > 0 {
		x.clPrefix = append([]byte(nil), b...)
	}
	up.Consume(-1)
	b := ex.h.budget
	err := errBudget
	if b.Acquire(2) {
		err = x.dupBoth(b, uc, ex.cl.(handlers.Duplicator))
	}
	ex.dropConn(false)
	uc.Drop()
	act := gnet.Close
	if !inside {
		act = gnet.None
		if gc := uc.Gnet(); gc != nil && ex.lp.el != nil {
			_ = ex.lp.el.Close(gc)
		}
	}
	if err != nil {
		ex.finishTruncated("tunnel: " + err.Error())
		return act
	}
	x.budget = b
	ex.lp.Stats.Tunnels.Add(1)
	x.started = true
	res := handlers.Result{Status: 101, BytesOut: ex.out, Detach: true, At: ex.now}
	cl := ex.cl
	ex.lp.putExchange(ex)
	// The client connection hands its place in the budget to the tunnel
	// in End; the tunnel gives it back when it ends, so it starts
	// only then.
	cl.End(res)
	go x.runTunnel()
	return act
}

// dupBoth makes the tunnel's duplicates of both sockets, each counted as
// one of the two descriptors the caller acquired from b. On failure it
// closes what it made and gives back the rest.
func (x *transfer) dupBoth(b *fds.Budget, uc *upstream.Conn, cl handlers.Duplicator) error {
	up, err := uc.DupConn()
	if err != nil {
		b.Release(2)
		return err
	}
	x.up = track(b, up)
	c, err := cl.Dup()
	if err != nil {
		_ = x.up.Close()
		b.Release(1)
		return err
	}
	x.cl = track(b, c)
	return nil
}

// runTunnel copies both ways until either side closes, errs, or no byte
// moved either way for the idle time. Then the tunnel leaves the client's
// place in the budget, which it took over from the client connection.
func (x *transfer) runTunnel() {
	defer x.done.Store(true)
	defer x.budget.Leave()
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	pipe := func(dst, src net.Conn, prefix []byte) {
		defer func() {
			_ = dst.Close()
			_ = src.Close()
		}()
		if len(prefix) > 0 {
			_ = dst.SetWriteDeadline(time.Now().Add(x.write))
			if _, err := dst.Write(prefix); err != nil {
				return
			}
		}
		bp := copyBufPool.Get().(*[32 << 10]byte)
		defer copyBufPool.Put(bp)
		for {
			_ = src.SetReadDeadline(time.Now().Add(x.read))
			n, err := src.Read(bp[:])
			if n > 0 {
				last.Store(time.Now().UnixNano())
				_ = dst.SetWriteDeadline(time.Now().Add(x.write))
				if _, werr := dst.Write(bp[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() && !x.aborted.Load() &&
					time.Since(time.Unix(0, last.Load())) < x.read {
					continue // the other direction is busy: not idle
				}
				return
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pipe(x.cl, x.up, x.upPrefix) }()
	go func() { defer wg.Done(); pipe(x.up, x.cl, x.clPrefix) }()
	wg.Wait()
}

// outboundBuffered is how many bytes wait to leave for the client through
// its loop, before a copy over a duplicate of its socket may start; 0 for
// a client that cannot be duplicated (no such copy waits for it).
func (ex *exchange) outboundBuffered() int {
	if d, ok := ex.cl.(handlers.Duplicator); ok {
		return d.OutboundBuffered()
	}
	return 0
}
