package config

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// ClientAuthMode is how a TLS listener asks its clients for certificates.
type ClientAuthMode uint8

// The client_auth modes, as nginx's ssl_verify_client and Caddy's
// client_auth name them.
const (
	// ClientAuthRequire refuses a handshake without a certificate that
	// verifies against the CA (nginx "on", Caddy "require_and_verify").
	ClientAuthRequire ClientAuthMode = iota + 1
	// ClientAuthVerifyIfGiven accepts a client without a certificate and
	// refuses one whose certificate does not verify (nginx "optional",
	// Caddy "verify_if_given").
	ClientAuthVerifyIfGiven
	// ClientAuthRequest asks for a certificate and accepts the handshake
	// whatever the client sends; whether it verified is reported to
	// routes (nginx "optional_no_ca", Caddy "request").
	ClientAuthRequest
)

// ClientAuthModes are the accepted values of client_auth.mode, in the
// order of the constants.
var ClientAuthModes = []string{"require", "verify_if_given", "request"}

// String returns the mode as the config file writes it.
func (m ClientAuthMode) String() string {
	if m >= ClientAuthRequire && int(m) <= len(ClientAuthModes) {
		return ClientAuthModes[m-1]
	}
	return "off"
}

// ClientAuth is a listener's (or one certificate's) request for client
// certificates. Load has read and checked CA and CRL; the server reads
// them again when it starts and on every reload.
type ClientAuth struct {
	Mode ClientAuthMode
	CA   string // absolute path of the PEM bundle client certificates must chain to; "" only in request mode
	CRL  string // absolute path of certificate revocation lists (PEM, one per CA, or one DER), each signed by a CA of CA; "" = none
	Pos  Pos    // where the section is written
}

// maxCRLBytes bounds a CRL file: large CAs publish lists of several MiB.
const maxCRLBytes = 16 << 20

var clientAuthKeys = sectionKey("client_auth", "Ask clients for TLS certificates (mutual TLS). The verified certificate is offered to access rules (client_cert), the access log, FastCGI (SSL_CLIENT_*) and proxied upstreams (Client-Cert, RFC 9440).",
	enumKey("mode", ClientAuthModes, "", `"require": refuse a client without a certificate that verifies against ca; "verify_if_given": accept one without, refuse one that does not verify; "request": ask, accept anything, and report whether it verified.`).must(),
	strKey("ca", "PEM file of the CA certificates client certificates must chain to; required unless mode is request."),
	strKey("crl", "Certificate revocation lists (PEM X509 CRL blocks, one per CA, or one DER list), each signed by a CA of ca: certificates whose issuer's list names their serial are refused. Read again on reload (SIGHUP)."),
)

// clientAuthSection decodes a client_auth mapping and checks its files.
// It returns nil when the section is unusable (already reported).
func (d *decoder) clientAuthSection(n *yaml.Node, path string) *ClientAuth {
	s := d.section(n, path, clientAuthKeys.names()...)
	if s == nil {
		return nil
	}
	a := &ClientAuth{Pos: Pos{deref(n).Line, deref(n).Column}}
	v := s.get("mode")
	if v == nil {
		if s.missing("mode") {
			d.errorf(s.node, join(path, "mode"), "missing required key; e.g. client_auth: {mode: require, ca: clients-ca.pem}")
		}
		return nil
	}
	mode, ok := d.enum(v, join(path, "mode"), ClientAuthModes...)
	if !ok {
		return nil
	}
	for i, m := range ClientAuthModes {
		if m == mode {
			a.Mode = ClientAuthMode(i + 1)
		}
	}
	caNode, crlNode := s.get("ca"), s.get("crl")
	if caNode == nil && a.Mode != ClientAuthRequest {
		d.errorf(s.node, join(path, "ca"), "missing required key: mode %s verifies client certificates against a CA; e.g. ca: clients-ca.pem", mode)
		return nil
	}
	if crlNode != nil && caNode == nil {
		d.errorf(deref(crlNode), join(path, "crl"), "a crl is checked against the CA that signed it: give ca too")
		return nil
	}
	var good bool
	if caNode != nil {
		if a.CA, good = d.filePath(caNode, join(path, "ca")); !good {
			return nil
		}
	}
	if crlNode != nil {
		if a.CRL, good = d.filePath(crlNode, join(path, "crl")); !good {
			return nil
		}
	}
	if a.CA == "" {
		return a
	}
	if _, where, msg := LoadClientTrust(a.CA, a.CRL); msg != "" {
		if where == "crl" {
			d.errorf(deref(crlNode), join(path, "crl"), "%s", msg)
		} else {
			d.errorf(deref(caNode), join(path, "ca"), "%s", msg)
		}
		return nil
	}
	return a
}

// filePath decodes a non-empty file name and resolves it against the
// config's directory.
func (d *decoder) filePath(n *yaml.Node, path string) (string, bool) {
	f, ok := d.str(n, path)
	if !ok {
		return "", false
	}
	if f == "" {
		d.errorf(deref(n), path, "expected a file path, got an empty string")
		return "", false
	}
	return d.resolve(f), true
}

// ClientTrust is what client certificates are verified against: the CA
// certificates of a client_auth's ca file and, when it names one, the
// revocation lists of its crl file, whose signatures have been checked
// against them.
// Immutable once loaded.
type ClientTrust struct {
	Roots *x509.CertPool         // the CA certificates
	CAs   []*x509.Certificate    // the same, in file order
	CRLs  []*x509.RevocationList // the revocation lists, each signed by a CA of CAs; none when there is no crl file
	Bad   map[string]struct{}    // what CRLs revoke, by issuer and serial (revokedKey)
}

// LoadClientTrust reads the CA bundle at caFile and, when crlFile is not
// "", the revocation list there, and reports what is wrong with them:
// where is "ca" or "crl" and msg names the file ("" when usable). It is
// safe for concurrent use; the result belongs to the caller.
func LoadClientTrust(caFile, crlFile string) (trust *ClientTrust, where, msg string) {
	data, msg := readPEM(caFile, "CA bundle")
	if msg != "" {
		return nil, "ca", msg
	}
	t := &ClientTrust{Roots: x509.NewCertPool()}
	for rest := data; len(rest) > 0; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, "ca", fmt.Sprintf("%s: certificate %d does not parse: %v", quote(caFile), len(t.CAs)+1, err)
		}
		t.CAs = append(t.CAs, c)
		t.Roots.AddCert(c)
	}
	if len(t.CAs) == 0 {
		return nil, "ca", fmt.Sprintf("%s holds no PEM CERTIFICATE block", quote(caFile))
	}
	if crlFile == "" {
		return t, "", ""
	}
	if msg := t.loadCRL(crlFile); msg != "" {
		return nil, "crl", msg
	}
	return t, "", ""
}

// loadCRL reads the revocation lists at file into t: one DER list, or
// PEM X509 CRL blocks (one per CA, as nginx's ssl_crl file may hold).
func (t *ClientTrust) loadCRL(file string) string {
	data, msg := readFileBounded(file, "revocation list", maxCRLBytes)
	if msg != "" {
		return msg
	}
	ders := [][]byte{data}
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("-----")) {
		ders = ders[:0]
		for rest := data; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if b.Type != "X509 CRL" {
				return fmt.Sprintf("%s: expected PEM X509 CRL blocks, got %s", quote(file), b.Type)
			}
			ders = append(ders, b.Bytes)
		}
	}
	if len(ders) == 0 {
		return fmt.Sprintf("%s: not a PEM or DER revocation list", quote(file))
	}
	t.Bad = map[string]struct{}{}
	for i, der := range ders {
		crl, err := x509.ParseRevocationList(der)
		if err != nil {
			return fmt.Sprintf("%s: revocation list %d: %v", quote(file), i+1, err)
		}
		if !t.signedByCA(crl) {
			return fmt.Sprintf("%s: revocation list %d (issuer %s) is not signed by any CA certificate of the ca file", quote(file), i+1, crl.Issuer)
		}
		t.CRLs = append(t.CRLs, crl)
		for _, e := range crl.RevokedCertificateEntries {
			if e.SerialNumber != nil {
				t.Bad[revokedKey(crl.RawIssuer, e.SerialNumber.String())] = struct{}{}
			}
		}
	}
	return ""
}

// signedByCA reports whether a CA certificate of t issued and signed crl.
func (t *ClientTrust) signedByCA(crl *x509.RevocationList) bool {
	for _, ca := range t.CAs {
		if bytes.Equal(ca.RawSubject, crl.RawIssuer) && crl.CheckSignatureFrom(ca) == nil {
			return true
		}
	}
	return false
}

// revokedKey is the key of Bad: the issuer's DER name and the serial.
func revokedKey(issuer []byte, serial string) string {
	return string(issuer) + "\x00" + serial
}

// Revoked reports whether a revocation list of t lists c: one of c's
// issuer lists its serial. Safe for concurrent use.
func (t *ClientTrust) Revoked(c *x509.Certificate) bool {
	if t == nil || len(t.Bad) == 0 || c == nil || c.SerialNumber == nil {
		return false
	}
	_, bad := t.Bad[revokedKey(c.RawIssuer, c.SerialNumber.String())]
	return bad
}
