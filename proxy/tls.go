package proxy

import (
	"crypto/tls"
	"net"
	"strings"

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
	if !u.TLS || pc.TLS == nil {
		return nil, ""
	}
	t := pc.TLS
	name := t.ServerName
	if name == "" {
		name = hostName(u.Host)
	}
	cfg := &tls.Config{
		ServerName:         name,
		RootCAs:            t.Roots,
		MinVersion:         t.MinTLSVersion(),
		InsecureSkipVerify: t.InsecureSkipVerify,
		ClientSessionCache: tls.NewLRUClientSessionCache(sessionCacheSize),
		NextProtos:         []string{"http/1.1"},
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
