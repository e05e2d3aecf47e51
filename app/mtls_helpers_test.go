package app

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"path/filepath"
	"testing"
	"time"
)

// clientPKI is what the client certificate tests use: the CA of the
// clients (a root and an intermediate, both in clients-ca.pem, the
// intermediate signing leaves and the revocation list clients.crl),
// and a CA the server does not trust.
type clientPKI struct {
	ca, stranger *testCA
	dir          string
}

// newClientPKI writes clients-ca.pem and an empty clients.crl into dir.
func newClientPKI(t *testing.T, dir string) *clientPKI {
	p := &clientPKI{ca: newTestCA(t), stranger: newTestCA(t), dir: dir}
	writeAtomic(t, filepath.Join(dir, "clients-ca.pem"), append(append([]byte{}, p.ca.rootPEM...), p.ca.interPEM...))
	p.revoke(t)
	return p
}

// client issues a client certificate for cn (and an email SAN) from ca,
// written as dir/base.pem (leaf, then the intermediate) and dir/base.key.
func (p *clientPKI) client(t *testing.T, ca *testCA, base, cn string) (*x509.Certificate, tls.Certificate) {
	t.Helper()
	key := genKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial.Add(1)), Subject: pkix.Name{CommonName: cn, Organization: []string{"gale tests"}},
		NotBefore: ca.notBefore, NotAfter: ca.notAfter, EmailAddresses: []string{cn + "@example.com"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	leaf := ca.sign(tmpl, ca.inter, &key.PublicKey, ca.interKey)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}), ca.interPEM...)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	writeAtomic(t, filepath.Join(p.dir, base+".pem"), chain)
	writeAtomic(t, filepath.Join(p.dir, base+".key"), keyPEM)
	pair, err := tls.X509KeyPair(chain, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return leaf, pair
}

// revoke writes clients.crl, signed by the clients' intermediate, listing
// the serials of certs.
func (p *clientPKI) revoke(t *testing.T, certs ...*x509.Certificate) {
	t.Helper()
	now := time.Now()
	tmpl := &x509.RevocationList{Number: big.NewInt(now.UnixNano()), ThisUpdate: now.Add(-time.Minute), NextUpdate: now.Add(time.Hour)}
	for _, c := range certs {
		tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries, x509.RevocationListEntry{SerialNumber: c.SerialNumber, RevocationTime: now})
	}
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, p.ca.inter, p.ca.interKey)
	if err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, filepath.Join(p.dir, "clients.crl"), pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}))
}

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
