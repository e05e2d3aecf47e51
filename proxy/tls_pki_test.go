package proxy_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testCA is a certificate authority made by a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // its certificate, PEM
	pool *x509.CertPool
}

// leaf is a certificate issued by a testCA, with its files.
type leaf struct {
	pair               tls.Certificate
	certFile, keyFile  string
	certPEM, keyPEMRaw []byte
}

var serial int64 = 100

func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{cert: cert, key: key, file: filepath.Join(dir, name+".pem"), pool: x509.NewCertPool()}
	ca.pool.AddCert(cert)
	writeFile(t, ca.file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return ca
}

// issue makes a certificate for names (DNS names, or IP addresses),
// valid from notBefore to notAfter, for a server or a client.
func (ca *testCA) issue(t *testing.T, dir, file string, client bool, notAfter time.Time, names ...string) *leaf {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: notAfter.Add(-2 * time.Hour), NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	l := &leaf{certFile: filepath.Join(dir, file+".pem"), keyFile: filepath.Join(dir, file+".key"),
		certPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEMRaw: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})}
	writeFile(t, l.certFile, l.certPEM)
	writeFile(t, l.keyFile, l.keyPEMRaw)
	l.pair, err = tls.X509KeyPair(l.certPEM, l.keyPEMRaw)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// pki is what the TLS upstream tests use: a CA for servers and one for
// clients, a server certificate for app.test (and 127.0.0.1), an expired
// one, a client certificate, and a CA nobody uses.
type pki struct {
	dir                   string
	serverCA, clientCA    *testCA
	otherCA               *testCA
	server, expired       *leaf
	client, strangeClient *leaf
}

func newPKI(t *testing.T) *pki {
	dir := t.TempDir()
	p := &pki{dir: dir}
	p.serverCA = newTestCA(t, dir, "server-ca")
	p.clientCA = newTestCA(t, dir, "client-ca")
	p.otherCA = newTestCA(t, dir, "other-ca")
	soon := time.Now().Add(time.Hour)
	p.server = p.serverCA.issue(t, dir, "server", false, soon, "app.test", "127.0.0.1")
	p.expired = p.serverCA.issue(t, dir, "expired", false, time.Now().Add(-time.Minute), "app.test", "127.0.0.1")
	p.client = p.clientCA.issue(t, dir, "client", true, soon, "gale.client")
	p.strangeClient = p.otherCA.issue(t, dir, "strange", true, soon, "gale.client")
	return p
}
