package app

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
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testCA is a generated root and intermediate CA (ECDSA P-256) that
// issues leaf certificates for the TLS tests.
type testCA struct {
	t         testing.TB
	root      *x509.Certificate
	rootKey   *ecdsa.PrivateKey
	inter     *x509.Certificate
	interKey  *ecdsa.PrivateKey
	pool      *x509.CertPool // trusts the root only: verifying needs the intermediate from the server
	rootPEM   []byte
	serial    atomic.Int64
	notBefore time.Time
	notAfter  time.Time
	interPEM  []byte
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	ca := &testCA{t: t, notBefore: time.Now().Add(-time.Hour), notAfter: time.Now().Add(24 * time.Hour)}
	ca.serial.Store(100)
	ca.rootKey = genKey(t)
	rootTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gale test root"},
		NotBefore: ca.notBefore, NotAfter: ca.notAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	ca.root = ca.sign(rootTmpl, rootTmpl, &ca.rootKey.PublicKey, ca.rootKey)
	ca.interKey = genKey(t)
	interTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "gale test intermediate"},
		NotBefore: ca.notBefore, NotAfter: ca.notAfter,
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	ca.inter = ca.sign(interTmpl, ca.root, &ca.interKey.PublicKey, ca.rootKey)
	ca.pool = x509.NewCertPool()
	ca.pool.AddCert(ca.root)
	ca.rootPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.root.Raw})
	ca.interPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.inter.Raw})
	return ca
}

func genKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (ca *testCA) sign(tmpl, parent *x509.Certificate, pub, priv any) *x509.Certificate {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, priv)
	if err != nil {
		ca.t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		ca.t.Fatal(err)
	}
	return c
}

// issue writes a leaf for names (DNS names or IP literals), signed by the
// intermediate, as dir/base.pem (leaf then intermediate) and dir/base.key.
// It returns the leaf.
func (ca *testCA) issue(dir, base string, names ...string) *x509.Certificate {
	key := genKey(ca.t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial.Add(1)), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: ca.notBefore, NotAfter: ca.notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	leaf := ca.sign(tmpl, ca.inter, &key.PublicKey, ca.interKey)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		ca.t.Fatal(err)
	}
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}), ca.interPEM...)
	// Write through a temporary name and rename, as certificate tools do,
	// so that a poll never sees a half-written file.
	writeAtomic(ca.t, filepath.Join(dir, base+".pem"), chain)
	writeAtomic(ca.t, filepath.Join(dir, base+".key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	return leaf
}

func writeAtomic(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// tlsTestServer is a running server with a TLS listener (first) and the
// CA that issued its certificates.
type tlsTestServer struct {
	*testServer
	ca      *testCA
	tlsAddr string
}

// startTLSServer issues a leaf for "localhost" and 127.0.0.1 (cert.pem and
// cert.key in a temp dir) and runs yamlText from that dir, with "$CERT"
// standing for {cert: cert.pem, key: cert.key}. The first listener must be
// the TLS one. files go under site/. extra runs before the config is
// loaded (to issue more certificates into dir).
func startTLSServer(t *testing.T, yamlText string, files map[string]string, extra func(ca *testCA, dir string)) *tlsTestServer {
	t.Helper()
	ca := newTestCA(t)
	dir := t.TempDir()
	ca.issue(dir, "cert", "localhost", "127.0.0.1")
	if extra != nil {
		extra(ca, dir)
	}
	site := filepath.Join(dir, "site")
	if err := os.MkdirAll(site, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		writeSettled(t, filepath.Join(site, name), []byte(body))
	}
	yamlText = strings.ReplaceAll(yamlText, "$CERT", "{cert: cert.pem, key: cert.key}")
	ts := runServer(t, writeConfig(t, dir, yamlText), dir)
	return &tlsTestServer{testServer: ts, ca: ca, tlsAddr: ts.srv.Addrs()[0]}
}

// clientConfig trusts the test root only, for serverName.
func (ts *tlsTestServer) clientConfig(serverName string) *tls.Config {
	return &tls.Config{RootCAs: ts.ca.pool, ServerName: serverName}
}

// fragmented re-frames the handshake bytes of a one-record ClientHello
// into records of at most n payload bytes.
func fragmented(hello []byte, n int) []byte {
	const recordHeaderLen = 5
	var out []byte
	for p := hello[recordHeaderLen:]; len(p) > 0; {
		k := min(n, len(p))
		out = append(out, hello[0], hello[1], hello[2], byte(k>>8), byte(k))
		out = append(out, p[:k]...)
		p = p[k:]
	}
	return out
}
