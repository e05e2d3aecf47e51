package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/codec"
	"gale/config"
	"gale/handlers"
	"gale/upstream"
)

// A route's forward_auth (handlers.AuthGate): each exchange is asked
// about with a GET to the authentication service, through the upstream
// core like a forwarded request (the service's addresses share the
// loops' pools with every route naming them, with passive health and
// balancing of a proxy route), and the answer is read whole on the loop
// (its body bounded by MaxAuthBody) into a verdict the exchange takes.
// An h2c service is asked off the loop instead (forwardauth_h2c.go).
//
// The subrequest carries what nginx's auth_request setups, Caddy's
// forward_auth and Traefik's ForwardAuth send: the original request in
// X-Forwarded-Method, X-Forwarded-Proto, X-Forwarded-Host,
// X-Forwarded-Uri and X-Forwarded-For, and in X-Original-Method and
// X-Original-URL (gale's own, whatever the client sent); and the
// client's other fields as they came (Cookie, Authorization, Accept,
// X-Requested-With, ...), but for the hop-by-hop ones, those framing a
// body, and forwarding fields it is not trusted for (authField). Never a
// body. The whole head is bounded by MaxAuthHead.

// MaxAuthBody bounds the body of an authentication service's answer,
// which is read whole before the client gets it (a login page, a JSON
// error); a longer one is a bad answer (502).
const MaxAuthBody = 64 << 10

// MaxAuthHead bounds the subrequest's fields (the client's and gale's
// forwarded ones); a request whose fields come to more is answered 502,
// and the log says why. The client's head is bounded before by
// server.limits.header_bytes (16 KiB by default).
const MaxAuthHead = 64 << 10

// AuthService is a route's forward_auth: its authentication service's
// upstreams and the subrequest's settings. Safe for concurrent use.
type AuthService struct {
	h       *Handler // the service's upstreams, health and pools, as a proxy route's
	uri     []byte
	trust   bool  // trust_forwarded
	timeout int64 // ns
}

var _ handlers.AuthGate = (*AuthService)(nil)

// NewAuth compiles the forward_auth of route rt (rt.Conf.ForwardAuth
// set). It starts nothing: Start sets the logger.
func NewAuth(rt *handlers.Route, opts Options) (*AuthService, error) {
	fa := rt.Conf.ForwardAuth
	if fa == nil {
		return nil, errors.New("proxy: route has no forward_auth")
	}
	h, err := newHandler(rt, config.AuthProxy(fa), opts)
	if err != nil {
		return nil, err
	}
	return &AuthService{h: h, uri: []byte(fa.URI), trust: fa.TrustForwarded, timeout: int64(fa.Timeout)}, nil
}

// Start sets the logger of the service's failures.
func (a *AuthService) Start(log *slog.Logger) { a.h.Start(log) }

// Close lets the loops' pools of the service drain. It implements
// io.Closer for the router.
func (a *AuthService) Close() error { return a.h.Close() }

// Upstreams returns the service's upstreams.
func (a *AuthService) Upstreams() []*Upstream { return a.h.Upstreams() }

// Ask implements handlers.AuthGate: it renders the subrequest and sends
// it on a pooled connection, or dials one.
func (a *AuthService) Ask(c *handlers.Ctx) handlers.AuthCall {
	lp := LoopOf(c.Exchange)
	if lp == nil {
		return nil
	}
	ac := lp.auths.Get()
	lp.Stats.Auths.Add(1)
	ac.a, ac.cl = a, c.Exchange
	ac.now = nanotime()
	ac.deadline = ac.now + a.timeout
	ac.ip = c.Remote.Addr().Unmap()
	ac.upset = a.h.ups.Load()
	if !ac.render(c) {
		ac.fail(502, nil, fmt.Sprintf("the request's fields come to more than the subrequest's %d bytes", MaxAuthHead))
		return ac
	}
	if a.h.h2c {
		ac.askH2C()
	} else {
		ac.attempt()
	}
	return ac
}

// States of an authCall.
const (
	acAsking   uint8 = iota // waiting for a connection or the answer
	acDecided               // the verdict is in
	acReleased              // the exchange let go before the verdict
)

// authCall is one subrequest to an authentication service and its
// answer. It belongs to the asking exchange's loop, is recycled through
// the Loop, and is the upstream.User of its connection while it uses it.
type authCall struct {
	upstream.Slot

	lp   *Loop
	a    *AuthService
	cl   handlers.Exchange
	up   *Upstream
	pool *upstream.Pool
	uc   *upstream.Conn
	st   *authStream // the subrequest's stream to an h2c service (forwardauth_h2c.go)

	state    uint8
	head     []byte // the subrequest, after the request line: its fields and the empty line
	ip       netip.Addr
	tried    uint64       // bit per index in upset
	upset    *upstreamSet // the service's upstreams when the subrequest began
	attempts int
	now      int64
	deadline int64
	busy     bool // inside a write that may call back (lost records instead)
	quiet    bool // deciding inside Verdict: the exchange is running, no wake
	lostIn   bool // the connection closed during one
	gotBytes bool
	reused   bool // the connection came from the pool

	resp    codec.Response
	rbody   codec.BodyReader
	kind    codec.BodyKind
	inBody  bool
	raw     []byte // the kept fields' bytes
	verdict handlers.AuthVerdict
}

// reset clears ac for reuse, keeping its buffers.
func (ac *authCall) reset() {
	*ac = authCall{
		lp:   ac.lp,
		head: ac.head[:0],
		raw:  ac.raw[:0],
		resp: codec.Response{Headers: ac.resp.Headers[:0], ContentLength: -1},
		verdict: handlers.AuthVerdict{
			Fields: ac.verdict.Fields[:0],
			Body:   ac.verdict.Body[:0],
		},
	}
}

// Verdict implements handlers.AuthCall.
func (ac *authCall) Verdict() (*handlers.AuthVerdict, bool) {
	if ac.state == acAsking && ac.st != nil && ac.st.done.Load() {
		ac.takeStream()
	}
	return &ac.verdict, ac.state == acDecided
}

// Release implements handlers.AuthCall: a call still asking is abandoned
// (its connection closes: the answer would come for no one).
func (ac *authCall) Release() {
	if ac.state == acAsking {
		ac.state = acReleased
		ac.dropConn(true)
		ac.stopStream()
	}
	ac.end()
	ac.reset()
	ac.lp.auths.Keep(ac)
}

// end takes the call off the loop's calls in flight and gives back its
// share of its pool's load.
func (ac *authCall) end() {
	ac.lp.auths.Remove(ac)
	if ac.pool != nil {
		ac.pool.Active--
		ac.pool = nil
	}
}

// render renders the subrequest's fields from c's request: gale's own
// forwarded fields, then the client's (clientFields). It reports false
// when they come to more than MaxAuthHead.
func (ac *authCall) render(c *handlers.Ctx) bool {
	req := c.Req
	b := ac.head[:0]
	proto := "http"
	if c.TLS {
		proto = "https"
	}
	trusted := ac.a.trust && c.FromTrustedProxy()
	fwd := func(name string, own []byte) []byte {
		if trusted {
			if v := req.Header(name); v != nil {
				return v
			}
		}
		return own
	}
	uri := ac.lp.vbuf[:0]
	uri = append(uri, req.Path...)
	if req.Query != nil {
		uri = append(uri, '?')
		uri = append(uri, req.Query...)
	}
	b = codec.AppendFieldLine(b, hdrXFMethod, fwd("X-Forwarded-Method", req.Method))
	b = codec.AppendFieldLine(b, hdrXFP, fwd("X-Forwarded-Proto", []byte(proto)))
	b = codec.AppendFieldLine(b, hdrXFH, fwd("X-Forwarded-Host", req.Host))
	b = codec.AppendFieldLine(b, hdrXFUri, fwd("X-Forwarded-Uri", uri))
	b = append(b, "X-Forwarded-For: "...)
	if v := req.Header("X-Forwarded-For"); trusted && v != nil {
		b = append(b, v...)
		b = append(b, ", "...)
		b = c.Peer.Addr().Unmap().AppendTo(b)
	} else {
		b = ac.ip.AppendTo(b)
	}
	b = append(b, "\r\n"...)
	b = codec.AppendFieldLine(b, hdrXOMethod, req.Method)
	b = append(b, "X-Original-URL: "...)
	b = append(b, proto...)
	b = append(b, "://"...)
	b = append(b, req.Host...)
	b = append(b, uri...)
	b = append(b, "\r\n"...)
	ac.lp.vbuf = uri[:0]
	b = appendCookies(b, req.Headers)
	b = ac.clientFields(b, req.Headers, trusted)
	b = append(b, "\r\n"...) // no body, and no Content-Length (RFC 9110 section 8.6)
	if len(b) > MaxAuthHead {
		ac.head = nil // not kept for the next call
		return false
	}
	ac.head = b
	return true
}

// clientFields appends the client's fields the subrequest carries as
// they came, as nginx's auth_request and Caddy's forward_auth pass them:
// all but those that are not the client's to say to the service
// (authField).
func (ac *authCall) clientFields(b []byte, hs []codec.Header, trusted bool) []byte {
	lp := ac.lp
	lp.conns = connectionValues(lp.conns[:0], hs)
	for _, f := range hs {
		if !authField(f.Name, trusted) || len(lp.conns) > 0 && namedIn(lp.conns, f.Name) {
			continue
		}
		b = codec.AppendFieldLine(b, f.Name, f.Value)
	}
	clear(lp.conns)
	lp.conns = lp.conns[:0]
	return b
}

// authField reports whether a client's field named name goes into the
// subrequest as it came. Left out: the hop-by-hop fields (and, by
// clientFields, those Connection names) and every Proxy-* field; Host
// (the service's), Expect, Content-Length and Content-Type (the
// subrequest has no body); Cookie (appendCookies joins the crumbs);
// names with an underscore (which CGI-style services map onto the
// hyphenated ones, as the proxy drops them); the RFC 9440 client
// certificate fields; and the forwarding fields: gale's own X-Forwarded-*
// and X-Original-* views of the request always, the others (X-Real-IP,
// Forwarded, X-Forwarded-Port, True-Client-IP, ...) unless trusted
// (trust_forwarded, from a trusted proxy). The copy_headers fields were
// removed from the request before (handlers).
func authField(name []byte, trusted bool) bool {
	switch {
	case hopByHop(name) || framingField(name) || proxyField(name) || clientCertField(name):
		return false
	case bytes.IndexByte(name, '_') >= 0:
		return false
	case len(name) == 4 && codec.EqualFold(name, "host"),
		len(name) == 6 && (codec.EqualFold(name, "expect") || codec.EqualFold(name, "cookie")),
		len(name) == 12 && codec.EqualFold(name, "content-type"):
		return false
	case ownAuthField(name):
		return false
	}
	return trusted || forwardingField(name) == fwdNone && !hasPrefixFold(name, "x-forwarded-") && !hasPrefixFold(name, "x-original-")
}

// ownAuthField reports whether name is one of the forwarded fields the
// subrequest renders itself (render), whatever the client sent.
func ownAuthField(name []byte) bool {
	switch len(name) {
	case 14:
		return codec.EqualFold(name, "x-original-url")
	case 15:
		return codec.EqualFold(name, "x-forwarded-for") || codec.EqualFold(name, "x-forwarded-uri")
	case 16:
		return codec.EqualFold(name, "x-forwarded-host")
	case 17:
		return codec.EqualFold(name, "x-forwarded-proto") || codec.EqualFold(name, "x-original-method")
	case 18:
		return codec.EqualFold(name, "x-forwarded-method")
	}
	return false
}

// proxyField reports whether name is Proxy or a Proxy-* field: hop-by-hop
// or connection-level (Proxy-Authorization, Proxy-Connection), and a
// client's Proxy field becomes HTTP_PROXY in a CGI-style service
// (httpoxy).
func proxyField(name []byte) bool {
	return len(name) == 5 && codec.EqualFold(name, "proxy") || hasPrefixFold(name, "proxy-")
}

// hasPrefixFold reports whether name begins with prefix (lower case),
// in any case.
func hasPrefixFold(name []byte, prefix string) bool {
	return len(name) >= len(prefix) && codec.EqualFold(name[:len(prefix)], prefix)
}

// appendCookies appends the client's Cookie fields as one (HTTP/2 and
// HTTP/3 clients send crumbs; RFC 9113 section 8.2.3 joins them with
// "; ").
func appendCookies(b []byte, hs []codec.Header) []byte {
	first := true
	for _, f := range hs {
		if !codec.EqualFold(f.Name, "cookie") {
			continue
		}
		if first {
			b = append(b, "Cookie: "...)
			first = false
		} else {
			b = append(b, "; "...)
		}
		b = append(b, f.Value...)
	}
	if !first {
		b = append(b, "\r\n"...)
	}
	return b
}

var (
	hdrXFMethod = []byte("X-Forwarded-Method")
	hdrXFUri    = []byte("X-Forwarded-Uri")
	hdrXOMethod = []byte("X-Original-Method")
)

// attempt picks an upstream of the service not tried yet and sends the
// subrequest on a pooled connection, or dials one; with none left it
// decides 502.
func (ac *authCall) attempt() {
	for {
		up := ac.a.h.pick(ac.lp, ac.upset, ac.ip, 0, ac.tried, ac.now)
		if up == nil && ac.tried != 0 {
			up = ac.up // every one was tried: the last again
		}
		if up == nil {
			ac.fail(502, nil, "no authentication service in service")
			return
		}
		ac.use(up)
		if uc := ac.pool.Take(); uc != nil {
			if ac.send(uc) {
				return
			}
			if ac.attempts > ac.a.h.retries+1 {
				ac.fail(502, up, "pooled connection closed as the request was written")
				return
			}
			continue
		}
		uc, err := ac.pool.Dial(ac, &ac.lp.Stats.Counters)
		switch err {
		case nil:
			if uc.Dialing() {
				ac.uc = uc
			}
		case upstream.ErrBudget:
			ac.fail(503, up, errBudget.Error())
		default:
			ac.fail(502, up, "connect: "+err.Error())
		}
		return
	}
}

// use makes up the upstream of the next attempt.
func (ac *authCall) use(up *Upstream) {
	if ac.pool != nil {
		ac.pool.Active--
	}
	ac.up = up
	ac.pool = ac.lp.pool(up)
	ac.pool.Active++
	if i := ac.upset.index(up); i >= 0 {
		ac.tried |= 1 << i
	}
	ac.attempts++
}

// send writes the subrequest on uc, which the call now uses. It reports
// false when the connection closed as it was written (a pooled one the
// service had closed): the call no longer uses it.
func (ac *authCall) send(uc *upstream.Conn) bool {
	ac.uc = uc
	uc.Attach(ac)
	ac.reused = uc.Reused()
	ac.gotBytes = false
	b := append(ac.lp.buf[:0], "GET "...)
	b = append(b, ac.a.uri...)
	b = append(b, " HTTP/1.1\r\n"...)
	b = codec.AppendFieldLine(b, hdrHost, ac.up.host)
	b = append(b, ac.head...)
	ac.lp.buf = b[:0]
	ac.busy = true
	err := uc.Write(b)
	ac.busy = false
	if err != nil || ac.lostIn {
		ac.lostIn = false
		ac.dropConn(false)
		return false
	}
	return true
}

// dropConn detaches the call from its connection, closing it when
// closeIt is set.
func (ac *authCall) dropConn(closeIt bool) {
	if uc := ac.uc; uc != nil {
		ac.uc = nil
		uc.Abandon(ac, closeIt)
	}
}

// Connected implements upstream.User.
func (ac *authCall) Connected(uc *upstream.Conn) {
	ac.now = nanotime()
	if !ac.send(uc) {
		ac.retryOrFail(502, "connection closed as the request was written")
	}
}

// DialFailed implements upstream.User.
func (ac *authCall) DialFailed(err error) {
	ac.uc = nil
	ac.now = nanotime()
	ac.up.failed(ac.now, "connect: "+err.Error())
	status := 502
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		status = 504
	}
	ac.retryOrFail(status, "connect: "+err.Error())
}

// Lost implements upstream.User: the connection closed while the call
// used it.
func (ac *authCall) Lost(err error) {
	if ac.busy {
		ac.lostIn = true
		return
	}
	ac.uc = nil
	ac.now = nanotime()
	if ac.inBody && ac.kind == codec.BodyUntilClose {
		ac.decide() // the close delimits the body
		return
	}
	why := "connection closed before the answer ended"
	if err != nil {
		why += ": " + err.Error()
	}
	if !ac.gotBytes && ac.reused {
		ac.retryOrFail(502, why) // a pooled connection gone stale
		return
	}
	ac.up.failed(ac.now, why)
	ac.fail(502, ac.up, why)
}

// retryOrFail tries the subrequest again while retries are left (it was
// not answered: asking again is safe), or decides status.
func (ac *authCall) retryOrFail(status int, why string) {
	if ac.attempts <= ac.a.h.retries {
		ac.attempt()
		return
	}
	ac.fail(status, ac.up, why)
}

// Traffic implements upstream.User: the answer's bytes.
func (ac *authCall) Traffic() gnet.Action {
	uc := ac.uc
	buf := uc.Inbound()
	if len(buf) == 0 {
		return gnet.None
	}
	ac.gotBytes = true
	ac.now = nanotime()
	off, bad, done := ac.read(buf)
	uc.Consume(off)
	switch {
	case bad != "":
		ac.dropConn(false)
		uc.Drop()
		ac.up.failed(ac.now, "bad answer: "+bad)
		ac.fail(502, ac.up, "bad answer: "+bad)
		return gnet.Close
	case !done:
		return gnet.None
	}
	keep := ac.resp.KeepAlive && off == len(buf) && ac.kind != codec.BodyUntilClose && uc.Busy()
	ac.dropConn(false)
	act := gnet.None
	if !keep || !uc.Release(ac.now) {
		uc.Drop()
		act = gnet.Close
	}
	ac.decide()
	return act
}

// read takes what buf holds of the answer: the head, then the body. It
// returns the bytes used, what is wrong with the answer ("" for
// nothing), and whether the answer is complete.
func (ac *authCall) read(buf []byte) (int, string, bool) {
	off := 0
	for !ac.inBody {
		n, err := codec.ParseResponse(buf[off:], &ac.resp, &respLimits)
		if err == codec.ErrNeedMore {
			return off, "", false
		}
		if err != nil {
			return off, err.Error(), false
		}
		off += n
		if ac.resp.Status < 200 {
			if ac.resp.Status == 101 {
				return off, "101 to a request that offered no upgrade", false
			}
			continue // an interim answer
		}
		ac.keepHead()
		ac.kind = ac.rbody.InitResponse(&ac.resp, false)
		ac.inBody = true
	}
	if ac.kind == codec.BodyUntilClose {
		if !ac.keepBody(buf[off:]) {
			return len(buf), "answer body over MaxAuthBody", false
		}
		return len(buf), "", false
	}
	for {
		n, p, done, err := ac.rbody.Next(buf[off:])
		if err != nil {
			return off, "answer body: " + err.Error(), false
		}
		off += n
		if !ac.keepBody(p) {
			return off, "answer body over MaxAuthBody", false
		}
		if done {
			return off, "", true
		}
		if n == 0 {
			return off, "", false
		}
	}
}

// keepHead copies the answer's status and end-to-end fields into the
// verdict (the head's bytes go with the connection's buffer): hop-by-hop
// and framing fields, those Connection names, and Date and Server (the
// client's engine sets its own) are left out.
func (ac *authCall) keepHead() {
	lp, r := ac.lp, &ac.resp
	ac.verdict.Status = r.Status
	lp.conns = connectionValues(lp.conns[:0], r.Headers)
	raw := ac.raw[:0]
	type span struct{ n0, n1, v0, v1 int }
	fs := ac.verdict.Fields[:0]
	var spans [maxAuthFields]span
	kept := 0
	for _, f := range r.Headers {
		name := f.Name
		if hopByHop(name) || framingField(name) || codec.EqualFold(name, "date") || codec.EqualFold(name, "server") ||
			len(lp.conns) > 0 && namedIn(lp.conns, name) || kept == maxAuthFields {
			continue
		}
		s := span{n0: len(raw)}
		raw = append(raw, name...)
		s.n1, s.v0 = len(raw), len(raw)
		raw = append(raw, f.Value...)
		s.v1 = len(raw)
		spans[kept] = s
		kept++
	}
	for _, s := range spans[:kept] {
		fs = append(fs, codec.Header{Name: raw[s.n0:s.n1:s.n1], Value: raw[s.v0:s.v1:s.v1]})
	}
	ac.raw, ac.verdict.Fields = raw, fs
}

// maxAuthFields bounds the fields of an answer a verdict keeps.
const maxAuthFields = 64

// keepBody keeps p of the answer's body when the verdict will be the
// client's response (not a 2xx); it reports false past MaxAuthBody.
func (ac *authCall) keepBody(p []byte) bool {
	if ac.verdict.Status < 300 {
		return true // a pass: the body goes nowhere
	}
	if len(ac.verdict.Body)+len(p) > MaxAuthBody {
		return false
	}
	ac.verdict.Body = append(ac.verdict.Body, p...)
	return true
}

// decide makes the answer read the verdict and wakes the exchange.
func (ac *authCall) decide() {
	ac.state = acDecided
	ac.end()
	if !ac.quiet {
		ac.cl.Wake()
	}
}

// fail decides that the service gave no answer: status (502, 503, 504),
// logged at warn naming the service (up; nil when none was tried).
func (ac *authCall) fail(status int, up *Upstream, why string) {
	ac.dropConn(true)
	ac.stopStream()
	ac.verdict = handlers.AuthVerdict{Fail: status, Fields: ac.verdict.Fields[:0], Body: ac.verdict.Body[:0]}
	ac.lp.Stats.AuthFailures.Add(1)
	ac.a.logFailure(up, status, why)
	ac.decide()
}

// logFailure logs a subrequest that got no answer, at warn, naming the
// route and the service asked (up; "none" when none was).
func (a *AuthService) logFailure(up *Upstream, status int, why string) {
	l := a.h.log.Load()
	if l == nil || !l.Enabled(context.Background(), slog.LevelWarn) {
		return
	}
	service := "none"
	if up != nil {
		service = up.raw
	}
	l.Warn("forward_auth: no answer from the authentication service", "route", a.h.route.Conf.Path,
		"auth_service", service, "status", status, "reason", why)
}

// check runs from the loop's sweep: past the timeout the call decides
// 504.
func (ac *authCall) check(now int64) {
	if ac.state != acAsking || now < ac.deadline {
		return
	}
	ac.now = now
	if ac.up != nil {
		ac.up.failed(now, "timeout")
	}
	why := fmt.Sprintf("no answer within %v", time.Duration(ac.a.timeout))
	ac.fail(504, ac.up, why)
}
