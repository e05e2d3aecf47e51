// Package acmetest runs a real ACME certificate authority inside a test
// process, in the spirit of net/http/httptest.
//
// It embeds Pebble (github.com/letsencrypt/pebble/v2), the small ACME server
// from the Let's Encrypt project, so tests run offline against a server that
// really validates HTTP-01 and TLS-ALPN-01 challenges by connecting back to the
// server under test, and really issues certificates.
//
// Typical use:
//
//	ca := acmetest.Start(t, acmetest.Options{})
//	// configure the server under test with ca.URL and ca.RootFile,
//	// start it listening on 127.0.0.1:httpPort and 127.0.0.1:tlsPort
//	ca.Ready(httpPort, tlsPort)
//	// ... wait for the server to obtain its certificates ...
//	if ca.IssuedFor("a.gale.test") != 1 { ... }
//
// Name resolution: Pebble's validation authority resolves identifiers through
// an in-process DNS server (TCP on 127.0.0.1) that answers every A query with
// 127.0.0.1 and every other query with an empty NOERROR answer, so any
// syntactically valid DNS name (a.gale.test, b.example, x.localhost) can be
// ordered. Pebble has no public-suffix or TLD policy; it rejects only IP
// addresses given as DNS identifiers, names with a trailing dot, names with
// characters outside [A-Za-z0-9.-*] (order and CSR names are compared
// case-insensitively), names longer than 253 octets and malformed wildcards.
//
// Package acmetest is meant for tests only: Pebble keeps everything in memory,
// its validation goroutine is never stopped, and its configuration is partly
// read from process-wide environment variables (see Start).
package acmetest

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letsencrypt/pebble/v2/acme"
	pebbleca "github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"
	"github.com/miekg/dns"
)

// Pebble endpoint path prefixes (see github.com/letsencrypt/pebble/v2/wfe)
// that the request wrapper inspects.
const (
	finalizePathPrefix  = "/finalize-order/"
	challengePathPrefix = "/chalZ/"
)

// Options configure a CA. The zero value is a CA that issues 90-day
// certificates and discards Pebble's log.
type Options struct {
	// Validity is the lifetime of issued certificates. 0 means Pebble's
	// default of 90 days. It is rounded up to whole seconds (Pebble's
	// granularity). Pebble follows RFC 5280's inclusive NotAfter, so a
	// certificate's NotAfter is NotBefore + Validity - 1s: 1s yields a
	// certificate with NotAfter == NotBefore, 2s is the smallest lifetime a
	// client can actually use. A short Validity (e.g. 10*time.Second) lets a
	// test force renewal.
	Validity time.Duration

	// Log receives Pebble's log. nil discards it. Writes that happen after
	// the test's cleanup started are dropped, so a writer that forwards to
	// t.Log, such as TestLog(t), is safe.
	Log io.Writer

	// NonceReject is the percentage (0-100) of valid nonces Pebble rejects
	// with a badNonce error, to exercise a client's retry logic. 0 (the
	// default here, unlike the pebble command's 5) rejects none.
	NonceReject int

	// AuthzReuse is the percentage (0-100) of orders for which Pebble reuses
	// an account's existing valid authorization instead of creating a new
	// one. 0 (the default here, unlike the pebble command's 50) means every
	// order needs fresh challenge validations, so Validations is predictable.
	AuthzReuse int
}

// ValidationCount is how many challenges of one type were validated
// successfully and how many failed.
type ValidationCount struct {
	Succeeded int
	Failed    int
}

// CA is an embedded Pebble ACME server. Create it with Start.
type CA struct {
	// URL is the ACME directory URL, https://127.0.0.1:PORT/dir.
	URL string

	// RootFile is a PEM file (in a t.TempDir()) holding the certificate the
	// directory's HTTPS endpoint is served with: what an ACME client must
	// trust to talk to the CA. It is not the root of issued certificates;
	// see IssuerRoots.
	RootFile string

	// DNSAddr is the host:port of the TCP DNS server Pebble's validation
	// authority resolves names with.
	DNSAddr string

	t        testing.TB
	opts     Options
	srv      *httptest.Server
	dnsSrv   *dns.Server
	logger   *log.Logger
	logw     *cleanupWriter
	db       *db.MemoryStore
	pebbleCA *pebbleca.CAImpl

	ready     chan struct{} // closed by Ready
	closed    chan struct{} // closed by cleanup
	readyOnce sync.Once

	mu          sync.Mutex
	handler     http.Handler // Pebble's WFE handler, set by Ready
	down        bool
	finalized   []string            // order IDs, in order of first finalize request
	finalizedID map[string]bool     // set of finalized
	challenges  []string            // challenge IDs, in order of first POST
	challengeID map[string]struct{} // set of challenges
	issuerFile  string
}

// envMu serializes the environment changes around Pebble's constructors.
var envMu sync.Mutex

// Start starts a CA whose directory endpoint is listening when Start returns
// (URL is valid), but every ACME request waits until Ready names the ports
// Pebble's validation authority connects to. The CA, its DNS server and its
// HTTPS endpoint are stopped by t.Cleanup.
//
// Pebble reads part of its configuration from environment variables when its
// validation authority and front end are built. Ready sets
// PEBBLE_VA_NOSLEEP=1 (validate at once instead of after a random delay of up
// to 15s), clears PEBBLE_VA_ALWAYS_VALID (challenges are always really
// validated) and sets PEBBLE_WFE_NONCEREJECT and PEBBLE_AUTHZREUSE from
// Options. The environment
// is process-wide: the variables are set only while Pebble's constructors
// run, under a package lock, and restored afterwards, but code elsewhere in
// the process reading them concurrently would see the temporary values.
func Start(t testing.TB, o Options) *CA {
	t.Helper()
	if o.Validity < 0 {
		t.Fatalf("acmetest: negative Validity %v", o.Validity)
	}
	ca := &CA{
		t:           t,
		opts:        o,
		ready:       make(chan struct{}),
		closed:      make(chan struct{}),
		finalizedID: make(map[string]bool),
		challengeID: make(map[string]struct{}),
	}
	out := o.Log
	if out == nil {
		out = io.Discard
	}
	ca.logw = &cleanupWriter{w: out}
	ca.logger = log.New(ca.logw, "pebble ", log.Lmicroseconds)

	// Pebble's CA: key generation and issuing chain are built here so that
	// IssuerRoots works before Ready.
	ca.db = db.NewMemoryStore()
	var validity uint64 // 0: Pebble's default
	if o.Validity > 0 {
		validity = uint64(math.Ceil(o.Validity.Seconds()))
	}
	profiles := map[string]pebbleca.Profile{
		"default": {Description: "acmetest default profile", ValidityPeriod: validity},
	}
	ca.pebbleCA = pebbleca.New(ca.logger, ca.db, "", "ecdsa", 0, 1, profiles)

	// DNS server for the validation authority.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("acmetest: DNS listener: %v", err)
	}
	started := make(chan struct{})
	ca.dnsSrv = &dns.Server{
		Listener:          ln,
		Net:               "tcp",
		Handler:           dns.HandlerFunc(serveDNS),
		NotifyStartedFunc: func() { close(started) },
	}
	dnsErr := make(chan error, 1)
	go func() { dnsErr <- ca.dnsSrv.ActivateAndServe() }()
	select {
	case <-started:
	case err := <-dnsErr:
		t.Fatalf("acmetest: DNS server: %v", err)
	}
	ca.DNSAddr = ln.Addr().String()

	// HTTPS endpoint. httptest's TLS server speaks HTTP/1.1 only (so Down
	// can hijack connections) and its certificate covers 127.0.0.1.
	ca.srv = httptest.NewUnstartedServer(http.HandlerFunc(ca.serveHTTP))
	ca.srv.Config.ErrorLog = log.New(ca.logw, "acmetest https ", log.Lmicroseconds)
	ca.srv.StartTLS()
	ca.URL = ca.srv.URL + wfe.DirectoryPath

	ca.RootFile = filepath.Join(t.TempDir(), "acme-server-root.pem")
	if err := writePEM(ca.RootFile, ca.srv.Certificate()); err != nil {
		t.Fatalf("acmetest: %v", err)
	}

	t.Cleanup(func() {
		close(ca.closed)
		ca.srv.Close()
		_ = ca.dnsSrv.Shutdown()
		ca.logw.close()
	})
	return ca
}

// Ready builds Pebble's validation authority and front end and lets the ACME
// requests through: challenges are validated by connecting to 127.0.0.1 at
// httpPort (HTTP-01) and tlsPort (TLS-ALPN-01), whatever name they are for.
// Call it once, after the server under test is listening on those ports.
func (ca *CA) Ready(httpPort, tlsPort int) {
	ca.t.Helper()
	first := false
	ca.readyOnce.Do(func() { first = true })
	if !first {
		ca.t.Fatalf("acmetest: Ready called twice")
		return
	}

	env := map[string]string{
		"PEBBLE_VA_NOSLEEP":          "1",
		"PEBBLE_VA_ALWAYS_VALID":     "",
		"PEBBLE_WFE_NONCEREJECT":     strconv.Itoa(ca.opts.NonceReject),
		"PEBBLE_AUTHZREUSE":          strconv.Itoa(ca.opts.AuthzReuse),
		"PEBBLE_WFE_ORDERS_PER_PAGE": "",
	}
	var front wfe.WebFrontEndImpl
	withEnv(env, func() {
		validator := va.New(ca.logger, httpPort, tlsPort, false, ca.DNSAddr, ca.db)
		front = wfe.New(ca.logger, ca.db, validator, ca.pebbleCA,
			[]string{"pebble.letsencrypt.org"}, false, false, 0, 0)
	})
	h := front.Handler()

	ca.mu.Lock()
	ca.handler = h
	ca.mu.Unlock()
	close(ca.ready)
}

// Down makes the ACME endpoint refuse service until Up: every request,
// including those waiting for Ready, has its connection closed unanswered,
// as if the CA were unreachable. Start followed by Down before Ready models a
// CA that is unreachable when the server under test starts.
func (ca *CA) Down() {
	ca.mu.Lock()
	ca.down = true
	ca.mu.Unlock()
	ca.srv.CloseClientConnections()
}

// Up ends a Down.
func (ca *CA) Up() {
	ca.mu.Lock()
	ca.down = false
	ca.mu.Unlock()
}

// IssuerRoots returns a pool holding Pebble's issuing root certificate: a
// certificate chain obtained from the CA (and served by the server under
// test) verifies against it. It is available as soon as Start returns.
func (ca *CA) IssuerRoots() *x509.CertPool {
	pool := x509.NewCertPool()
	for i := 0; i < ca.pebbleCA.GetNumberOfRootCerts(); i++ {
		pool.AddCert(ca.pebbleCA.GetRootCert(i).Cert)
	}
	return pool
}

// IssuerRootFile writes Pebble's issuing root certificate(s) as PEM to a file
// in a t.TempDir() (on the first call) and returns its path, e.g. for
// `openssl s_client -CAfile`.
func (ca *CA) IssuerRootFile() string {
	ca.t.Helper()
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if ca.issuerFile != "" {
		return ca.issuerFile
	}
	var certs []*x509.Certificate
	for i := 0; i < ca.pebbleCA.GetNumberOfRootCerts(); i++ {
		certs = append(certs, ca.pebbleCA.GetRootCert(i).Cert)
	}
	name := filepath.Join(ca.t.TempDir(), "acme-issuer-root.pem")
	if err := writePEM(name, certs...); err != nil {
		ca.t.Fatalf("acmetest: %v", err)
	}
	ca.issuerFile = name
	return name
}

// Issued is the number of certificates Pebble has issued so far. A
// certificate counts once Pebble has stored it for its order, i.e. no later
// than an ACME client can see the order as valid.
func (ca *CA) Issued() int {
	return len(ca.Certificates())
}

// IssuedFor is the number of issued certificates (see Issued) whose DNS names
// include name (compared case-insensitively; a wildcard matches only itself).
func (ca *CA) IssuedFor(name string) int {
	n := 0
	for _, c := range ca.Certificates() {
		for _, dn := range c.DNSNames {
			if strings.EqualFold(dn, name) {
				n++
				break
			}
		}
	}
	return n
}

// Certificates returns the leaf certificates Pebble has issued so far (see
// Issued), in the order their finalize requests first arrived.
func (ca *CA) Certificates() []*x509.Certificate {
	ca.mu.Lock()
	ids := append([]string(nil), ca.finalized...)
	ca.mu.Unlock()
	var certs []*x509.Certificate
	for _, id := range ids {
		order := ca.db.GetOrderByID(id)
		if order == nil {
			continue
		}
		order.RLock()
		co := order.CertificateObject
		order.RUnlock()
		if co != nil && co.Cert != nil {
			certs = append(certs, co.Cert)
		}
	}
	return certs
}

// Validations returns, per challenge type ("http-01", "tls-alpn-01",
// "dns-01", ...), how many challenges Pebble's validation authority validated
// successfully and how many it failed.
//
// It counts challenge objects, not connection attempts: each challenge an
// ACME client asked Pebble to validate (a POST to its URL) counts once, as
// Succeeded when its status is valid and as Failed when it is invalid;
// challenges still being validated, and challenges of the same authorization
// the client did not choose, are not counted. A challenge's status changes
// together with its authorization's (under the same lock), so once a client
// has seen an authorization become valid or invalid, the count reflects it.
func (ca *CA) Validations() map[string]ValidationCount {
	ca.mu.Lock()
	ids := append([]string(nil), ca.challenges...)
	ca.mu.Unlock()
	res := make(map[string]ValidationCount)
	for _, id := range ids {
		chal := ca.db.GetChallengeByID(id)
		if chal == nil {
			continue
		}
		chal.RLock()
		typ, status := chal.Type, chal.Status
		chal.RUnlock()
		c := res[typ]
		switch status {
		case acme.StatusValid:
			c.Succeeded++
		case acme.StatusInvalid:
			c.Failed++
		default:
			continue
		}
		res[typ] = c
	}
	return res
}

// serveHTTP gates Pebble's handler: it refuses service while down, waits for
// Ready and records finalize and challenge requests for Issued and
// Validations.
func (ca *CA) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if ca.isDown() {
		dropConn(w)
		return
	}
	select {
	case <-ca.ready:
	case <-ca.closed:
		http.Error(w, "acmetest: CA stopped", http.StatusServiceUnavailable)
		return
	case <-r.Context().Done():
		return
	}
	if ca.isDown() {
		dropConn(w)
		return
	}

	if r.Method == http.MethodPost {
		p := r.URL.Path
		switch {
		case strings.HasPrefix(p, finalizePathPrefix):
			ca.noteFinalize(strings.TrimPrefix(p, finalizePathPrefix))
		case strings.HasPrefix(p, challengePathPrefix):
			ca.noteChallenge(strings.TrimPrefix(p, challengePathPrefix))
		}
	}

	ca.mu.Lock()
	h := ca.handler
	ca.mu.Unlock()
	h.ServeHTTP(w, r)
}

func (ca *CA) isDown() bool {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	return ca.down
}

func (ca *CA) noteFinalize(id string) {
	if id == "" {
		return
	}
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if !ca.finalizedID[id] {
		ca.finalizedID[id] = true
		ca.finalized = append(ca.finalized, id)
	}
}

func (ca *CA) noteChallenge(id string) {
	if id == "" {
		return
	}
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if _, ok := ca.challengeID[id]; !ok {
		ca.challengeID[id] = struct{}{}
		ca.challenges = append(ca.challenges, id)
	}
}

// dropConn closes the request's connection without an answer, or answers 503
// if the connection cannot be taken over.
func dropConn(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	http.Error(w, "acmetest: CA down", http.StatusServiceUnavailable)
}

// serveDNS answers A queries for every name with 127.0.0.1 and everything
// else (AAAA, TXT, CAA, ...) with an empty NOERROR answer.
func serveDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	for _, q := range req.Question {
		if q.Qtype == dns.TypeA && q.Qclass == dns.ClassINET {
			m.Answer = append(m.Answer, &dns.A{
				Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 0},
				A:   net.IPv4(127, 0, 0, 1).To4(),
			})
		}
	}
	_ = w.WriteMsg(m)
}

// withEnv runs f with the environment variables in env set (an empty value
// unsets the variable), restoring them afterwards.
func withEnv(env map[string]string, f func()) {
	envMu.Lock()
	defer envMu.Unlock()
	type saved struct {
		val string
		ok  bool
	}
	old := make(map[string]saved, len(env))
	for k, v := range env {
		ov, ok := os.LookupEnv(k)
		old[k] = saved{ov, ok}
		if v == "" {
			_ = os.Unsetenv(k)
		} else {
			_ = os.Setenv(k, v)
		}
	}
	defer func() {
		for k, s := range old {
			if s.ok {
				_ = os.Setenv(k, s.val)
			} else {
				_ = os.Unsetenv(k)
			}
		}
	}()
	f()
}

func writePEM(name string, certs ...*x509.Certificate) error {
	var b []byte
	for _, c := range certs {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// TestLog returns a writer that logs each line written to it with t.Log; use
// it as Options.Log to see Pebble's log with failed tests or go test -v.
func TestLog(t testing.TB) io.Writer {
	return testLog{t}
}

type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// cleanupWriter forwards writes until close, then drops them, so Pebble's
// goroutines that outlive a test cannot write to a finished test's log.
type cleanupWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (c *cleanupWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return len(p), nil
	}
	return c.w.Write(p)
}

func (c *cleanupWriter) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}
