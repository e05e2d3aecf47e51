package proxy

import (
	"io"
	"net/http"
	"sync"
)

// bodyPipe carries a request body from the loop to the goroutine that
// sends it to an h2c upstream: the loop writes what the client's body
// source has (never blocking: at most bodyPipeSize wait), the upstream
// stream's writer reads it. Space freed by a read wakes the loop, which
// consumes more of the client's body then, so the client's windows hold
// it back while the upstream is slow.
type bodyPipe struct {
	mu     sync.Mutex
	ready  sync.Cond
	buf    []byte
	closed bool  // the body ended: reads return io.EOF once buf drained
	err    error // the exchange ended: reads fail with it
	wake   func()

	// The request's trailer fields, given with the end of the body and
	// put in trailer (the upstream request's Trailer) by the read that
	// returns io.EOF: the transport reads that map after the body
	// ended, on the goroutine that reads the body, so only its own
	// goroutines touch it.
	trailer http.Header
	pending [][2]string
}

// bodyPipeSize bounds what waits in a bodyPipe.
const bodyPipeSize = 64 << 10

func newBodyPipe(wake func()) *bodyPipe {
	p := &bodyPipe{wake: wake}
	p.ready.L = &p.mu
	return p
}

// write appends b (at most the pipe's free space) and returns how many it took.
func (p *bodyPipe) write(b []byte) int {
	p.mu.Lock()
	n := min(len(b), bodyPipeSize-len(p.buf))
	p.buf = append(p.buf, b[:n]...)
	p.mu.Unlock()
	p.ready.Signal()
	return n
}

// close marks the end of the body, after which the reader puts
// trailers in the request's Trailer.
func (p *bodyPipe) close(trailers [][2]string) {
	p.mu.Lock()
	p.closed = true
	p.pending = trailers
	p.mu.Unlock()
	p.ready.Signal()
}

// fail ends the pipe with err: the reader stops at once.
func (p *bodyPipe) fail(err error) {
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
	p.ready.Signal()
}

// Read implements io.Reader for the upstream stream's writer.
func (p *bodyPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	for len(p.buf) == 0 && !p.closed && p.err == nil {
		p.ready.Wait()
	}
	if p.err != nil {
		p.mu.Unlock()
		return 0, p.err
	}
	if len(p.buf) == 0 {
		for _, kv := range p.pending {
			p.trailer.Add(kv[0], kv[1])
		}
		p.pending = nil
		p.mu.Unlock()
		return 0, io.EOF
	}
	full := len(p.buf) == bodyPipeSize
	n := copy(b, p.buf)
	p.buf = p.buf[:copy(p.buf, p.buf[n:])]
	p.mu.Unlock()
	if full {
		p.wake() // the loop stopped feeding it: there is room again
	}
	return n, nil
}

// Close implements io.Closer: the transport is done with the body.
func (p *bodyPipe) Close() error {
	p.fail(io.ErrClosedPipe)
	return nil
}
