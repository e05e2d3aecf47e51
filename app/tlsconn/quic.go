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
// the moment it reaches TCP ones; automatic certificates once a TCP
// handshake or the background obtained them; client certificates as
// tls.client_auth asks (ClientCert describes them). Safe for concurrent
// use.
func (tl *Listener) QUICConfig() *tls.Config {
	base := &tls.Config{
		MinVersion: tls.VersionTLS13,
		NextProtos: []string{"h3"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			set := tl.cur.Load()
			switch {
			case tl.site == nil:
				return set.certs.pick(hello), nil
			case acme.IsChallenge(hello):
				return nil, errChallengeOverQUIC
			}
			// No handshake gate bounds QUIC's handshakes: they get the
			// automatic certificates in memory only, never asking,
			// obtaining or waiting.
			return tl.choose(set, hello, tl.site.Cached)
		},
	}
	c := base.Clone()
	// Client certificates as on TCP (clientauth.go): the server name
	// chooses the client_auth, from the current settings.
	c.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		v := tl.cur.Load().variantFor(hello)
		if v.auth == nil {
			return nil, nil
		}
		// A clone of c keeps its session ticket keys (initialized
		// before quic-go clones c), so that sessions resume.
		withAuth := c.Clone()
		withAuth.GetConfigForClient = nil
		v.auth.apply(withAuth)
		return withAuth, nil
	}
	return c
}
