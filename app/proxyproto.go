package app

import (
	"github.com/panjf2000/gnet/v2"

	"gale/app/wire"
	"gale/codec"
)

// proxyHeader reads the PROXY protocol header a listener with
// proxy_protocol expects before anything else (HAProxy's specification,
// version 1 or 2; codec.ParseProxyHeader), from the socket's own bytes,
// under the TLS layer when there is one. The client it names becomes the
// connection's client for everything that reads the address: access
// rules, rate limits, the handshake gate's per-address share, the
// forwarded fields, FastCGI's REMOTE_ADDR, logs and metrics. A header
// naming no client (UNKNOWN, LOCAL) leaves the balancer's address. A
// connection without a valid header is closed unanswered;
// timeouts.read_header bounds the wait (check). stop says onTraffic must
// return a now.
func (cs *conn) proxyHeader() (a gnet.Action, stop bool) {
	buf, _ := cs.C.Peek(-1)
	n, src, ok, err := codec.ParseProxyHeader(buf)
	switch {
	case err == codec.ErrNeedMore:
		return gnet.None, true
	case err != nil:
		cs.loop.Stats.BadProxyHdr.Add(1)
		return gnet.Close, true
	}
	_, _ = cs.C.Discard(n)
	cs.proxyWait = false
	if ok {
		src = wire.Unmapped(src)
		cs.Remote = src
		cs.h1.ClientIs(src)
		if cs.tls != nil {
			cs.tls.ClientIs(src)
		}
	}
	if !cs.loop.srv.screen(cs, cs.Remote) {
		return gnet.Close, true
	}
	if cs.C.InboundBuffered() == 0 {
		return gnet.None, true // the protocol's first bytes are still to come
	}
	return gnet.None, false
}
