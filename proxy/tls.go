package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"

	"gale/config"
)

// sessionCacheSize bounds the TLS sessions kept per upstream for
// resumption: every connection to an upstream asks for the same name, so
// a few entries serve it.
const sessionCacheSize = 16

// upstreamTLS returns how gale speaks TLS to upstream u of route pc, and
// the identity of those settings that names the address's pool: nil and
// "" for a plain upstream. Each upstream has its own session cache, which
// its loops share: it is used only by the dial goroutines (and by
// crypto/tls when a session ticket arrives), never per request.
func upstreamTLS(pc *config.Proxy, u config.Upstream) (*tls.Config, string) {
	if !u.TLS {
		return nil, ""
	}
	t := pc.TLS
	if t == nil {
		t = config.DefaultUpstreamTLS()
	}
	name := t.ServerName
	if name == "" {
		name = hostName(u.Host)
	}
	cfg := &tls.Config{
		ServerName:         name,
		RootCAs:            t.Roots,
		MinVersion:         t.MinTLSVersion(),
		InsecureSkipVerify: t.InsecureSkipVerify,
		ClientSessionCache: &sessionCache{c: tls.NewLRUClientSessionCache(sessionCacheSize)},
		NextProtos:         []string{"http/1.1"},
	}
	switch pc.Protocol {
	case "h2":
		cfg.NextProtos = []string{"h2"}
	case "auto":
		cfg.NextProtos = []string{"h2", "http/1.1"}
	}
	if t.ClientCert != nil {
		cfg.Certificates = []tls.Certificate{*t.ClientCert}
	}
	return cfg, t.ID + "/" + name
}

// hostName returns the host of a Host field value "host[:port]", without
// the brackets of an IPv6 address.
func hostName(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// h2Transport returns the transport of an upstream that speaks HTTP/2
// over TLS (protocol: h2): like h2cTransport, but each connection is a TLS
// session with cfg (its goroutines are off the loops anyway), and one
// whose upstream did not choose h2 by ALPN is refused.
func h2Transport(network, address string, connect time.Duration, cfg *tls.Config) *http2.Transport {
	tr := h2cTransport(network, address, connect)
	tr.AllowHTTP = false
	tr.DialTLSContext = func(ctx context.Context, _, _ string, _ *tls.Config) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, connect)
		defer cancel()
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("tls handshake: %w", err)
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			_ = nc.Close()
			return nil, fmt.Errorf("tls handshake: the upstream chose %q by ALPN, not h2 (protocol: h2)", p)
		}
		return tc, nil
	}
	return tr
}

// sessionCache is an upstream's TLS session cache, shared by its loops
// and dial goroutines. A TLS 1.3 session ticket arrives after the
// handshake, so crypto/tls stores it on the loop that reads it: Put never
// waits there for another goroutine's Get or Put, it hands the store to a
// goroutine of its own instead (a ticket is one per new connection, not
// per request).
type sessionCache struct {
	mu sync.Mutex
	c  tls.ClientSessionCache
}

var _ tls.ClientSessionCache = (*sessionCache)(nil)

// Get implements tls.ClientSessionCache; it runs off the loops.
func (s *sessionCache) Get(key string) (*tls.ClientSessionState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Get(key)
}

// Put implements tls.ClientSessionCache without blocking.
func (s *sessionCache) Put(key string, cs *tls.ClientSessionState) {
	if s.mu.TryLock() {
		s.c.Put(key, cs)
		s.mu.Unlock()
		return
	}
	go func() {
		s.mu.Lock()
		s.c.Put(key, cs)
		s.mu.Unlock()
	}()
}

// roundTripper is how a transport-driven upstream kind (h2c, h2, auto)
// exchanges requests off the loops.
type roundTripper interface {
	RoundTrip(*http.Request) (*http.Response, error)
	CloseIdleConnections()
}

var (
	_ roundTripper = (*http2.Transport)(nil)
	_ roundTripper = (*http.Transport)(nil)
)

// autoTransport returns the transport of an upstream of protocol: auto:
// Go's, offering h2 and http/1.1 by ALPN (cfg) and speaking what the
// upstream picks on each connection. It never compresses or decompresses
// on its own, and reads no proxy settings from the environment.
func autoTransport(network, address string, connect, idle time.Duration, cfg *tls.Config) *http.Transport {
	d := &net.Dialer{Timeout: connect}
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, address)
		},
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: connect,
		ForceAttemptHTTP2:   true,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     idle,
	}
}
