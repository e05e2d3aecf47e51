package tlsconn

import (
	"crypto/tls"
	"errors"

	"gale/acme"
)

// errChallengeOverQUIC refuses a TLS-ALPN-01 validation over QUIC: the
// challenge is answered over TCP only (RFC 8737).
var errChallengeOverQUIC = errors.New("app: tls: acme-tls/1 is answered over TCP only")

// QUICConfig returns the TLS configuration of the listener's QUIC
// (HTTP/3) side: TLS 1.3 only (RFC 9001 section 4.2), ALPN "h3", and the
// certificate chosen by SNI from the listener's current certificates, so
// that a reload or a changed certificate file reaches QUIC handshakes
// the moment it reaches TCP ones. Safe for concurrent use.
func (tl *Listener) QUICConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		NextProtos: []string{"h3"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if acme.IsChallenge(hello) {
				return nil, errChallengeOverQUIC
			}
			return tl.certificate(tl.cur.Load(), hello)
		},
	}
}
