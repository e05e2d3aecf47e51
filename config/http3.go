package config

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// HTTP3 holds the settings of HTTP/3 (RFC 9114) over QUIC (RFC 9000), for
// the TLS listeners that set http3: true. They are read when the QUIC
// listeners start: a reload that changes them asks for a restart.
type HTTP3 struct {
	MaxConcurrentStreams int           // default 100, 1..1000: request streams a client may open at once (QUIC MAX_STREAMS, bidirectional)
	MaxHeaderBytes       int           // default 16 KiB, 1 KiB..1 MiB: largest request header section, counted as RFC 9114 section 4.2.2 does (SETTINGS_MAX_FIELD_SECTION_SIZE)
	IdleTimeout          time.Duration // default 30s: a connection without packets in either direction for this long is closed
	HandshakeTimeout     time.Duration // default 10s: from the first packet to the end of the QUIC handshake
	Allow0RTT            bool          // default false: accept 0-RTT requests (early data can be replayed, RFC 9001 section 9.2)
	AltSvcMaxAge         time.Duration // default 24h: the ma= of the Alt-Svc field that HTTP/1.1 and HTTP/2 responses of the listener carry
}

const (
	defaultH3Streams     = 100
	maxH3Streams         = 1000
	defaultH3HeaderBytes = 16 << 10
	minH3HeaderBytes     = 1 << 10
	maxH3HeaderBytes     = 1 << 20
)

// defaultHTTP3 returns the HTTP/3 defaults.
func defaultHTTP3() HTTP3 {
	return HTTP3{
		MaxConcurrentStreams: defaultH3Streams,
		MaxHeaderBytes:       defaultH3HeaderBytes,
		IdleTimeout:          30 * time.Second,
		HandshakeTimeout:     10 * time.Second,
		AltSvcMaxAge:         24 * time.Hour,
	}
}

var http3Keys = sectionKey("http3", "HTTP/3 (RFC 9114) over QUIC, on the TLS listeners that set http3: true; read at start (a change needs a restart).",
	intKey("max_concurrent_streams", 1, maxH3Streams, "100", "Request streams one connection may have open at once (QUIC MAX_STREAMS); a client that wants more waits for streams to end."),
	sizeKey("max_header_bytes", minH3HeaderBytes, maxH3HeaderBytes, "16KiB", "Largest request field section, counted as RFC 9114 section 4.2.2 does (each field's name and value plus 32 bytes; SETTINGS_MAX_FIELD_SECTION_SIZE); a larger one is refused."),
	durationKey("idle_timeout", "30s", "A QUIC connection without packets, and an HTTP/3 connection without requests, for this long is closed."),
	durationKey("handshake_timeout", "10s", "From the first packet to the end of the QUIC handshake."),
	boolKey("allow_0rtt", "false", "Accept requests in 0-RTT early data on resumed connections; early data can be replayed by an attacker (RFC 9001 section 9.2), so leave it off unless every route is safe to run twice."),
	durationKey("alt_svc_max_age", "24h", "ma= of the Alt-Svc field advertising HTTP/3 on the listener's HTTP/1.1 and HTTP/2 responses."),
)

// http3 decodes server.http3 into h.
func (d *decoder) http3(n *yaml.Node, path string, h *HTTP3) {
	s := d.section(n, path, http3Keys.names()...)
	if s == nil {
		return
	}
	if v := s.get("max_concurrent_streams"); v != nil {
		if n, ok := d.integer(v, join(path, "max_concurrent_streams"), 1, maxH3Streams); ok {
			h.MaxConcurrentStreams = int(n)
		}
	}
	d.setInt(s, "max_header_bytes", &h.MaxHeaderBytes, minH3HeaderBytes, maxH3HeaderBytes)
	d.setDuration(s, "idle_timeout", &h.IdleTimeout)
	d.setDuration(s, "handshake_timeout", &h.HandshakeTimeout)
	d.setBool(s, "allow_0rtt", &h.Allow0RTT)
	d.setDuration(s, "alt_svc_max_age", &h.AltSvcMaxAge)
}

// listenerHTTP3 decodes a listener's http3 key: HTTP/3 rides on QUIC,
// whose handshake is TLS 1.3, so it needs the listener's tls section.
func (d *decoder) listenerHTTP3(s *section, path string, l *Listener) bool {
	d.setBool(s, "http3", &l.HTTP3)
	if l.HTTP3 && !s.has("tls") {
		d.errorf(s.key("http3"), join(path, "http3"), "HTTP/3 runs over QUIC, whose handshake is TLS 1.3: add a tls section with certificates to this listener, or remove http3")
		return false
	}
	return true
}
