package clientcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

func cert(t *testing.T, serial int64, tmpl *x509.Certificate) *x509.Certificate {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(serial)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

// TestNew: the description nginx users expect of each field, RFC 9440's
// byte sequences, and names matched as access rules match them.
func TestNew(t *testing.T) {
	u, _ := url.Parse("spiffe://example.org/ns/prod/sa/api")
	leaf := cert(t, 0xBEEF, &x509.Certificate{Subject: pkix.Name{CommonName: "api", Organization: []string{"Example"}},
		DNSNames: []string{"api.example.com"}, EmailAddresses: []string{"ops@example.com"}, URIs: []*url.URL{u},
		IPAddresses: []net.IP{net.ParseIP("10.0.0.7")}})
	inter := cert(t, 2, &x509.Certificate{Subject: pkix.Name{CommonName: "inter"}})
	in := New([]*x509.Certificate{leaf, inter}, "")
	if in.Result != "SUCCESS" || in.Verify != Success || in.Subject != "CN=api,O=Example" || in.Serial != "BEEF" || len(in.Fingerprint) != 64 {
		t.Errorf("%+v", in)
	}
	if want := ":" + base64.StdEncoding.EncodeToString(leaf.Raw) + ":"; string(in.Field) != want {
		t.Errorf("Client-Cert %s, want %s", in.Field, want)
	}
	if want := ":" + base64.StdEncoding.EncodeToString(inter.Raw) + ":"; string(in.ChainField) != want {
		t.Errorf("Client-Cert-Chain %s, want %s", in.ChainField, want)
	}
	if !strings.HasPrefix(in.PEM, "-----BEGIN CERTIFICATE-----\n") {
		t.Errorf("PEM %q", in.PEM)
	}
	for name, want := range map[string]bool{"api": true, "API.example.com": true, "OPS@example.com": true,
		u.String(): true, "10.0.0.7": true, "example.com": false, "": false, "Spiffe://example.org/ns/prod/sa/api": false} {
		if in.HasName(name) != want {
			t.Errorf("HasName(%q) = %v", name, !want)
		}
	}
	failed := New([]*x509.Certificate{leaf}, "x509: certificate signed by unknown authority\n")
	if failed.Verify != Failed || failed.Result != "FAILED:x509: certificate signed by unknown authority " || failed.ChainField != nil {
		t.Errorf("%+v", failed)
	}
	var none *Info
	if none.ResultOrNone() != "NONE" {
		t.Error(none.ResultOrNone())
	}
}
