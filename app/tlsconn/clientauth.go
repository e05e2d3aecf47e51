package tlsconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"gale/clientcert"
	"gale/config"
)

// Client certificates (tls.client_auth). A settings generation holds the
// listener's client_auth and those of certificates that have their own,
// each with its CA and revocation list loaded; the per-handshake config
// is chosen by the server name in GetConfigForClient, as the certificate
// itself is. crypto/tls verifies the chain (require, verify_if_given);
// VerifyConnection, which also runs on resumed sessions, refuses a
// certificate the revocation list names. In request mode nothing is
// refused: the chain is verified after the handshake, off the loop, and
// the outcome is reported to routes (clientcert.Info).

// errRevoked refuses a client certificate the revocation list names.
var errRevoked = errors.New("app: tls: client certificate revoked")

// errResumed refuses a resumed session whose client certificate does not
// verify under the client_auth of this handshake.
var errResumed = errors.New("app: tls: resumed session's client certificate refused")

// clientAuth is one client_auth with its files loaded. Immutable.
type clientAuth struct {
	mode  config.ClientAuthMode
	trust *config.ClientTrust // nil in request mode without a ca
}

// loadClientAuth reads the files of a; nil for a nil a.
func loadClientAuth(a *config.ClientAuth) (*clientAuth, []fileStamp, error) {
	if a == nil {
		return nil, nil, nil
	}
	ca := &clientAuth{mode: a.Mode}
	if a.CA == "" {
		return ca, nil, nil
	}
	stamps := []fileStamp{stampOf(a.CA)}
	if a.CRL != "" {
		stamps = append(stamps, stampOf(a.CRL))
	}
	trust, _, msg := config.LoadClientTrust(a.CA, a.CRL)
	if msg != "" {
		return nil, nil, fmt.Errorf("%w: client_auth: %s", errTLSListener, msg)
	}
	ca.trust = trust
	return ca, stamps, nil
}

// apply sets the client certificate fields of c.
func (a *clientAuth) apply(c *tls.Config) {
	switch a.mode {
	case config.ClientAuthRequire:
		c.ClientAuth = tls.RequireAndVerifyClientCert
	case config.ClientAuthVerifyIfGiven:
		c.ClientAuth = tls.VerifyClientCertIfGiven
	case config.ClientAuthRequest:
		c.ClientAuth = tls.RequestClientCert
	}
	if a.trust != nil {
		c.ClientCAs = a.trust.Roots // also named in the CertificateRequest, which helps a client choose
	}
	if a.mode != config.ClientAuthRequest && a.trust != nil {
		c.VerifyConnection = a.verifyConnection
	}
}

// verifyConnection runs at the end of every handshake, full or resumed.
// A full handshake's chain was verified by crypto/tls: it refuses one the
// revocation list names. A resumed session's certificate was verified
// when the session began, maybe under another client_auth of the
// listener (another certificate's name, which shares the ticket keys),
// maybe not at all (request mode): it is verified again against this
// one's CA and revocation list.
func (a *clientAuth) verifyConnection(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return nil
	}
	if cs.DidResume {
		if why := a.verify(cs.PeerCertificates); why != "" {
			return fmt.Errorf("%w: %s", errResumed, why)
		}
		return nil
	}
	for _, chain := range cs.VerifiedChains {
		if a.revoked(chain) {
			return errRevoked
		}
	}
	return nil
}

// revoked reports whether a certificate of chain, but its root, is on the
// revocation list.
func (a *clientAuth) revoked(chain []*x509.Certificate) bool {
	for i := 0; i < len(chain)-1; i++ {
		if a.trust.Revoked(chain[i]) {
			return true
		}
	}
	return false
}

// info describes the certificate of a finished handshake, nil when the
// client sent none (or none was asked for). In request mode it verifies
// the chain here: the handshake accepted it unverified.
func (a *clientAuth) info(cs *tls.ConnectionState) *clientcert.Info {
	if a == nil || len(cs.PeerCertificates) == 0 {
		return nil
	}
	failure := ""
	if a.mode == config.ClientAuthRequest {
		failure = a.verify(cs.PeerCertificates)
	}
	return clientcert.New(cs.PeerCertificates, failure)
}

// verify checks chain (the client's certificate first) against the CA
// and the revocation list, and returns why it fails ("" when it holds).
func (a *clientAuth) verify(chain []*x509.Certificate) string {
	if a.trust == nil {
		return "no CA to verify against (client_auth.ca)"
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	chains, err := chain[0].Verify(x509.VerifyOptions{Roots: a.trust.Roots, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return err.Error()
	}
	for _, ch := range chains {
		if a.revoked(ch) {
			return "certificate revoked"
		}
	}
	return ""
}

// variant is the per-handshake config of one client_auth: the listener's,
// or a certificate's own.
type variant struct {
	config   *tls.Config // ALPN http/1.1 (see settings.base)
	configH2 *tls.Config // h2 first
	auth     *clientAuth // nil when no certificate is asked for
}

// variantFor returns the variant of a handshake: that of the certificate
// the server name chooses when it has its own client_auth, else the
// listener's.
func (set *settings) variantFor(hello *tls.ClientHelloInfo) *variant {
	if len(set.scoped) > 0 {
		if c := set.certs.match(hello); c != nil {
			if v := set.scoped[c]; v != nil {
				return v
			}
		}
	}
	return &set.base
}

// AsksClientCerts reports whether handshakes of the listener ask for
// client certificates now (its client_auth, or a certificate's). Safe for
// concurrent use.
func (tl *Listener) AsksClientCerts() bool {
	set := tl.cur.Load()
	return set.base.auth != nil || len(set.scoped) > 0
}

// ClientCert describes the certificate of a finished handshake of the
// listener's QUIC side, chosen by its server name as the handshake's
// settings were; nil when none was presented. Safe for concurrent use;
// it verifies chains in request mode, so call it off the loops.
func (tl *Listener) ClientCert(cs *tls.ConnectionState) *clientcert.Info {
	if len(cs.PeerCertificates) == 0 {
		return nil
	}
	set := tl.cur.Load()
	v := &set.base
	if len(set.scoped) > 0 && cs.ServerName != "" {
		v = set.variantFor(&tls.ClientHelloInfo{ServerName: cs.ServerName})
	}
	return v.auth.info(cs)
}
