package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testPair is a generated ECDSA P-256 certificate (signed by a generated
// CA, through an intermediate when chained) and its key, PEM encoded.
type testPair struct {
	leafPEM, interPEM, keyPEM []byte
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func newTestPair(t *testing.T, names ...string) testPair {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	sign := func(tmpl, parent *x509.Certificate, pub, priv any) *x509.Certificate {
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, priv)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	now := time.Now()
	caKey, interKey, leafKey := key(), key(), key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	ca := sign(caTmpl, caTmpl, &caKey.PublicKey, caKey)
	interTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "test intermediate"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	inter := sign(interTmpl, ca, &interKey.PublicKey, caKey)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), DNSNames: names,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leaf := sign(leafTmpl, inter, &leafKey.PublicKey, interKey)
	keyDER, err := x509.MarshalPKCS8PrivateKey(leafKey)
	if err != nil {
		t.Fatal(err)
	}
	return testPair{leafPEM: pemBlock("CERTIFICATE", leaf.Raw), interPEM: pemBlock("CERTIFICATE", inter.Raw),
		keyPEM: pemBlock("PRIVATE KEY", keyDER)}
}

// TestTLSListeners parses configs with TLS listeners over generated
// certificate files and compares the outcome, rendered as in the golden
// files, with the expectation.
func TestTLSListeners(t *testing.T) {
	dir := t.TempDir()
	a := newTestPair(t, "a.example", "*.a.example")
	b := newTestPair(t, "b.example")
	files := map[string][]byte{
		"a-full.pem":     append(append([]byte{}, a.leafPEM...), a.interPEM...),
		"a-reversed.pem": append(append([]byte{}, a.interPEM...), a.leafPEM...),
		"a.key":          a.keyPEM,
		"b.pem":          b.leafPEM,
		"b.key":          b.keyPEM,
		"bad.key":        []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
		"bad.pem":        []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
		"empty.pem":      nil,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const tail = "routes:\n  - path: /\n    respond: {}\n"
	tests := []struct {
		name, listen string
		want         string // the rendered outcome; for configs only the Listen part
		summary      string // for configs: lines of Summary
	}{
		{
			name: "two certificates and a redirect",
			listen: `listen:
  - {address: "127.0.0.1:8080", redirect_to_https: true}
  - address: "127.0.0.1:8443"
    tls:
      certificates: [{cert: a-full.pem, key: a.key}, {cert: b.pem, key: b.key}]
      min_version: 1.3
      handshake_timeout: 5s
      client_hello_timeout: 2s
      max_handshakes: 64
      max_handshakes_per_address: 8
`,
			want: `"Listen": [
    {
      "Address": "127.0.0.1:8080",
      "RedirectToHTTPS": {
        "Listener": 1
      },
      "Protocols": "[h1, h2c]",
      "HTTP3": false,
      "ProxyProtocol": false,
      "MaxConnsPerAddr": 0,
      "Pos": {
        "Line": 2,
        "Col": 5
      }
    },
    {
      "Address": "127.0.0.1:8443",
      "TLS": {
        "Certificates": [
          {
            "Cert": "$DIR/a-full.pem",
            "Key": "$DIR/a.key",
            "Pos": {
              "Line": 5,
              "Col": 22
            }
          },
          {
            "Cert": "$DIR/b.pem",
            "Key": "$DIR/b.key",
            "Pos": {
              "Line": 5,
              "Col": 54
            }
          }
        ],
        "MinVersion": "1.3",
        "HandshakeTimeout": "5s",
        "ClientHelloTimeout": "2s",
        "MaxHandshakes": 64,
        "MaxHandshakesPerAddress": 8
      },
      "Protocols": "[h1, h2]",
      "HTTP3": false,
      "ProxyProtocol": false,
      "MaxConnsPerAddr": 0,
      "Pos": {
        "Line": 3,
        "Col": 5
      }
    }
  ],`,
			summary: "listen  127.0.0.1:8080  redirect to https\nlisten  127.0.0.1:8443  tls (2 certificates)\n",
		},
		{
			name:   "defaults",
			listen: "listen: {address: \":8443\", tls: {certificates: [{cert: b.pem, key: b.key}]}}\n",
			want: `"TLS": {
        "Certificates": [
          {
            "Cert": "$DIR/b.pem",
            "Key": "$DIR/b.key",
            "Pos": {
              "Line": 1,
              "Col": 49
            }
          }
        ],
        "MinVersion": "1.2",
        "HandshakeTimeout": "10s",
        "ClientHelloTimeout": "5s",
        "MaxHandshakes": 4096,
        "MaxHandshakesPerAddress": 256
      },`,
		},
		{
			name:   "shares follow the limits",
			listen: "listen: {address: \":8443\", tls: {certificates: [{cert: b.pem, key: b.key}], handshake_timeout: 2s, max_handshakes: 2}}\n",
			want: `"HandshakeTimeout": "2s",
        "ClientHelloTimeout": "2s",
        "MaxHandshakes": 2,
        "MaxHandshakesPerAddress": 1`,
		},
		{
			name: "shares beyond the limits",
			listen: `listen:
  - {address: ":1", tls: {certificates: [{cert: b.pem, key: b.key}], client_hello_timeout: 11s}}
  - {address: ":2", tls: {certificates: [{cert: b.pem, key: b.key}], handshake_timeout: 3s, client_hello_timeout: 3500ms}}
  - {address: ":3", tls: {certificates: [{cert: b.pem, key: b.key}], max_handshakes_per_address: 4097}}
  - {address: ":4", tls: {certificates: [{cert: b.pem, key: b.key}], max_handshakes: 8, max_handshakes_per_address: 9}}
  - {address: ":5", tls: {certificates: [{cert: b.pem, key: b.key}], client_hello_timeout: 0s, max_handshakes_per_address: 0}}
`,
			want: `x.yaml:2:92: listen[0].tls.client_hello_timeout: must not exceed handshake_timeout (10s), got "11s"
x.yaml:3:115: listen[1].tls.client_hello_timeout: must not exceed handshake_timeout (3s), got "3500ms"
x.yaml:4:98: listen[2].tls.max_handshakes_per_address: must not exceed max_handshakes (4096), got 4097
x.yaml:5:117: listen[3].tls.max_handshakes_per_address: must not exceed max_handshakes (8), got 9
x.yaml:6:92: listen[4].tls.client_hello_timeout: must be positive, got "0s"
x.yaml:6:124: listen[4].tls.max_handshakes_per_address: expected a number from 1 to 1048576, got 0
`,
		},
		{
			name:   "key of another certificate",
			listen: "listen: {address: \":8443\", tls: {certificates: [{cert: a-full.pem, key: b.key}]}}\n",
			want:   `x.yaml:1:73: listen.tls.certificates[0].key: the private key in "$DIR/b.key" does not match the certificate in "$DIR/a-full.pem" (the first certificate of the chain must be the one the key belongs to)` + "\n",
		},
		{
			name:   "chain in the wrong order",
			listen: "listen: {address: \":8443\", tls: {certificates: [{cert: a-reversed.pem, key: a.key}]}}\n",
			want:   `x.yaml:1:77: listen.tls.certificates[0].key: the private key in "$DIR/a.key" does not match the certificate in "$DIR/a-reversed.pem" (the first certificate of the chain must be the one the key belongs to)` + "\n",
		},
		{
			name: "unusable files",
			listen: `listen:
  - {address: ":1", tls: {certificates: [{cert: b.pem, key: bad.key}]}}
  - {address: ":2", tls: {certificates: [{cert: bad.pem, key: b.key}]}}
  - {address: ":3", tls: {certificates: [{cert: empty.pem, key: b.key}]}}
  - {address: ":4", tls: {certificates: [{cert: b.pem, key: b.pem}]}}
  - {address: ":5", tls: {certificates: [{cert: b.pem, key: nope/b.key}]}}
  - {address: ":6", tls: {certificates: [{cert: ., key: b.key}]}}
`,
			want: `x.yaml:2:61: listen[0].tls.certificates[0].key: "$DIR/bad.key": tls: failed to parse private key
x.yaml:3:49: listen[1].tls.certificates[0].cert: "$DIR/bad.pem": x509: malformed certificate
x.yaml:4:49: listen[2].tls.certificates[0].cert: "$DIR/empty.pem" holds no PEM CERTIFICATE block
x.yaml:5:61: listen[3].tls.certificates[0].key: "$DIR/b.pem" holds no PEM PRIVATE KEY block
x.yaml:6:61: listen[4].tls.certificates[0].key: cannot read the private key "$DIR/nope/b.key": no such file or directory
x.yaml:7:49: listen[5].tls.certificates[0].cert: the certificate chain "$DIR" is not a regular file
`,
		},
		{
			name: "protocols of TLS listeners",
			listen: `listen:
  - {address: ":1", tls: {certificates: [{cert: b.pem, key: b.key}]}, protocols: [h2]}
  - {address: ":2", tls: {certificates: [{cert: b.pem, key: b.key}]}, protocols: [h1]}
  - {address: ":3", tls: {certificates: [{cert: b.pem, key: b.key}]}, protocols: [h2, h1]}
  - {address: ":4", protocols: [h2c]}
`,
			want: `"MaxHandshakesPerAddress": 256
      },
      "Protocols": "[h2]",`,
			summary: "listen  :1  tls (1 certificate)  protocols [h2]\nlisten  :2  tls (1 certificate)  protocols [h1]\nlisten  :3  tls (1 certificate)\nlisten  :4  protocols [h2c]\n",
		},
		{
			name: "protocols that a TLS listener cannot speak",
			listen: `listen:
  - {address: ":1", tls: {certificates: [{cert: b.pem, key: b.key}]}, protocols: [h1, h2c]}
  - {address: ":2", tls: {certificates: [{cert: b.pem, key: b.key}]}, protocols: [h2, H2, "h2 "]}
  - {address: ":3", tls: {certificates: [{cert: b.pem, key: b.key}]}, protocols: [h2, h2]}
  - {address: ":4", tls: {certificates: [{cert: b.pem, key: b.key}]}, protocols: []}
  - {address: ":5", tls: {certificates: [{cert: b.pem, key: b.key}]}, protocols: ["http/1.1"]}
`,
			want: `x.yaml:2:87: listen[0].protocols[1]: h2c is HTTP/2 over cleartext; a TLS listener speaks HTTP/2 as h2
x.yaml:3:87: listen[1].protocols[1]: expected one of h1, h2, h2c, got "H2"; did you mean "h2"?
x.yaml:3:91: listen[1].protocols[2]: expected one of h1, h2, h2c, got "h2 "; did you mean "h2"?
x.yaml:4:87: listen[2].protocols[1]: h2 is listed twice; first at line 4, column 83
x.yaml:5:82: listen[3].protocols: expected at least one of h1, h2, h2c, e.g. [h1, h2]
x.yaml:6:83: listen[4].protocols[0]: expected one of h1, h2, h2c, got "http/1.1"
`,
		},
		{
			name:   "http3 on a plain listener",
			listen: "listen: {address: \":8080\", http3: true}\n",
			want:   `x.yaml:1:28: listen.http3: HTTP/3 runs over QUIC, whose handshake is TLS 1.3: add a tls section with certificates to this listener, or remove http3` + "\n",
		},
		{
			name:   "http3 spelled as a string",
			listen: "listen: {address: \":8443\", http3: \"yes\", tls: {certificates: [{cert: b.pem, key: b.key}]}}\n",
			want:   `x.yaml:1:35: listen.http3: expected true or false, got "yes"` + "\n",
		},
		{
			name:    "http3 on a TLS listener",
			listen:  "listen: {address: \":8443\", http3: true, tls: {certificates: [{cert: b.pem, key: b.key}]}}\n",
			want:    `"HTTP3": true,`,
			summary: "listen  :8443  tls (1 certificate)  http3 (udp)",
		},
		{
			name:   "tls and redirect together",
			listen: "listen: {address: \":8443\", redirect_to_https: true, tls: {certificates: [{cert: b.pem, key: b.key}]}}\n",
			want:   `x.yaml:1:28: listen.redirect_to_https: a TLS listener serves the routes itself; redirect_to_https belongs on a plain listener` + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, "x.yaml")
			cfg, err := Parse([]byte(tt.listen+tail), file)
			got := renderOutcome(cfg, err, file, dir)
			if !strings.Contains(got, tt.want) {
				t.Errorf("outcome:\n%s\nwant it to contain:\n%s", got, tt.want)
			}
			if cfg != nil && tt.summary != "" {
				if got := strings.Join(cfg.Summary(), "\n"); !strings.Contains(got, tt.summary) {
					t.Errorf("Summary:\n%s\nwant it to contain:\n%s", got, tt.summary)
				}
			}
		})
	}
}

// TestLoadKeyPairChain checks that the whole chain of a fullchain file is
// loaded, leaf first, with the leaf parsed.
func TestLoadKeyPairChain(t *testing.T) {
	dir := t.TempDir()
	p := newTestPair(t, "a.example")
	certFile, keyFile := filepath.Join(dir, "full.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, append(append([]byte{}, p.leafPEM...), p.interPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, p.keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c, where, msg := LoadKeyPair(certFile, keyFile)
	if msg != "" {
		t.Fatalf("%s: %s", where, msg)
	}
	if len(c.Certificate) != 2 || c.Leaf == nil || c.Leaf.DNSNames[0] != "a.example" {
		t.Fatalf("chain of %d, leaf %v", len(c.Certificate), c.Leaf)
	}
}

// TestListenerObjectGate checks that the listener object form can still be
// gated: a feature gate on "listen[]{}" rejects it as not supported yet.
func TestListenerObjectGate(t *testing.T) {
	_, err := parse([]byte("listen: [{address: \":8443\"}]\nroutes: [{path: /, respond: {}}]\n"), "x.yaml",
		map[string]string{"listen[]{}": "TLS listeners"})
	if err == nil || err.Error() != "x.yaml:1:10: listen[0]: not supported yet: TLS listeners" {
		t.Fatalf("err = %v", err)
	}
}
