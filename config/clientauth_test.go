package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testClientCA is a CA for client certificates and a revocation list it
// signed (listing serial 7), both PEM.
type testClientCA struct {
	caPEM, crlPEM []byte
}

func newTestClientCA(t *testing.T) testClientCA {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "clients CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	crl, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{Number: big.NewInt(1),
		ThisUpdate: now.Add(-time.Hour), NextUpdate: now.Add(time.Hour),
		RevokedCertificateEntries: []x509.RevocationListEntry{{SerialNumber: big.NewInt(7), RevocationTime: now}}}, ca, k)
	if err != nil {
		t.Fatal(err)
	}
	return testClientCA{caPEM: pemBlock("CERTIFICATE", der), crlPEM: pemBlock("X509 CRL", crl)}
}

// TestClientAuthDecode decodes client_auth on a listener and on one of
// its certificates, and checks the positioned errors of bad sections.
func TestClientAuthDecode(t *testing.T) {
	dir := t.TempDir()
	pair := newTestPair(t, "localhost")
	ca := newTestClientCA(t)
	other := newTestClientCA(t)
	for name, data := range map[string][]byte{
		"cert.pem": pair.leafPEM, "key.pem": pair.keyPEM,
		"ca.pem": ca.caPEM, "crl.pem": ca.crlPEM,
		"both.pem": append(append([]byte{}, ca.caPEM...), other.caPEM...), "both.crl": append(append([]byte{}, ca.crlPEM...), other.crlPEM...), "other.crl": other.crlPEM, "empty.pem": []byte("nothing\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "gale.yaml")
	doc := func(auth string) string {
		return "listen:\n  - address: 127.0.0.1:0\n    tls:\n      certificates: [{cert: cert.pem, key: key.pem}]\n      client_auth: " + auth + "\nroutes: [{path: /, respond: {}}]\n"
	}
	cfg, err := Parse([]byte(doc("{mode: require, ca: ca.pem, crl: crl.pem}")), file)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Listen[0].TLS.ClientAuth
	if a == nil || a.Mode != ClientAuthRequire || a.CA != filepath.Join(dir, "ca.pem") || a.CRL != filepath.Join(dir, "crl.pem") {
		t.Fatalf("decoded %+v", a)
	}
	cfg, err = Parse([]byte("listen:\n  - address: 127.0.0.1:0\n    tls:\n      certificates: [{cert: cert.pem, key: key.pem, client_auth: {mode: verify_if_given, ca: ca.pem}}]\nroutes: [{path: /, respond: {}}]\n"), file)
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Listen[0].TLS.Certificates[0].ClientAuth; a == nil || a.Mode != ClientAuthVerifyIfGiven || cfg.Listen[0].TLS.ClientAuth != nil {
		t.Fatalf("per-certificate client_auth: %+v", a)
	}
	if _, err := Parse([]byte(doc("{mode: request}")), file); err != nil {
		t.Fatalf("request without ca: %v", err)
	}
	for _, c := range []struct{ auth, want string }{
		{"{mode: require}", "gale.yaml:5:20: listen[0].tls.client_auth.ca: missing required key"},
		{"{mode: sometimes, ca: ca.pem}", "gale.yaml:5:27: listen[0].tls.client_auth.mode:"},
		{"{ca: ca.pem}", "listen[0].tls.client_auth.mode: missing required key"},
		{"{mode: require, ca: missing.pem}", "listen[0].tls.client_auth.ca: cannot read the CA bundle"},
		{"{mode: require, ca: empty.pem}", "listen[0].tls.client_auth.ca: " + quote(filepath.Join(dir, "empty.pem")) + " holds no PEM CERTIFICATE block"},
		{"{mode: require, ca: ca.pem, crl: other.crl}", "listen[0].tls.client_auth.crl: " + quote(filepath.Join(dir, "other.crl")) + ": revocation list 1 (issuer CN=clients CA) is not signed by any CA certificate of the ca file"},
		{"{mode: require, ca: ca.pem, crl: cert.pem}", "expected PEM X509 CRL blocks, got CERTIFICATE"},
		{"{mode: request, crl: crl.pem}", "listen[0].tls.client_auth.crl: a crl is checked against the CA"},
		{"{mode: require, ca: ca.pem, verify: yes}", "listen[0].tls.client_auth.verify: unknown key"},
	} {
		_, err := Parse([]byte(doc(c.auth)), file)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("client_auth: %s: got %v, want %q", c.auth, err, c.want)
		}
	}
}

// TestClientTrustRevoked: a crl file may hold a list per CA; a
// certificate is revoked by its own issuer's list only.
func TestClientTrustRevoked(t *testing.T) {
	dir := t.TempDir()
	a, b := newTestClientCA(t), newTestClientCA(t)
	caFile := filepath.Join(dir, "both.pem")
	crlFile := filepath.Join(dir, "both.crl")
	if err := os.WriteFile(caFile, append(append([]byte{}, a.caPEM...), b.caPEM...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crlFile, append(append([]byte{}, a.crlPEM...), b.crlPEM...), 0o644); err != nil {
		t.Fatal(err)
	}
	trust, where, msg := LoadClientTrust(caFile, crlFile)
	if msg != "" {
		t.Fatalf("%s: %s", where, msg)
	}
	if len(trust.CRLs) != 2 {
		t.Fatalf("%d lists", len(trust.CRLs))
	}
	for _, ca := range trust.CAs {
		if !trust.Revoked(&x509.Certificate{RawIssuer: ca.RawSubject, SerialNumber: big.NewInt(7)}) {
			t.Errorf("serial 7 of %s not revoked", ca.Subject)
		}
		if trust.Revoked(&x509.Certificate{RawIssuer: ca.RawSubject, SerialNumber: big.NewInt(8)}) {
			t.Errorf("serial 8 of %s revoked", ca.Subject)
		}
	}
	if trust.Revoked(&x509.Certificate{RawIssuer: []byte("someone else"), SerialNumber: big.NewInt(7)}) {
		t.Error("serial 7 of another issuer revoked")
	}
}
