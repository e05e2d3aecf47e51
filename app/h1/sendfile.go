package h1

import (
	"golang.org/x/sys/unix"

	"gale/app/wire"
	"gale/cache"
	"gale/handlers"
)

// Bodies of cached files from cache.BlobMin bytes up go to the socket
// with sendfile(2) from the representation's sealed memfd (cache.Blob):
// the kernel takes references to its pages instead of copying the body,
// and since the memfd can never change, the client gets the bytes the
// ETag names even if the file is rewritten meanwhile. The head goes
// first with MSG_MORE, so that head and body leave in the same segments
// although they take two system calls. Smaller bodies stay one writev
// from memory, which costs less than the second call. Only plain
// connections: on TLS the body is encrypted in user space anyway.

// blobSegment returns the segment that places body (resp's) at the loop
// output's end: sent from resp.Blob when there is one, the body is at
// least cache.BlobMin long and the connection is plain.
func (cs *Conn) blobSegment(resp *handlers.Response, body []byte) wire.Segment {
	s := wire.Segment{At: len(cs.loop.Out), Body: body}
	if b := resp.Blob; b != nil && !cs.Layered() && len(body) >= cache.BlobMin &&
		resp.BlobOff >= 0 && resp.BlobOff+int64(len(body)) <= b.Size() {
		s.Blob, s.Off = b, resp.BlobOff
	}
	return s
}

// flushBodies is flush for output that references bodies in place: one
// writev of the output and the bodies, except that what precedes a body
// to send from a Blob is written first, then that body with sendfile. It
// reports the bytes handed over.
func (cs *Conn) flushBodies() int {
	l := cs.loop
	total := len(l.Out)
	l.Iov = l.Iov[:0]
	prev := 0
	for i := range l.Bodies {
		s := &l.Bodies[i]
		if s.At > prev {
			l.Iov = append(l.Iov, l.Out[prev:s.At])
		}
		prev = s.At
		total += len(s.Body)
		if s.Blob == nil {
			l.Iov = append(l.Iov, s.Body)
		} else {
			cs.sendBefore(l.Iov)
			clear(l.Iov)
			l.Iov = l.Iov[:0]
			cs.sendBlob(s.Blob, s.Off, s.Body)
		}
		s.Body, s.Blob = nil, nil
	}
	if prev < len(l.Out) {
		l.Iov = append(l.Iov, l.Out[prev:])
	}
	if len(l.Iov) > 0 {
		cs.Sendv(l.Iov)
		clear(l.Iov)
	}
	return total
}

// sendBefore writes what precedes a body sent from a Blob: one piece (the
// usual case: the response's head) straight to the socket with MSG_MORE,
// or several through gnet.
func (cs *Conn) sendBefore(iov [][]byte) {
	switch {
	case len(iov) == 0:
	case len(iov) > 1 || cs.Dead || cs.OutboundBuffered() > 0:
		cs.Sendv(iov)
	default:
		b := iov[0]
		n := sendMore(cs.C.Fd(), b)
		cs.SentPast(n)
		if n < len(b) {
			cs.WriteRaw(b[n:]) // gnet keeps the rest, or fails and closes
		}
	}
}

// sendBlob writes body, which is b's bytes from off: with sendfile when
// nothing waits in gnet's buffer, as far as the socket takes it, and
// through gnet (copied, at most server.max_buffered_output) for the rest.
func (cs *Conn) sendBlob(b *cache.Blob, off int64, body []byte) {
	if cs.Dead {
		return
	}
	n := 0
	if cs.OutboundBuffered() == 0 {
		n = sendBlobNow(cs.C.Fd(), b, off, len(body))
		cs.SentPast(n)
	}
	if n < len(body) {
		cs.WriteRaw(body[n:])
	}
}

// headFlags send a head that a body follows: held back until the body's
// first bytes join it (MSG_MORE), and failing with EPIPE rather than a
// signal when the client is gone (MSG_NOSIGNAL).
const headFlags = unix.MSG_MORE | unix.MSG_NOSIGNAL

// sendMore sends b to the non-blocking socket fd with MSG_MORE and
// returns how much it took (0 when it took nothing or failed: whoever
// writes the rest meets the error again).
func sendMore(fd int, b []byte) int {
	return sendAll(len(b), func(sent int) (int, error) {
		return unix.SendmsgN(fd, b[sent:], nil, nil, headFlags)
	})
}

// sendBlobNow sends up to n bytes of b from off to the non-blocking
// socket fd with sendfile and returns how much it took.
func sendBlobNow(fd int, b *cache.Blob, off int64, n int) int {
	return sendAll(n, func(sent int) (int, error) {
		return b.SendTo(fd, &off, n-sent)
	})
}

// sendAll calls send, given how much went so far, until n bytes went,
// again when a signal interrupted it; it stops at the first call that
// fails or takes nothing (whoever writes the rest meets the error
// again), and returns how much went.
func sendAll(n int, send func(sent int) (int, error)) int {
	sent := 0
	for sent < n {
		m, err := send(sent)
		if err == unix.EINTR {
			continue
		}
		if err != nil || m <= 0 {
			break
		}
		sent += m
	}
	return sent
}
