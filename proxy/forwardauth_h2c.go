package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"gale/codec"
	"gale/handlers"
)

// An authentication service that speaks h2c (forward_auth.protocol):
// the subrequest goes through its upstreams' HTTP/2 transports, as a
// request to an h2c proxy upstream does (h2c.go), on a goroutine of its
// own, which reads the whole answer (its body bounded by MaxAuthBody),
// hands it over and wakes the exchange. The loop makes the verdict of
// it when the exchange asks (Verdict). The subrequest's fields are those
// rendered for an HTTP/1.1 service; its timeout is the loop's sweep's,
// which cancels the stream (RST_STREAM).

// authStream is one subrequest to an h2c authentication service. Once
// done is set, status, header, body and err are the loop's; before, the
// goroutine's.
type authStream struct {
	cancel context.CancelFunc
	done   atomic.Bool
	status int
	header http.Header
	body   []byte
	err    error

	// wakeTo is the asking exchange, woken when the answer is in,
	// until the loop lets the stream go: the exchange may be recycled
	// then, and no wake may reach it.
	wakeMu sync.Mutex
	wakeTo handlers.Exchange
}

var errAuthBody = errors.New("answer body over MaxAuthBody")

// askH2C sends the subrequest to an h2c service: it picks an upstream
// and starts the stream's goroutine.
func (ac *authCall) askH2C() {
	up := ac.a.h.pick(ac.lp, ac.upset, ac.ip, 0, ac.tried, ac.now)
	if up == nil {
		ac.fail(502, nil, "no authentication service in service")
		return
	}
	ac.use(up)
	req, err := ac.h2cRequest()
	if err != nil {
		ac.fail(502, up, "h2c: "+err.Error())
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	st := &authStream{cancel: cancel, wakeTo: ac.cl}
	ac.st = st
	go st.run(up.h2t, req.WithContext(ctx))
}

// h2cRequest builds the subrequest from the fields render rendered.
func (ac *authCall) h2cRequest() (*http.Request, error) {
	host := ac.up.address
	if ac.up.network == "unix" {
		host = "localhost"
	}
	u, err := url.ParseRequestURI(string(ac.a.uri))
	if err != nil {
		return nil, err
	}
	u.Scheme, u.Host = "http", host
	req := &http.Request{Method: "GET", URL: u, Header: http.Header{}, Host: string(ac.up.host),
		Proto: "HTTP/2.0", ProtoMajor: 2, Body: http.NoBody}
	rest := ac.head
	for len(rest) > 0 {
		line, after, _ := bytes.Cut(rest, []byte("\r\n"))
		rest = after
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		req.Header[string(name)] = append(req.Header[string(name)], string(codec.TrimOWS(value)))
	}
	return req, nil
}

// run sends req on tr, reads the answer whole and hands it over. It runs
// on its own goroutine.
func (st *authStream) run(tr roundTripper, req *http.Request) {
	resp, err := tr.RoundTrip(req)
	if err == nil {
		st.status, st.header = resp.StatusCode, resp.Header
		st.body, err = io.ReadAll(io.LimitReader(resp.Body, MaxAuthBody+1))
		resp.Body.Close()
		if err == nil && len(st.body) > MaxAuthBody {
			err = errAuthBody
		}
	}
	st.err = err
	st.done.Store(true)
	st.wakeMu.Lock()
	if w := st.wakeTo; w != nil {
		w.Wake()
	}
	st.wakeMu.Unlock()
}

// stop lets the stream go (on the loop): no wake reaches the exchange
// any more, and a stream not answered yet is reset.
func (st *authStream) stop() {
	st.wakeMu.Lock()
	st.wakeTo = nil
	st.wakeMu.Unlock()
	st.cancel()
}

// stopStream lets the call's stream go, if it has one.
func (ac *authCall) stopStream() {
	if st := ac.st; st != nil {
		ac.st = nil
		st.stop()
	}
}

// takeStream makes the verdict of a stream that is done: the answer, or
// 502 for none (its failure logged). The exchange is running: it is not
// woken.
func (ac *authCall) takeStream() {
	st := ac.st
	ac.stopStream()
	ac.quiet = true
	defer func() { ac.quiet = false }()
	ac.now = nanotime()
	if st.err != nil {
		why := "h2c: " + st.err.Error()
		if st.err != errAuthBody {
			ac.up.failed(ac.now, why)
		}
		ac.fail(502, ac.up, why)
		return
	}
	ac.verdict.Status = st.status
	ac.keepHTTPHead(st.header)
	if st.status >= 300 {
		ac.verdict.Body = append(ac.verdict.Body[:0], st.body...)
	}
	ac.decide()
}

// keepHTTPHead copies the end-to-end fields of an h2c answer into the
// verdict, as keepHead does those of an HTTP/1.1 one.
func (ac *authCall) keepHTTPHead(h http.Header) {
	raw := ac.raw[:0]
	type span struct{ n0, n1, v0, v1 int }
	var spans [maxAuthFields]span
	kept := 0
	for k, vs := range h {
		name := []byte(k)
		if !httpFieldKept(k, false) || namedInConnection(h, k) || codec.EqualFold(name, "date") || codec.EqualFold(name, "server") {
			continue
		}
		for _, v := range vs {
			if kept == maxAuthFields {
				break
			}
			s := span{n0: len(raw)}
			raw = append(raw, k...)
			s.n1, s.v0 = len(raw), len(raw)
			raw = append(raw, v...)
			s.v1 = len(raw)
			spans[kept] = s
			kept++
		}
	}
	fs := ac.verdict.Fields[:0]
	for _, s := range spans[:kept] {
		fs = append(fs, codec.Header{Name: raw[s.n0:s.n1:s.n1], Value: raw[s.v0:s.v1:s.v1]})
	}
	ac.raw, ac.verdict.Fields = raw, fs
}
