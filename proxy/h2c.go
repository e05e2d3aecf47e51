package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"math/bits"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"gale/codec"
	"gale/handlers"
)

// Upstreams that speak HTTP/2 over cleartext (protocol: h2c), for gRPC
// and other HTTP/2 applications that need trailers. Each upstream has one
// x/net HTTP/2 transport, which multiplexes the requests of every loop
// over a few connections of its own (a new one only past the upstream's
// SETTINGS_MAX_CONCURRENT_STREAMS). A request runs on a goroutine of its
// own: the loop hands it the request (its fields rendered as for an
// HTTP/1.1 upstream, the body through a bodyPipe), and the goroutine hands
// back the response head and then one body buffer at a time, reading the
// next only when the loop asks for it, as a paced body is read
// (paced.go): the client's windows pace the upstream stream. Trailers
// come back with the end of the body. A client that goes away cancels
// the upstream stream (RST_STREAM), which is how a gRPC deadline the
// client enforces reaches the upstream; grpc-timeout is forwarded as it
// is.

// h2cTransport returns the transport of an h2c upstream: cleartext with
// prior knowledge, dialed with the route's connect timeout.
func h2cTransport(network, address string, connect time.Duration) *http2.Transport {
	return &http2.Transport{
		AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, _, _ string, _ *tls.Config) (net.Conn, error) {
			d := net.Dialer{Timeout: connect}
			return d.DialContext(ctx, network, address)
		},
		ReadIdleTimeout: 30 * time.Second, // PING a connection that went quiet
		PingTimeout:     10 * time.Second,
	}
}

// h2cStream is one request to an h2c upstream. Between ready turning
// true and the loop asking for more, resp, buf, n and err are the
// loop's; otherwise the goroutine's.
type h2cStream struct {
	cancel   context.CancelFunc
	pipe     *bodyPipe // the request body; nil without one
	timedOut atomic.Bool

	resp   *http.Response
	buf    [pacedBuf]byte
	n      int
	err    error // RoundTrip's, then the body read's (io.EOF at its end)
	headUp bool  // the loop relayed the head

	ready   atomic.Bool
	more    chan struct{}
	quit    chan struct{}
	stopped bool

	// wakeTo is the client's exchange, woken as the goroutine hands
	// something over, until the loop stops the stream: the exchange may
	// be recycled once it ended, and no wake may reach it then.
	wakeMu sync.Mutex
	wakeTo handlers.Exchange
}

// beginH2C starts the exchange's request to an h2c upstream; c is the
// request being served, whose head setup rendered. It returns 0, or the
// status to answer at once.
func (ex *exchange) beginH2C(c *handlers.Ctx) int {
	up := ex.h.pick(ex.lp, ex.upset, ex.clientIP, ex.hkey, ex.tried, ex.now)
	if up == nil {
		return 502
	}
	ex.use(up)
	req, err := ex.h2cRequest(c)
	if err != nil {
		return 502
	}
	ctx, cancel := context.WithCancel(context.Background())
	hx := &h2cStream{cancel: cancel, more: make(chan struct{}, 1), quit: make(chan struct{}), wakeTo: ex.cl}
	if !ex.reqDone {
		hx.pipe = newBodyPipe(ex.cl.Wake)
		req.Body = hx.pipe
		if _, ok := ex.body.(handlers.TrailerSource); ok {
			req.Trailer = declaredTrailers(c.Req) // values filled as the body ends (bodyPipe)
			hx.pipe.trailer = req.Trailer
		}
	}
	ex.hx = hx
	ex.state = exH2C
	ex.deadline, ex.dkind = 0, dlNone
	go hx.run(up.h2t, req.WithContext(ctx), time.Duration(ex.h.headerTimeout))
	if hx.pipe != nil {
		if c.Req.Expect100 {
			// The upstream's own 100 Continue ends in the transport, which
			// hands no 1xx to RoundTrip's caller: answer it here, as the
			// request is on its way (RFC 9110 section 10.1.1), or the
			// client waits for it while the upstream waits for the body.
			ex.sink.WriteInterim(100, nil)
			ex.sink.Flush()
		}
		ex.h2cPump()
	}
	return 0
}

// h2cRequest builds the upstream request from the head setup rendered for
// an HTTP/1.1 upstream, so that both kinds forward the same fields: the
// hop-by-hop ones dropped, X-Forwarded-* and Via added, the route's
// request rules applied. The framing fields are the transport's to send;
// te: trailers, which HTTP/2 allows, goes as the client sent it.
func (ex *exchange) h2cRequest(c *handlers.Ctx) (*http.Request, error) {
	line, rest, _ := bytes.Cut(ex.head, []byte("\r\n"))
	parts := strings.SplitN(string(line), " ", 3)
	if len(parts) != 3 {
		return nil, errors.New("proxy: bad request line")
	}
	u, err := url.ParseRequestURI(parts[1])
	if err != nil {
		return nil, err
	}
	u.Scheme, u.Host = "http", ex.up.address
	if ex.up.tls != nil {
		u.Scheme = "https"
	}
	if ex.up.network == "unix" {
		u.Host = "localhost"
	}
	req := &http.Request{Method: parts[0], URL: u, Header: http.Header{}, Proto: "HTTP/2.0", ProtoMajor: 2,
		ContentLength: c.Req.ContentLength, Body: http.NoBody}
	if c.Req.ContentLength < 0 {
		req.ContentLength = -1
	}
	for _, l := range strings.Split(string(rest), "\r\n") {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch strings.ToLower(name) {
		case "content-length", "transfer-encoding":
			continue
		case "host":
			req.Host = value // a header rule set it
			continue
		}
		req.Header.Add(name, value)
	}
	if req.Host == "" {
		req.Host = string(ex.up.host)
		if len(ex.host) > 0 {
			req.Host = string(ex.host)
		}
	}
	for _, f := range c.Req.Headers {
		if codec.EqualFold(f.Name, "te") && codec.EqualFold(f.Value, "trailers") {
			req.Header.Set("Te", "trailers")
		}
	}
	return req, nil
}

// run sends req on tr and hands the loop the head, then each body buffer
// when it asks. It runs on its own goroutine.
func (hx *h2cStream) run(tr roundTripper, req *http.Request, timeout time.Duration) {
	timer := time.AfterFunc(timeout, func() {
		hx.timedOut.Store(true)
		hx.cancel()
	})
	resp, err := tr.RoundTrip(req)
	timer.Stop()
	hx.resp = resp
	if !hx.handOver(err) {
		return
	}
	defer resp.Body.Close()
	for {
		select {
		case <-hx.more:
		case <-hx.quit:
			return
		}
		timer.Reset(timeout) // the longest pause between two reads of the body
		n, err := resp.Body.Read(hx.buf[:])
		timer.Stop()
		hx.n = n
		if !hx.handOver(err) {
			return
		}
	}
}

// handOver hands the loop what the goroutine got (set before it) and err,
// and wakes the loop's exchange; it reports whether the goroutine goes on
// (err is nil).
func (hx *h2cStream) handOver(err error) bool {
	hx.err = err
	hx.ready.Store(true)
	hx.wakeMu.Lock()
	if w := hx.wakeTo; w != nil {
		w.Wake()
	}
	hx.wakeMu.Unlock()
	return err == nil
}

// stop ends the goroutine and the upstream stream (on the loop;
// idempotent): a stream not finished is reset.
func (hx *h2cStream) stop() {
	if !hx.stopped {
		hx.stopped = true
		hx.wakeMu.Lock()
		hx.wakeTo = nil // from here on the exchange may be recycled
		hx.wakeMu.Unlock()
		close(hx.quit)
		hx.cancel()
		if hx.pipe != nil {
			hx.pipe.fail(context.Canceled)
		}
	}
}

// h2cResume runs on the loop when the client's engine resumes the
// exchange: more of the request body goes into the pipe, and what the
// goroutine handed back is relayed.
func (ex *exchange) h2cResume(c *handlers.Ctx) {
	if ex.hx.pipe != nil && !ex.reqDone {
		ex.h2cPump()
		if ex.settle() {
			return
		}
	}
	hx := ex.hx
	if !hx.ready.Load() {
		return
	}
	ex.now = nanotime()
	if !hx.headUp {
		ex.h2cHead(c)
		return
	}
	if hx.n > 0 && ex.sink.Room() == 0 {
		return // the client's windows are shut: the next resume relays
	}
	ex.h2cBody()
}

// h2cPump moves what the client's body source has into the pipe, as far
// as the pipe has room.
func (ex *exchange) h2cPump() {
	pipe := ex.hx.pipe
	for !ex.reqDone {
		p, done, err := ex.body.Next()
		if err != nil {
			ex.Fault, ex.Why = 400, "request body: "+err.Error()
			return
		}
		n := pipe.write(p)
		ex.body.Consume(n)
		if n < len(p) {
			return // full: a read of the pipe wakes the loop
		}
		if done {
			ex.reqDone = true
			pipe.close(ex.h2cTrailers())
		}
		if len(p) == 0 {
			return
		}
	}
}

// declaredTrailers returns the trailer fields a request announced in its
// Trailer field, without values, for the transport to announce in turn
// (an HTTP/2 server may keep only announced ones).
func declaredTrailers(req *codec.Request) http.Header {
	t := http.Header{}
	for _, f := range req.Headers {
		if !codec.EqualFold(f.Name, "trailer") {
			continue
		}
		for _, name := range strings.Split(string(f.Value), ",") {
			if name = strings.TrimSpace(name); name != "" && relayableTrailer([]byte(name)) {
				t[http.CanonicalHeaderKey(name)] = nil
			}
		}
	}
	return t
}

// h2cTrailers returns the request's trailer fields for the upstream
// request, copied out of the client engine's memory.
func (ex *exchange) h2cTrailers() [][2]string {
	ts, ok := ex.body.(handlers.TrailerSource)
	if !ok {
		return nil
	}
	var kv [][2]string
	for _, f := range ts.Trailers() {
		if relayableTrailer(f.Name) {
			kv = append(kv, [2]string{string(f.Name), string(f.Value)})
		}
	}
	return kv
}

// h2cHead relays the upstream's response head, or answers the failure
// that came instead.
func (ex *exchange) h2cHead(c *handlers.Ctx) {
	hx := ex.hx
	hx.headUp = true
	if hx.err != nil {
		hx.stop()
		ex.state = exActive
		if ex.h2cRetry(c, hx) || ex.h2cCancelled(hx.err) {
			return
		}
		if hx.timedOut.Load() {
			ex.lp.Stats.Timeouts.Add(1)
			ex.fail(FailTimeout)
			ex.up.failed(ex.now, "response header timeout")
			ex.finishError(504, "response header timeout")
			return
		}
		ex.fail(FailConnect)
		ex.up.failed(ex.now, ex.h.h2Name()+": "+hx.err.Error())
		ex.finishError(502, ex.h.h2Name()+": "+hx.err.Error())
		return
	}
	resp := hx.resp
	ex.status = resp.StatusCode
	hs := ex.lp.hdrs[:0]
	hs = appendHTTPFields(hs, resp.Header, false)
	ex.h.route.ApplyResponseHeaders(ex.respFor(hs))
	hs = ex.lp.resp.Headers
	ex.Busy = true
	ex.sink.WriteHead(handlers.Head{Status: resp.StatusCode, Fields: hs, Length: resp.ContentLength})
	ex.sink.Flush()
	ex.Busy = false
	ex.lp.resp.Headers = nil
	clear(hs)
	ex.lp.hdrs = hs[:0]
	ex.started = true
	ex.rstate = rsBody
	if ex.ClientGone {
		ex.abort()
		return
	}
	ex.h2cNext()
}

// h2cCancelled passes on an upstream's RST_STREAM(CANCEL), which a gRPC
// server sends when a call's deadline expired or it gave the call up, as
// a cancelled stream to a client that can be told (HTTP/2; a gRPC client
// past its deadline reports DEADLINE_EXCEEDED then, rather than the
// failure a 502 would be). It reports whether it ended the exchange so.
func (ex *exchange) h2cCancelled(err error) bool {
	var se http2.StreamError
	if !errors.As(err, &se) || se.Code != http2.ErrCodeCancel {
		return false
	}
	if _, ok := ex.sink.(handlers.Canceler); !ok {
		return false
	}
	ex.cancelled = true
	ex.finishTruncated(ex.h.h2Name() + ": the upstream cancelled the stream")
	return true
}

// h2cRetry tries the next upstream for a safe request whose connection
// could not be made (it reached no upstream), as for HTTP/1.1 upstreams.
// It reports whether a new attempt is under way.
func (ex *exchange) h2cRetry(c *handlers.Ctx, hx *h2cStream) bool {
	var op *net.OpError
	if !ex.safe || ex.attempts > ex.h.retries || hx.timedOut.Load() || !errors.As(hx.err, &op) || op.Op != "dial" {
		return false
	}
	ex.fail(FailConnect)
	ex.up.failed(ex.now, ex.h.h2Name()+": "+hx.err.Error())
	ex.retrying()
	if bits.OnesCount64(ex.tried) >= len(ex.upset.ups) {
		ex.tried = 0 // every upstream was tried: start over
	}
	ex.hx = nil
	return ex.beginH2C(c) == 0
}

// respFor puts hs in the loop's scratch response for the route's
// response rules.
func (ex *exchange) respFor(hs []codec.Header) *handlers.Response {
	r := &ex.lp.resp
	r.Reset()
	r.Headers = hs
	return r
}

// h2cBody relays a body buffer, and ends the response with the body.
func (ex *exchange) h2cBody() {
	hx := ex.hx
	ex.Busy = true
	if hx.n > 0 {
		ex.sink.WriteBody(hx.buf[:hx.n]) // the client's engine counts it
		ex.sink.Flush()
	}
	ex.Busy = false
	if ex.ClientGone {
		ex.abort()
		return
	}
	switch {
	case hx.err == io.EOF:
		ex.trailers = appendHTTPFields(ex.trailers[:0], hx.resp.Trailer, true)
		hx.stop()
		ex.state = exActive
		ex.rstate = rsDone
		ex.finish()
	case hx.err != nil:
		hx.stop()
		ex.state = exActive
		if ex.h2cCancelled(hx.err) {
			return
		}
		if hx.timedOut.Load() {
			ex.lp.Stats.Timeouts.Add(1)
			ex.fail(FailTimeout)
			ex.up.logFailure(ex.now, "response body read timeout")
			ex.finishTruncated("response body read timeout")
			return
		}
		ex.up.failed(ex.now, ex.h.h2Name()+": stream lost mid-body: "+hx.err.Error())
		ex.fail(FailReset)
		ex.finishTruncated("h2c: stream lost mid-body: " + hx.err.Error())
	default:
		ex.h2cNext()
	}
}

// h2cNext asks the goroutine for the next body buffer.
func (ex *exchange) h2cNext() {
	hx := ex.hx
	hx.n = 0
	hx.ready.Store(false)
	hx.more <- struct{}{}
}

// appendHTTPFields appends the fields of h that may go on to hs, their
// bytes in memory of their own: of a head (trailers false) the
// end-to-end ones, of a trailer section the relayable ones.
func appendHTTPFields(hs []codec.Header, h http.Header, trailers bool) []codec.Header {
	n := 0
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v)
		}
	}
	b := make([]byte, 0, n)
	for k, vs := range h {
		if !httpFieldKept(k, trailers) || !trailers && namedInConnection(h, k) {
			continue
		}
		for _, v := range vs {
			at := len(b)
			b = append(b, k...)
			b = append(b, v...)
			hs = append(hs, codec.Header{Name: b[at : at+len(k) : at+len(k)], Value: b[at+len(k) : len(b) : len(b)]})
		}
	}
	return hs
}

// httpFieldKept reports whether the field k of an upstream's head
// (trailer false) or trailer section goes on to the client.
func httpFieldKept(k string, trailer bool) bool {
	name := []byte(k)
	if trailer {
		return relayableTrailer(name)
	}
	return !codec.ConnectionSpecific(name) && !framingField(name) && !codec.EqualFold(name, "trailer")
}

// h2Name names the route's HTTP/2 upstream protocol in messages: h2c, or
// h2 over TLS.
func (h *Handler) h2Name() string { return h.conf.Protocol }

// namedInConnection reports whether the Connection field of an HTTP/1.1
// response head h (protocol: auto) names field k: hop-by-hop, not
// relayed. HTTP/2 heads have no Connection field.
func namedInConnection(h http.Header, k string) bool {
	for _, v := range h["Connection"] {
		for tok := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), k) {
				return true
			}
		}
	}
	return false
}
