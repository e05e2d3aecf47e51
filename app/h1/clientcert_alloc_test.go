//go:build !race

package h1

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"runtime"
	"testing"
	"time"

	"gale/clientcert"
)

// TestProxyClientCertAllocs is TestProxyAllocs from a client that
// presented a certificate: its Client-Cert and Client-Cert-Chain fields
// (RFC 9440, described once per connection) go upstream in place of the
// one the client sent, and forwarding still allocates nothing.
func TestProxyClientCertAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f := newProxyFixture(t, `  - path: /api/
    proxy: {to: ["127.0.0.1:9"]}
`)
	f.req = []byte("GET /api/users HTTP/1.1\r\nHost: example.com\r\nClient-Cert: :Zm9yZ2Vk:\r\nAccept: */*\r\n\r\n")
	f.resp = []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	sent := func() int {
		before := f.up.written
		f.exchange(t)
		return f.up.written - before
	}
	f.exchange(t) // dials, grows the buffers
	without := sent()
	leaf, inter := selfSigned(t, "client"), selfSigned(t, "intermediate")
	f.cs.Cert = clientcert.New([]*x509.Certificate{leaf, inter}, "")
	f.exchange(t)
	with := sent()
	want := len("Client-Cert: \r\nClient-Cert-Chain: \r\n") + len(f.cs.Cert.Field) + len(f.cs.Cert.ChainField)
	if with-without != want {
		t.Errorf("the certificate added %d bytes upstream, want %d (the client's own field dropped)", with-without, want)
	}
	if n := testing.AllocsPerRun(200, func() { f.exchange(t) }); n != 0 {
		t.Fatalf("%v allocations per proxied request with a client certificate, want 0", n)
	}
}

func selfSigned(t *testing.T, cn string) *x509.Certificate {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

// TestFastCGIClientCertAllocs is TestFastCGIAllocs over TLS from a client
// that presented a certificate: the SSL_CLIENT_* variables (the PEM
// among them) are sent and the request still allocates nothing.
func TestFastCGIClientCertAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f := newFastCGIFixture(t, `  - path: /
    fastcgi: {to: "127.0.0.1:9", root: www}
`)
	f.req = []byte("GET /index.php HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n")
	f.resp = cgiResponse("Content-type: text/html; charset=UTF-8\r\n", "Hello, World!")
	f.cs.SetListener(true, nil, true)
	sent := func() int {
		before := f.app.written
		f.exchange(t)
		return f.app.written - before
	}
	f.exchange(t) // dials, grows the buffers
	without := sent()
	f.cs.Cert = clientcert.New([]*x509.Certificate{selfSigned(t, "client")}, "")
	f.exchange(t)
	if with := sent(); with-without < len(f.cs.Cert.PEM) {
		t.Errorf("the certificate added %d bytes to the params, want at least its PEM (%d)", with-without, len(f.cs.Cert.PEM))
	}
	if n := testing.AllocsPerRun(200, func() { f.exchange(t) }); n != 0 {
		t.Fatalf("%v allocations per FastCGI request with a client certificate, want 0", n)
	}
}
