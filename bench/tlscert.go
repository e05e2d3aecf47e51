package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// benchCert is the one certificate every server presents on the TLS
// workloads, so that no server pays for a larger key or a longer chain
// than another.
type benchCert struct {
	CertFile string `json:"cert_file"` // PEM certificate (self-signed, also its own root)
	KeyFile  string `json:"key_file"`  // PEM PKCS #8 private key
	KeyType  string `json:"key_type"`  // "ECDSA P-256"
	SHA256   string `json:"sha256"`    // of the certificate's DER
	pool     *x509.CertPool
}

// writeBenchCert generates an ECDSA P-256 certificate for 127.0.0.1 and
// localhost, valid for a day, and writes it and its key into dir. The key
// is fresh on every run; only its type and size matter to the measurement.
func writeBenchCert(dir string) (*benchCert, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "gale bench"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	c := &benchCert{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"),
		KeyType: "ECDSA P-256", SHA256: sha256Hex(der), pool: x509.NewCertPool()}
	if err := os.WriteFile(c.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("bench: parsing the generated certificate: %v", err)
	}
	c.pool.AddCert(parsed)
	return c, nil
}

// clientConfig returns the TLS configuration of the response check: TLS
// 1.3 only, the bench certificate as the only root, and h2 as the only
// protocol offered, so that a server that cannot speak HTTP/2 over TLS 1.3
// fails the check instead of being measured on something else.
func (c *benchCert) clientConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: c.pool, ServerName: "127.0.0.1", NextProtos: []string{"h2"}}
}
