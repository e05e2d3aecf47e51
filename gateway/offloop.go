package gateway

import (
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/fastcgi"
)

// Off-loop reading, for a client slower than its script. gnet reads every
// readable socket, so once MaxHeld response bytes wait in a connection's
// inbound buffer the connection leaves gnet: its descriptor is
// duplicated, the gnet connection closed, and the duplicate is read one
// piece (offPiece bytes) at a time by a short goroutine, asked for the
// next piece only when the loop has relayed the last one to a client with
// room. Between pieces nobody reads the socket, so the kernel's receive
// window holds the application back: the response costs at most one
// piece and one record of memory, however slow the client. The
// connection does not return to the pool.

// offPiece is how much one off-loop read takes; a piece holds at least
// one whole record.
const offPiece = 64<<10 + fastcgi.MaxRecord

// offReader is the duplicated connection of an exchange that left gnet.
// buf belongs to the loop except while reading is set, when the
// goroutine fills its spare capacity and hands the count back on res.
type offReader struct {
	nc      net.Conn
	buf     []byte
	reading bool
	err     error // the read that ended the connection (io.EOF for a close)
	res     chan offRead
	wake    gnet.Runnable
	stopped atomic.Bool
	el      gnet.EventLoop
	timeout time.Duration
	release func()
}

type offRead struct {
	n   int
	err error
}

// leaveLoop takes the exchange's connection out of gnet (called from its
// OnTraffic, which closes the gnet connection through the returned
// action). Without a descriptor for the duplicate, the response is cut.
func (ex *exchange) leaveLoop() gnet.Action {
	c := ex.conn
	b := ex.h.budget
	var nc net.Conn
	var err error = errNoFds
	if b.Acquire(1) {
		var fd int
		if fd, err = c.Gnet().Dup(); err == nil {
			f := os.NewFile(uintptr(fd), "fastcgi")
			nc, err = net.FileConn(f)
			_ = f.Close()
		}
		if err != nil {
			b.Release(1)
		}
	}
	ex.dropConn(false)
	c.Drop()
	if err != nil {
		ex.finishTruncated("cannot take the connection off the loop: " + err.Error())
		return gnet.Close
	}
	held, _ := c.Gnet().Peek(-1)
	o := &offReader{
		nc:      nc,
		buf:     append(make([]byte, 0, max(offPiece, len(held)+offPiece)), held...),
		res:     make(chan offRead, 1),
		el:      ex.lp.el,
		timeout: time.Duration(ex.h.headerTimeout),
		release: func() { b.Release(1) },
	}
	_, _ = c.Gnet().Discard(-1)
	o.wake = gnet.RunnableFunc(func(context.Context) error {
		if !o.stopped.Load() {
			ex.offResume()
		}
		return nil
	})
	ex.off = o
	ex.markHeld()
	ex.lp.stats.OffLoop.Add(1)
	return gnet.Close
}

var errNoFds = errors.New("gateway: no descriptor left for the duplicate")

// read asks the goroutine for the next piece.
func (o *offReader) read() {
	o.reading = true
	buf := o.buf
	go func() {
		_ = o.nc.SetReadDeadline(time.Now().Add(o.timeout))
		n, err := o.nc.Read(buf[len(buf):cap(buf)])
		o.res <- offRead{n, err}
		if !o.stopped.Load() {
			_ = o.el.Execute(context.Background(), o.wake)
		}
	}()
}

// stop closes the duplicate once the exchange ended; a read under way
// returns with an error and finds the reader stopped.
func (o *offReader) stop() {
	if o.stopped.Swap(true) {
		return
	}
	_ = o.nc.Close()
	o.release()
}

// offResume relays what the off-loop reader holds while the client has
// room, then asks for the next piece (on the loop: from the reader's
// wake, the client's events and the sweep).
func (ex *exchange) offResume() {
	o := ex.off
	if o.reading {
		select {
		case r := <-o.res:
			o.reading = false
			o.buf = o.buf[:len(o.buf)+r.n]
			if r.err != nil {
				o.err = r.err
			}
		default:
			return
		}
	}
	ex.now = nanotime()
	if ex.started && ex.sink.Room() <= 0 {
		ex.markHeld()
		return
	}
	ex.Busy = true
	n, full := ex.relayAll(o.buf)
	ex.Busy = false
	o.buf = o.buf[:copy(o.buf, o.buf[n:])]
	switch {
	case ex.ClientGone:
		ex.abort()
	case ex.Fault != 0:
		ex.h.servers[ex.srvOr()].failed(ex.now, ex.Why)
		ex.finishError(ex.Fault, ex.Why)
	case ex.ended:
		ex.finish(false)
	case full:
		ex.markHeld()
	case o.err != nil:
		ex.h.servers[ex.srvOr()].failed(ex.now, "connection closed before FCGI_END_REQUEST")
		ex.finishError(502, "connection closed before FCGI_END_REQUEST: "+o.err.Error())
	default:
		ex.held = false
		ex.deadline, ex.dkind = ex.now+ex.h.headerTimeout, dlBody
		o.read()
	}
}
