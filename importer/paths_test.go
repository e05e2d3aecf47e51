package importer

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
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// materialize moves every file system path of a converted config under
// dir and creates what it names there (directories, an htpasswd file, a
// certificate and its key, error pages), so that the config loads on a
// machine without /var/www or /etc/ssl: config.Load checks that they
// exist.
func materialize(t *testing.T, y []byte, dir string) []byte {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(y, &doc); err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := selfSigned(t)
	var walk func(n *yaml.Node, key string)
	walk = func(n *yaml.Node, key string) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, key)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if key == "error_pages" {
					k = "error_page"
				}
				walk(n.Content[i+1], k)
			}
		case yaml.ScalarNode:
			var body []byte
			switch key {
			case "root":
			case "htpasswd":
				body = []byte("alice:$2y$05$abcdefghijklmnopqrstuu5i8Qm3pA0m6v9Ykq7y5mW1fTg2Y6e5K\n")
			case "cert":
				body = certPEM
			case "key":
				body = keyPEM
			case "error_page":
				body = []byte("error page\n")
			default:
				return
			}
			p := filepath.Join(dir, n.Value)
			n.Value = p
			if body == nil {
				must(t, os.MkdirAll(p, 0o755))
				return
			}
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, os.WriteFile(p, body, 0o600))
		}
	}
	walk(&doc, "")
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// selfSigned makes a certificate for localhost and its key, in PEM.
func selfSigned(t *testing.T) ([]byte, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	must(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}
