package app

import (
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/config"
	"gale/h2"
)

// compileHTTP2 turns server.http2 into the core's limits, and says whether
// HTTP/2 is offered: it is enabled and no route forwards, since the
// reverse proxy answers clients over HTTP/1.1 only (such configs keep
// every listener on HTTP/1.1, and say so at start).
func compileHTTP2(cfg *config.Config) (h2.Config, bool) {
	c := cfg.Server.HTTP2
	hc := h2.Config{
		MaxConcurrentStreams: c.MaxConcurrentStreams,
		InitialStreamWindow:  c.InitialStreamWindow,
		InitialConnWindow:    c.InitialConnWindow,
		MaxFrameSize:         c.MaxFrameSize,
		MaxHeaderListSize:    c.MaxHeaderListSize,
		MaxRequests:          c.MaxRequests,
		MaxBodyBytes:         cfg.Server.Limits.BodyBytes,
	}
	return hc, c.Enabled && !forwards(cfg)
}

// forwards reports whether any route of cfg proxies.
func forwards(cfg *config.Config) bool {
	for i := range cfg.Routes {
		if cfg.Routes[i].Proxy != nil {
			return true
		}
	}
	return false
}

// http2On reports whether new connections may speak HTTP/2 (the TLS
// listeners' ALPN asks it for every handshake). Safe for concurrent use.
func (s *Server) http2On() bool { return s.set.Load().http2On }

// h2Cipher reports whether a TLS 1.2 cipher suite is allowed under
// HTTP/2: RFC 9113 section 9.2.2 forbids every suite but ephemeral key
// exchange with an AEAD cipher. TLS 1.3 suites are all allowed.
func h2Cipher(version, suite uint16) bool {
	if version >= 0x0304 {
		return true
	}
	switch suite {
	case 0xc02b, 0xc02c, 0xc02f, 0xc030, 0xcca8, 0xcca9: // ECDHE_{ECDSA,RSA}_WITH_AES_{128,256}_GCM, CHACHA20_POLY1305
		return true
	}
	return false
}

// chooseProto decides, on a connection's first bytes after any TLS
// handshake, whether it speaks HTTP/2: ALPN "h2" on TLS (refused with
// INADEQUATE_SECURITY under a forbidden TLS 1.2 suite), the client preface
// on a plain connection. It reports wait when the connection must wait for
// more bytes before it can tell (a prefix of the preface arrived).
func (cs *conn) chooseProto() (a gnet.Action, wait bool) {
	set := cs.loop.srv.set.Load()
	if cs.tls != nil {
		cs.proto = true
		st := cs.tls.tc.ConnectionState()
		if st.NegotiatedProtocol != "h2" {
			return gnet.None, false
		}
		cs.startH2(set)
		if !h2Cipher(st.Version, st.CipherSuite) {
			cs.h2.core.GoAway(h2.InadequateSecurity)
			cs.h2.goingAway = true
		}
		return gnet.None, false
	}
	if !set.http2On {
		cs.proto = true
		return gnet.None, false
	}
	buf := cs.inbound()
	switch sniffPreface(buf) {
	case isPreface:
		cs.proto = true
		cs.startH2(set)
	case maybePreface:
		if cs.headStart == 0 {
			cs.headStart = time.Now().UnixNano() // read_header bounds the wait
		}
		return gnet.None, true
	default:
		cs.proto = true
	}
	cs.headStart = 0
	return gnet.None, false
}
