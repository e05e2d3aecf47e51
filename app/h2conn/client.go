package h2conn

import (
	"net"
	"time"

	"gale/codec"
	"gale/h2"
	"gale/proxy"
)

// The proxy.Client of a stream, for the handlers that forward requests
// (the proxy, FastCGI). A stream has none of what proxy.Client carries
// for HTTP/1.1 alone: its request body comes through the body source
// (body.go), not as raw bytes; it cannot be upgraded to a tunnel (RFC
// 9113 section 8.6 forbids Upgrade); and its socket is shared with other
// streams, so it cannot be handed to a goroutine (ProxyDup says so, and
// the proxy paces a body that outruns the client instead).

// proxyClient is one exchange's proxy.Client.
type proxyClient struct {
	ex *exchange
}

var _ proxy.Client = (*proxyClient)(nil)

// ProxyInbound implements proxy.Client: a stream has no raw bytes.
func (*proxyClient) ProxyInbound() []byte { return nil }

// ProxyConsume implements proxy.Client.
func (*proxyClient) ProxyConsume(int) {}

// ProxyInboundBuffered implements proxy.Client: the windows bound what a
// stream may send ahead.
func (*proxyClient) ProxyInboundBuffered() int { return 0 }

// ProxySwitch implements proxy.Client. An HTTP/2 request never asks for
// an upgrade (the core rejects the field), so the proxy never switches
// one; were it to, the stream is reset.
func (c *proxyClient) ProxySwitch([]codec.Header, []byte) { c.ex.sink.Abort() }

// ProxyChunked implements proxy.Client: DATA frames are not chunks.
func (*proxyClient) ProxyChunked() bool { return false }

// ProxyOutboundBuffered implements proxy.Client.
func (c *proxyClient) ProxyOutboundBuffered() int { return c.ex.h.pendingOutput() }

// ProxyDup implements proxy.Client: the socket carries other streams.
func (*proxyClient) ProxyDup() (net.Conn, error) { return nil, proxy.ErrShared }

// ProxyWake implements proxy.Client: the connection's next event resumes
// the exchange. Safe from any goroutine.
func (c *proxyClient) ProxyWake() { _ = c.ex.h.wc.C.Wake(nil) }

// ProxyLoop implements proxy.Client.
func (c *proxyClient) ProxyLoop() *proxy.Loop { return c.ex.h.wc.Loop.Proxy() }

// ProxySettings implements proxy.Client.
func (c *proxyClient) ProxySettings() proxy.ClientSettings {
	return c.ex.h.wc.Loop.Shared.Set.Load().ProxyClientSettings()
}

// ProxyClosing implements proxy.Client: a stream ends on its own, and
// closing the connection is the engine's business (GOAWAY), so no
// response needs to say so.
func (*proxyClient) ProxyClosing() bool { return false }

// ProxyFinish implements proxy.Client: the forwarded response ended.
// The exchange is counted, logged and freed once the body bytes still
// waiting for the client's windows went out.
func (c *proxyClient) ProxyFinish(r proxy.Result) {
	ex := c.ex
	ex.setPending(nil)
	if !ex.sink.head && r.Status != 0 {
		ex.status = r.Status
	}
	ex.forwarded = true
	if ex.sink.queued() > 0 && ex.sink.usable() {
		return // finishSent ends it
	}
	ex.endForwarded()
}

// endForwarded ends a forwarded exchange whose response left (or was
// cut): the stream is reset if the producer left it open, and the
// exchange is counted, logged and freed.
func (ex *exchange) endForwarded() {
	h := ex.h
	h.dequeue(ex)
	if ex.s != nil && !ex.sink.closed {
		h.core.Reset(ex.s, h2.InternalError)
	}
	if !ex.answered && h.wc.Loop.Shared.Access != nil {
		ex.rec.FromRequest(ex.ctx.Req)
		ex.recBuf = ex.rec.Keep(ex.recBuf)
	}
	h.now = time.Now().UnixNano()
	ex.finish()
	if !h.wc.Dead {
		h.flushLater() // and the connection may close if it is going away
	}
}
