package gateway_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeCert writes a self-signed certificate for 127.0.0.1 and its key
// under dir.
func writeCert(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(k)
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	_ = os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return cert, key
}

// TestFPMOverTLSAndTrustedProxies: over TLS a script sees HTTPS=on and
// the https scheme; behind a trusted proxy, REMOTE_ADDR is the address
// X-Forwarded-For gives, and from anyone else the field changes nothing.
func TestFPMOverTLSAndTrustedProxies(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "www"), map[string]string{"env.php": envScript, "untrusted/env.php": envScript})
	f := startFPM(t, dir, "a", false, 2)
	cert, key := writeCert(t, dir)
	cfg := `
routes:
  - path: /
    fastcgi:
      to: "` + f.listen + `"
      root: www
      trusted_proxies: [127.0.0.1]
  - path: /untrusted/
    fastcgi:
      to: "` + f.listen + `"
      root: www
`
	g := startGale(t, dir, "listen: [{address: \"127.0.0.1:0\", tls: {certificates: [{cert: "+cert+", key: "+key+"}]}}]\n"+cfg, nil)
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // the test's own certificate
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	get := func(path, xff string) envReply {
		t.Helper()
		req, _ := http.NewRequest("GET", "https://"+g.addr+path, nil)
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return decodeEnv(t, string(b))
	}
	env := get("/env.php", "203.0.113.9, 127.0.0.1")
	if env.Server["HTTPS"] != "on" || env.Server["REQUEST_SCHEME"] != "https" || env.Server["REMOTE_ADDR"] != "203.0.113.9" {
		t.Errorf("trusted: HTTPS %v scheme %v REMOTE_ADDR %v", env.Server["HTTPS"], env.Server["REQUEST_SCHEME"], env.Server["REMOTE_ADDR"])
	}
	env = get("/untrusted/env.php", "203.0.113.9")
	if env.Server["REMOTE_ADDR"] != "127.0.0.1" {
		t.Errorf("untrusted: REMOTE_ADDR %v", env.Server["REMOTE_ADDR"])
	}
}
