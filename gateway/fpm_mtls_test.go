package gateway_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFPMClientCertificate: behind a listener with client_auth, PHP-FPM
// gets the client's certificate as nginx passes it (SSL_CLIENT_VERIFY,
// SSL_CLIENT_S_DN, SSL_CLIENT_I_DN, SSL_CLIENT_SERIAL,
// SSL_CLIENT_FINGERPRINT, SSL_CLIENT_CERT) and never a Client-Cert field
// the client sent (HTTP_CLIENT_CERT); a client without a certificate gets
// SSL_CLIENT_VERIFY NONE and nothing else.
func TestFPMClientCertificate(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "www"), map[string]string{"env.php": envScript})
	f := startFPM(t, dir, "a", false, 2)
	cert, key := writeCert(t, dir)
	clientCert, leaf := writeClientCert(t, dir)
	g := startGale(t, dir, `listen: [{address: "127.0.0.1:0", tls: {certificates: [{cert: `+cert+`, key: `+key+`}], client_auth: {mode: verify_if_given, ca: client.pem}}}]
routes:
  - path: /
    fastcgi: {to: "`+f.listen+`", root: www}
`, nil)
	get := func(certs ...tls.Certificate) envReply {
		t.Helper()
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs}} //nolint:gosec // the test's own certificate
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		req, _ := http.NewRequest("GET", "https://"+g.addr+"/env.php", nil)
		req.Header.Set("Client-Cert", ":Zm9yZ2Vk:")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return decodeEnv(t, string(b))
	}
	sum := sha256.Sum256(leaf.Raw)
	env := get(clientCert)
	for name, want := range map[string]string{
		"SSL_CLIENT_VERIFY":      "SUCCESS",
		"SSL_CLIENT_S_DN":        "CN=php client,O=gale",
		"SSL_CLIENT_I_DN":        "CN=php client,O=gale",
		"SSL_CLIENT_SERIAL":      "2A",
		"SSL_CLIENT_FINGERPRINT": hex.EncodeToString(sum[:]),
		"SSL_CLIENT_CERT":        string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})),
	} {
		if got := env.Server[name]; got != want {
			t.Errorf("%s = %v, want %q", name, got, want)
		}
	}
	if v, ok := env.Server["HTTP_CLIENT_CERT"]; ok {
		t.Errorf("the client's Client-Cert reached PHP: %v", v)
	}
	env = get()
	if env.Server["SSL_CLIENT_VERIFY"] != "NONE" {
		t.Errorf("without a certificate SSL_CLIENT_VERIFY = %v, want NONE", env.Server["SSL_CLIENT_VERIFY"])
	}
	for name := range env.Server {
		if strings.HasPrefix(name, "SSL_CLIENT_") && name != "SSL_CLIENT_VERIFY" {
			t.Errorf("without a certificate PHP got %s", name)
		}
	}
}

// writeClientCert writes a self-signed client certificate (serial 42) as
// dir/client.pem, the CA file of the listener, and returns it with its
// key.
func writeClientCert(t *testing.T, dir string) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: "php client", Organization: []string{"gale"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	if err := os.WriteFile(filepath.Join(dir, "client.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k, Leaf: leaf}, leaf
}
