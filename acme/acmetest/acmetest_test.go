package acmetest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/acme"
)

// challengeServer answers HTTP-01 on one listener and TLS-ALPN-01 on another,
// from responses registered per token / per name.
type challengeServer struct {
	httpLn, tlsLn net.Listener

	mu       sync.Mutex
	http01   map[string]string           // token -> body
	tlsalpn1 map[string]*tls.Certificate // name -> challenge certificate
}

func newChallengeServer(t *testing.T) *challengeServer {
	t.Helper()
	cs := &challengeServer{
		http01:   make(map[string]string),
		tlsalpn1: make(map[string]*tls.Certificate),
	}
	var err error
	if cs.httpLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if cs.tlsLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	httpSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.URL.Path, "/.well-known/acme-challenge/")
		cs.mu.Lock()
		body, found := cs.http01[token]
		cs.mu.Unlock()
		if !ok || !found {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	})}
	tlsCfg := &tls.Config{
		NextProtos: []string{acme.ALPNProto},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			cs.mu.Lock()
			defer cs.mu.Unlock()
			if c := cs.tlsalpn1[hello.ServerName]; c != nil {
				return c, nil
			}
			return nil, errors.New("no challenge certificate for " + hello.ServerName)
		},
	}
	tlsSrv := &http.Server{Handler: http.NotFoundHandler(), TLSConfig: tlsCfg}
	go func() { _ = httpSrv.Serve(cs.httpLn) }()
	go func() { _ = tlsSrv.Serve(tls.NewListener(cs.tlsLn, tlsCfg)) }()
	t.Cleanup(func() {
		_ = httpSrv.Close()
		_ = tlsSrv.Close()
	})
	return cs
}

func (cs *challengeServer) ports() (httpPort, tlsPort int) {
	return cs.httpLn.Addr().(*net.TCPAddr).Port, cs.tlsLn.Addr().(*net.TCPAddr).Port
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newClient returns an ACME client that trusts only ca.RootFile.
func newClient(t *testing.T, ca *CA) *acme.Client {
	t.Helper()
	pemBytes, err := os.ReadFile(ca.RootFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("no certificate in %s", ca.RootFile)
	}
	return &acme.Client{
		Key:          newKey(t),
		DirectoryURL: ca.URL,
		HTTPClient: &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool},
		}},
	}
}

// obtain orders a certificate for name, answering the challenge of type
// chalType through cs. If wrong is set, the challenge response is wrong and
// obtain returns the authorization error instead of a chain.
func obtain(ctx context.Context, t *testing.T, client *acme.Client, cs *challengeServer, name, chalType string, wrong bool) ([][]byte, error) {
	t.Helper()
	order, err := client.AuthorizeOrder(ctx, acme.DomainIDs(name))
	if err != nil {
		t.Fatalf("AuthorizeOrder(%s): %v", name, err)
	}
	for _, u := range order.AuthzURLs {
		z, err := client.GetAuthorization(ctx, u)
		if err != nil {
			t.Fatalf("GetAuthorization: %v", err)
		}
		if z.Status != acme.StatusPending {
			t.Fatalf("authorization for %s is %s, want pending (AuthzReuse 0)", name, z.Status)
		}
		var chal *acme.Challenge
		for _, c := range z.Challenges {
			if c.Type == chalType {
				chal = c
			}
		}
		if chal == nil {
			t.Fatalf("no %s challenge offered for %s", chalType, name)
		}
		switch chalType {
		case "http-01":
			body, err := client.HTTP01ChallengeResponse(chal.Token)
			if err != nil {
				t.Fatal(err)
			}
			if wrong {
				body = chal.Token + ".not-the-account-thumbprint"
			}
			cs.mu.Lock()
			cs.http01[chal.Token] = body
			cs.mu.Unlock()
		case "tls-alpn-01":
			cert, err := client.TLSALPN01ChallengeCert(chal.Token, name)
			if err != nil {
				t.Fatal(err)
			}
			cs.mu.Lock()
			cs.tlsalpn1[name] = &cert
			cs.mu.Unlock()
		}
		if _, err := client.Accept(ctx, chal); err != nil {
			t.Fatalf("Accept: %v", err)
		}
		if _, err := client.WaitAuthorization(ctx, z.URI); err != nil {
			return nil, err
		}
	}
	order, err = client.WaitOrder(ctx, order.URI)
	if err != nil {
		t.Fatalf("WaitOrder: %v", err)
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{DNSNames: []string{name}}, crypto.Signer(newKey(t)))
	if err != nil {
		t.Fatal(err)
	}
	// CreateCertFromOrder rather than CreateOrderCert: Pebble's finalize
	// response carries no Location header, which CreateOrderCert needs to
	// poll the order.
	chain, _, err := client.CreateCertFromOrder(ctx, order, csr, true)
	if err != nil {
		t.Fatalf("CreateCertFromOrder: %v", err)
	}
	return chain, nil
}

// verifyChain checks that chain verifies against ca.IssuerRoots for name and
// returns its leaf.
func verifyChain(t *testing.T, ca *CA, chain [][]byte, name string) *x509.Certificate {
	t.Helper()
	if len(chain) == 0 {
		t.Fatal("empty chain")
	}
	var certs []*x509.Certificate
	for _, der := range chain {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, c)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{
		DNSName:       name,
		Roots:         ca.IssuerRoots(),
		Intermediates: inter,
		// At issuance, so that short-lived certificates verify however
		// slowly the test runs.
		CurrentTime: certs[0].NotBefore,
	}); err != nil {
		t.Fatalf("chain for %s does not verify: %v", name, err)
	}
	return certs[0]
}

func TestIssueAndValidate(t *testing.T) {
	ca := Start(t, Options{Validity: time.Hour, Log: TestLog(t)})
	if !strings.HasPrefix(ca.URL, "https://127.0.0.1:") || !strings.HasSuffix(ca.URL, "/dir") {
		t.Fatalf("URL = %q", ca.URL)
	}
	cs := newChallengeServer(t)
	ca.Ready(cs.ports())

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := newClient(t, ca)
	if _, err := client.Register(ctx, &acme.Account{}, acme.AcceptTOS); err != nil {
		t.Fatalf("Register: %v", err)
	}

	// HTTP-01.
	chain, err := obtain(ctx, t, client, cs, "a.gale.test", "http-01", false)
	if err != nil {
		t.Fatalf("http-01 validation of a.gale.test: %v", err)
	}
	leaf := verifyChain(t, ca, chain, "a.gale.test")
	if got, want := leaf.NotAfter.Sub(leaf.NotBefore), time.Hour-time.Second; got != want {
		t.Errorf("lifetime = %v, want %v", got, want)
	}
	if n := ca.Issued(); n != 1 {
		t.Errorf("Issued() = %d, want 1", n)
	}
	if n := ca.IssuedFor("a.gale.test"); n != 1 {
		t.Errorf(`IssuedFor("a.gale.test") = %d, want 1`, n)
	}
	if n := ca.IssuedFor("b.gale.test"); n != 0 {
		t.Errorf(`IssuedFor("b.gale.test") = %d, want 0`, n)
	}
	if got := ca.Certificates(); len(got) != 1 || !got[0].Equal(leaf) {
		t.Errorf("Certificates() does not hold the issued leaf")
	}

	// A wrong key authorization: the authorization becomes invalid.
	_, err = obtain(ctx, t, client, cs, "b.gale.test", "http-01", true)
	var aerr *acme.AuthorizationError
	if !errors.As(err, &aerr) {
		t.Fatalf("wrong key authorization: err = %v, want *acme.AuthorizationError", err)
	}

	// TLS-ALPN-01.
	chain, err = obtain(ctx, t, client, cs, "c.gale.test", "tls-alpn-01", false)
	if err != nil {
		t.Fatalf("tls-alpn-01 validation of c.gale.test: %v", err)
	}
	verifyChain(t, ca, chain, "c.gale.test")

	if n := ca.Issued(); n != 2 {
		t.Errorf("Issued() = %d, want 2", n)
	}
	if n := ca.IssuedFor("b.gale.test"); n != 0 {
		t.Errorf(`IssuedFor("b.gale.test") = %d, want 0`, n)
	}
	want := map[string]ValidationCount{
		"http-01":     {Succeeded: 1, Failed: 1},
		"tls-alpn-01": {Succeeded: 1},
	}
	got := ca.Validations()
	if len(got) != len(want) || got["http-01"] != want["http-01"] || got["tls-alpn-01"] != want["tls-alpn-01"] {
		t.Errorf("Validations() = %v, want %v", got, want)
	}

	// The issuer root file holds the same root.
	pemBytes, err := os.ReadFile(ca.IssuerRootFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatal("IssuerRootFile holds no certificate")
	}
	if !pool.Equal(ca.IssuerRoots()) {
		t.Error("IssuerRootFile and IssuerRoots differ")
	}
}

func TestDownUp(t *testing.T) {
	ca := Start(t, Options{})
	client := newClient(t, ca)

	ca.Down()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.Discover(ctx); err == nil {
		t.Fatal("Discover succeeded while the CA is down")
	} else {
		t.Logf("Discover while down: %v", err)
	}

	// Up but not Ready: requests wait.
	ca.Up()
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err := client.Discover(short)
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Discover before Ready: err = %v, want deadline exceeded", err)
	}

	cs := newChallengeServer(t)
	ca.Ready(cs.ports())
	dir, err := client.Discover(ctx)
	if err != nil {
		t.Fatalf("Discover after Up and Ready: %v", err)
	}
	if dir.OrderURL == "" {
		t.Fatalf("directory has no newOrder URL: %+v", dir)
	}
}

func TestShortValidity(t *testing.T) {
	// Pebble's NotAfter is inclusive: NotBefore + Validity - 1s.
	ca := Start(t, Options{Validity: 2500 * time.Millisecond}) // rounded up to 3s
	cs := newChallengeServer(t)
	ca.Ready(cs.ports())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := newClient(t, ca)
	if _, err := client.Register(ctx, &acme.Account{}, acme.AcceptTOS); err != nil {
		t.Fatalf("Register: %v", err)
	}
	chain, err := obtain(ctx, t, client, cs, "short.gale.test", "http-01", false)
	if err != nil {
		t.Fatal(err)
	}
	leaf := verifyChain(t, ca, chain, "short.gale.test")
	if got, want := leaf.NotAfter.Sub(leaf.NotBefore), 2*time.Second; got != want {
		t.Errorf("lifetime = %v, want %v", got, want)
	}
}
