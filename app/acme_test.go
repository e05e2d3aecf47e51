package app

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"

	"gale/acme"
	"gale/acme/acmetest"
	"gale/metrics"
)

// Automatic certificates end to end, against Pebble (a real ACME server
// that validates every challenge by connecting back to gale): each
// challenge type alone, the served chain checked by Go's TLS client and
// openssl, renewal observed by a new connection while an old one keeps
// working, on-demand certificates with an ask endpoint, the CA down at
// start.

// acmeServer is a gale server whose first listener is plain and whose
// second is TLS with automatic certificates.
type acmeServer struct {
	t            *testing.T
	srv          *Server
	plain, tls   string
	log          *syncBuffer
	dir, storage string
	done         chan error
	stopOnce     sync.Once
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if testing.Verbose() {
		os.Stderr.Write(p)
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// acmeConfig renders a config: a plain listener (unless plain is false),
// a TLS listener with automatic (a YAML flow mapping, to which the CA's
// URL, root and storage are added), and one route answering "hello".
func acmeConfig(ca *acmetest.CA, storage, automatic string, plain bool, tlsExtra string) string {
	var b strings.Builder
	b.WriteString("listen:\n")
	if plain {
		b.WriteString("  - \"127.0.0.1:0\"\n")
	}
	fmt.Fprintf(&b, "  - address: \"127.0.0.1:0\"\n    tls: {%sautomatic: {ca: %q, ca_root: %q, storage: %q, %s}}\n",
		tlsExtra, ca.URL, ca.RootFile, storage, automatic)
	b.WriteString("routes:\n  - path: /\n    respond: {body: \"hello\\n\"}\n")
	return b.String()
}

// startACME runs yamlText from a temp dir, with its log kept.
func startACME(t *testing.T, yamlText, storage string) *acmeServer {
	t.Helper()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, yamlText)
	logs := &syncBuffer{}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	as := &acmeServer{t: t, srv: srv, log: logs, dir: dir, storage: storage}
	addrs := srv.Addrs()
	for i, l := range cfg.Listen {
		if l.TLS != nil {
			as.tls = addrs[i]
		} else if as.plain == "" {
			as.plain = addrs[i]
		}
	}
	as.done = boot(t, srv)
	t.Cleanup(as.stop)
	return as
}

func (as *acmeServer) stop() {
	as.stopOnce.Do(func() {
		stopServer(as.t, as.srv, as.done)
	})
}

// port returns the port of a "host:port".
func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// dialName opens a TLS connection to addr for name, verifying the chain
// against roots; the handshake waits on the server while the certificate
// is being obtained.
func dialName(addr, name string, roots *x509.CertPool) (*tls.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second}
	return tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: name, RootCAs: roots, NextProtos: []string{"http/1.1"}})
}

// getHello sends a GET on c and checks the answer.
func getHello(t *testing.T, c net.Conn, host string) {
	t.Helper()
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host); err != nil {
		t.Fatal(err)
	}
	resp, body := readResponse(t, bufio.NewReader(c), "GET")
	if resp.StatusCode != 200 || body != "hello\n" {
		t.Fatalf("GET over TLS: %d %q", resp.StatusCode, body)
	}
}

// TestACMEHTTP01 obtains a certificate by HTTP-01 alone: the CA's request
// is answered on the plain listener before routing; a plain request for
// the name is redirected to https, other hosts are routed; the served
// chain verifies against the CA's root with Go's client and openssl.
func TestACMEHTTP01(t *testing.T) {
	ca := acmetest.Start(t, acmetest.Options{Log: acmetest.TestLog(t)})
	storage := t.TempDir()
	as := startACME(t, acmeConfig(ca, storage, "domains: [a.gale.test], challenges: [http-01]", true, ""), storage)
	ca.Ready(port(t, as.plain), port(t, as.tls))

	c, err := dialName(as.tls, "a.gale.test", ca.IssuerRoots())
	if err != nil {
		t.Fatalf("handshake for a.gale.test: %v\n%s", err, as.log)
	}
	getHello(t, c, "a.gale.test")
	c.Close()
	var w metrics.Writer
	as.srv.writeTLSMetrics(&w)
	if !strings.Contains(string(w.Bytes()), "gale_tls_unknown_server_name_total 0\n") {
		t.Errorf("a listed name counted as unknown:\n%s", w.Bytes())
	}
	v := ca.Validations()
	if v["http-01"].Succeeded != 1 || v["tls-alpn-01"] != (acmetest.ValidationCount{}) {
		t.Errorf("validations %+v: want one http-01 and no tls-alpn-01", v)
	}
	if n := ca.IssuedFor("a.gale.test"); n != 1 {
		t.Errorf("issued %d certificates for a.gale.test, want 1", n)
	}

	// Plain HTTP: the managed name is redirected (a stale challenge
	// token too), another host is routed.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct{ host, path, loc string }{
		{"a.gale.test", "/x?y=1", "https://a.gale.test:" + strconv.Itoa(port(t, as.tls)) + "/x?y=1"},
		{"A.Gale.Test.", "/.well-known/acme-challenge/unknowntoken", "https://A.Gale.Test:" + strconv.Itoa(port(t, as.tls)) + "/.well-known/acme-challenge/unknowntoken"},
	} {
		req, _ := http.NewRequest("GET", "http://"+as.plain+tc.path, nil)
		req.Host = tc.host
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 301 || resp.Header.Get("Location") != tc.loc {
			t.Errorf("%s %s: %d Location %q, want 301 %q", tc.host, tc.path, resp.StatusCode, resp.Header.Get("Location"), tc.loc)
		}
	}
	req, _ := http.NewRequest("GET", "http://"+as.plain+"/.well-known/acme-challenge/unknowntoken", nil)
	req.Host = "other.gale.test"
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("another host's request for an unknown token: %d, want the route's 200", resp.StatusCode)
	}

	// openssl verifies the chain against Pebble's root.
	openssl := needTool(t, "openssl")
	out, err := runTool(t, "", openssl, "s_client", "-connect", as.tls, "-servername", "a.gale.test",
		"-CAfile", ca.IssuerRootFile(), "-verify_return_error", "-verify_hostname", "a.gale.test", "-brief")
	if err != nil || !strings.Contains(out, "Verification: OK") {
		t.Errorf("openssl s_client: %v\n%s", err, out)
	}
}

// TestACMETLSALPN01 obtains a certificate by TLS-ALPN-01 alone, answered
// inside gale's own handshake, with no plain listener at all; the
// validation's connection closes after its handshake.
func TestACMETLSALPN01(t *testing.T) {
	ca := acmetest.Start(t, acmetest.Options{Log: acmetest.TestLog(t)})
	storage := t.TempDir()
	as := startACME(t, acmeConfig(ca, storage, "domains: [b.gale.test], challenges: [tls-alpn-01]", false, ""), storage)
	ca.Ready(1, port(t, as.tls)) // nothing listens for HTTP-01

	c, err := dialName(as.tls, "b.gale.test", ca.IssuerRoots())
	if err != nil {
		t.Fatalf("handshake for b.gale.test: %v\n%s", err, as.log)
	}
	getHello(t, c, "b.gale.test")
	c.Close()
	v := ca.Validations()
	if v["tls-alpn-01"].Succeeded != 1 || v["http-01"] != (acmetest.ValidationCount{}) {
		t.Errorf("validations %+v: want one tls-alpn-01 and no http-01", v)
	}

	// A client offering acme-tls/1 alone gets a challenge certificate
	// only while a challenge is under way; then its connection ends.
	vc, err := tls.Dial("tcp", as.tls, &tls.Config{ServerName: "b.gale.test", NextProtos: []string{"acme-tls/1"}, InsecureSkipVerify: true})
	if err == nil {
		vc.Close()
		t.Errorf("an acme-tls/1 handshake with no challenge under way succeeded")
	}

	openssl := needTool(t, "openssl")
	out, err := runTool(t, "", openssl, "s_client", "-connect", as.tls, "-servername", "b.gale.test",
		"-CAfile", ca.IssuerRootFile(), "-verify_return_error", "-verify_hostname", "b.gale.test", "-brief")
	if err != nil || !strings.Contains(out, "Verification: OK") {
		t.Errorf("openssl s_client: %v\n%s", err, out)
	}
}

// serial returns the serial number of the certificate c was served.
func serial(c *tls.Conn) string {
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestACMERenewal: short-lived certificates are renewed in the
// background; a new connection gets the renewed certificate while a
// connection opened before keeps working.
func TestACMERenewal(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for certificates to be renewed: not in -short")
	}
	old := acme.RenewCheckInterval
	acme.RenewCheckInterval = 500 * time.Millisecond
	t.Cleanup(func() { acme.RenewCheckInterval = old })
	ca := acmetest.Start(t, acmetest.Options{Validity: 20 * time.Second, Log: acmetest.TestLog(t)})
	storage := t.TempDir()
	as := startACME(t, acmeConfig(ca, storage, "domains: [r.gale.test], challenges: [tls-alpn-01]", false, ""), storage)
	ca.Ready(1, port(t, as.tls))

	first, err := dialName(as.tls, "r.gale.test", ca.IssuerRoots())
	if err != nil {
		t.Fatalf("handshake: %v\n%s", err, as.log)
	}
	defer first.Close()
	was := serial(first)
	getHello(t, first, "r.gale.test")

	// Renewal is due in the last third of the lifetime; wait for the
	// server to log it, then to serve the new certificate. (The log, not
	// ca.IssuedFor: Pebble's order store races with its own finalize
	// when read while an order is being finalized.)
	if !waitUntil(40*time.Second, func() bool { return strings.Contains(as.log.String(), "certificate renewed successfully") }) {
		t.Fatalf("no renewal within 40s (issued %d)\n%s", ca.IssuedFor("r.gale.test"), as.log)
	}
	var now string
	waitUntil(10*time.Second, func() bool {
		c, err := dialName(as.tls, "r.gale.test", ca.IssuerRoots())
		if err != nil {
			t.Fatalf("handshake after renewal: %v", err)
		}
		now = serial(c)
		c.Close()
		return now != was
	})
	if now == was {
		t.Fatalf("new connections still get certificate %s after the renewal", was)
	}
	getHello(t, first, "r.gale.test") // the old connection keeps working
}

// TestACMEOnDemand: a name not listed gets its certificate at its first
// handshake when the ask endpoint approves it, and never when it refuses;
// approvals beyond the rate are refused.
func TestACMEOnDemand(t *testing.T) {
	ca := acmetest.Start(t, acmetest.Options{Log: acmetest.TestLog(t)})
	var mu sync.Mutex
	var asked []string
	ask := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("domain")
		mu.Lock()
		asked = append(asked, name)
		mu.Unlock()
		if !strings.HasPrefix(name, "ok") {
			http.Error(w, "no", http.StatusForbidden)
		}
	}))
	defer ask.Close()
	storage := t.TempDir()
	auto := fmt.Sprintf("on_demand: {ask: %q, rate: 1/h, burst: 0}, challenges: [tls-alpn-01]", ask.URL+"/allowed")
	as := startACME(t, acmeConfig(ca, storage, auto, false, ""), storage)
	ca.Ready(1, port(t, as.tls))

	c, err := dialName(as.tls, "ok.gale.test", ca.IssuerRoots())
	if err != nil {
		t.Fatalf("approved name: %v\n%s", err, as.log)
	}
	getHello(t, c, "ok.gale.test")
	c.Close()
	if _, err := dialName(as.tls, "no.gale.test", ca.IssuerRoots()); err == nil {
		t.Errorf("a name the ask endpoint refused got a certificate")
	}
	// Approved, but past the rate (one an hour, no burst).
	if _, err := dialName(as.tls, "ok2.gale.test", ca.IssuerRoots()); err == nil {
		t.Errorf("a second approved name within the hour got a certificate (rate 1/h)")
	}
	if n := ca.IssuedFor("no.gale.test") + ca.IssuedFor("ok2.gale.test"); n != 0 {
		t.Errorf("the CA issued %d certificates for refused names", n)
	}
	if n := ca.IssuedFor("ok.gale.test"); n != 1 {
		t.Errorf("issued %d for ok.gale.test, want 1", n)
	}
	var w metrics.Writer
	as.srv.writeTLSMetrics(&w)
	if !strings.Contains(string(w.Bytes()), "gale_tls_on_demand_certificates 1\n") || strings.Contains(string(w.Bytes()), `name="ok.gale.test"`) {
		t.Errorf("metrics: want one on-demand certificate counted, and no label naming it:\n%s", w.Bytes())
	}
	// Again for the approved name: from memory, nothing asked or issued.
	c, err = dialName(as.tls, "ok.gale.test", ca.IssuerRoots())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"ok.gale.test", "no.gale.test", "ok2.gale.test"}; strings.Join(asked, ",") != strings.Join(want, ",") {
		t.Errorf("ask endpoint asked about %v, want %v", asked, want)
	}
}

// TestACMECADownAtStart: with the CA unreachable, gale starts and serves
// plain HTTP and the names whose certificates are in storage; a name
// without one fails its handshake within the handshake timeout, and the
// log says why.
func TestACMECADownAtStart(t *testing.T) {
	ca := acmetest.Start(t, acmetest.Options{Log: acmetest.TestLog(t)})
	storage := t.TempDir()
	first := startACME(t, acmeConfig(ca, storage, "domains: [a.gale.test], challenges: [http-01]", true, ""), storage)
	ca.Ready(port(t, first.plain), port(t, first.tls))
	c, err := dialName(first.tls, "a.gale.test", ca.IssuerRoots())
	if err != nil {
		t.Fatalf("handshake: %v\n%s", err, first.log)
	}
	was := serial(c)
	c.Close()
	first.stop()

	ca.Down()
	as := startACME(t, acmeConfig(ca, storage, "domains: [a.gale.test, b.gale.test], challenges: [http-01]", true, "handshake_timeout: 2s, "), storage)
	resp, err := http.Get("http://" + as.plain + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("plain HTTP with the CA down: %v %v", resp, err)
	}
	resp.Body.Close()
	c, err = dialName(as.tls, "a.gale.test", ca.IssuerRoots())
	if err != nil {
		t.Fatalf("a name with its certificate in storage: %v\n%s", err, as.log)
	}
	if serial(c) != was {
		t.Errorf("served certificate %s, want %s from storage", serial(c), was)
	}
	getHello(t, c, "a.gale.test")
	c.Close()
	start := time.Now()
	if _, err := dialName(as.tls, "b.gale.test", ca.IssuerRoots()); err == nil {
		t.Errorf("b.gale.test got a certificate with the CA down")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the handshake for a name being obtained took %v, past its 2s timeout", d)
	}
	if !strings.Contains(as.log.String(), "b.gale.test") || !strings.Contains(as.log.String(), "level=ERROR msg=\"acme: ") {
		t.Errorf("the log does not report the failure to obtain b.gale.test:\n%s", as.log)
	}
}

// TestACMEReloadAndMetrics: the expiry of each managed certificate is a
// metric; a reload that adds a domain obtains it, one that removes a
// domain stops serving it, and one that changes more than the domains
// says it needs a restart.
func TestACMEReloadAndMetrics(t *testing.T) {
	ca := acmetest.Start(t, acmetest.Options{Log: acmetest.TestLog(t)})
	storage := t.TempDir()
	yaml := acmeConfig(ca, storage, "domains: [m.gale.test], challenges: [tls-alpn-01]", false, "")
	as := startACME(t, yaml, storage)
	ca.Ready(1, port(t, as.tls))
	c, err := dialName(as.tls, "m.gale.test", ca.IssuerRoots())
	if err != nil {
		t.Fatalf("handshake: %v\n%s", err, as.log)
	}
	notAfter := c.ConnectionState().PeerCertificates[0].NotAfter.Unix()
	c.Close()
	var w metrics.Writer
	as.srv.writeTLSMetrics(&w)
	if want := fmt.Sprintf(`gale_tls_certificate_expiry_timestamp_seconds{name="m.gale.test"} %d`, notAfter); !strings.Contains(string(w.Bytes()), want) {
		t.Errorf("metrics lack %q:\n%s", want, w.Bytes())
	}

	reload := func(text string) []string {
		t.Helper()
		notes, err := as.srv.Reload(writeConfig(t, as.dir, text))
		if err != nil {
			t.Fatal(err)
		}
		return notes
	}
	if notes := reload(yaml); strings.Contains(strings.Join(notes, "\n"), "automatic") {
		t.Errorf("an unchanged automatic section: notes %q", notes)
	}
	added := strings.Replace(yaml, "domains: [m.gale.test]", "domains: [m.gale.test, n.gale.test]", 1)
	if notes := reload(added); len(notes) != 0 {
		t.Errorf("a domain added: notes %q", notes)
	}
	c, err = dialName(as.tls, "n.gale.test", ca.IssuerRoots())
	if err != nil {
		t.Fatalf("handshake for the added name: %v\n%s", err, as.log)
	}
	c.Close()
	removed := strings.Replace(yaml, "domains: [m.gale.test]", "domains: [n.gale.test]", 1)
	if notes := reload(removed); len(notes) != 0 {
		t.Errorf("a domain removed: notes %q", notes)
	}
	if c, err := dialName(as.tls, "m.gale.test", ca.IssuerRoots()); err == nil {
		c.Close()
		t.Errorf("the removed name is still served")
	}
	if n := ca.IssuedFor("m.gale.test"); n != 1 {
		t.Errorf("issued %d certificates for m.gale.test, want 1", n)
	}
	changed := strings.Replace(removed, "challenges: [tls-alpn-01]", "challenges: [tls-alpn-01], email: ops@gale.test", 1)
	if notes := reload(changed); !strings.Contains(strings.Join(notes, "\n"), "tls.automatic changed beyond its domains: restart gale") {
		t.Errorf("a changed email: notes %q", notes)
	}
}

// TestACMEFailureLogged: when the CA cannot validate a name (nothing
// answers its HTTP-01 on the port it connects to), the CA's reason is
// in the log and handshakes for the name fail within their timeout.
func TestACMEFailureLogged(t *testing.T) {
	ca := acmetest.Start(t, acmetest.Options{Log: acmetest.TestLog(t)})
	storage := t.TempDir()
	as := startACME(t, acmeConfig(ca, storage, "domains: [f.gale.test], challenges: [http-01]", true, "handshake_timeout: 4s, "), storage)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a port that refuses the CA's validation
	if err != nil {
		t.Fatal(err)
	}
	refusing := port(t, ln.Addr().String())
	ln.Close()
	ca.Ready(refusing, port(t, as.tls))
	if _, err := dialName(as.tls, "f.gale.test", ca.IssuerRoots()); err == nil {
		t.Fatal("a name the CA could not validate got a certificate")
	}
	if !waitUntil(20*time.Second, func() bool { return strings.Contains(as.log.String(), "urn:ietf:params:acme:error") }) {
		t.Fatalf("the CA's reason is not in the log:\n%s", as.log)
	}
	if v := ca.Validations()["http-01"]; v.Failed == 0 {
		t.Errorf("validations %+v: want a failed http-01", v)
	}
	// Once the attempt failed, handshakes for the name do not wait for
	// a certificate until the next attempt starts.
	start := time.Now()
	if _, err := dialName(as.tls, "f.gale.test", ca.IssuerRoots()); err == nil {
		t.Fatal("a name the CA could not validate got a certificate")
	}
	// One that waited would last the handshake timeout (4 s).
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a handshake after the failed attempt waited %v", d)
	}
}

// TestACMEOnDemandOutlivesHandshake: obtaining a certificate on demand
// takes longer than the handshake that asked for it may last (the ask
// endpoint is slow); the handshake fails at its timeout, the order goes
// on, and a later handshake gets the certificate without asking again.
func TestACMEOnDemandOutlivesHandshake(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a handshake timeout: not in -short")
	}
	ca := acmetest.Start(t, acmetest.Options{Log: acmetest.TestLog(t)})
	var mu sync.Mutex
	asked := 0
	handshakeOver := make(chan struct{})
	ask := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked++
		mu.Unlock()
		select { // slower than the handshake: answers once it ended
		case <-handshakeOver:
		case <-r.Context().Done():
		}
	}))
	defer ask.Close()
	storage := t.TempDir()
	auto := fmt.Sprintf("on_demand: {ask: %q}, challenges: [tls-alpn-01]", ask.URL)
	as := startACME(t, acmeConfig(ca, storage, auto, false, "handshake_timeout: 1s, client_hello_timeout: 1s, "), storage)
	ca.Ready(1, port(t, as.tls))
	if c, err := dialName(as.tls, "slow.gale.test", ca.IssuerRoots()); err == nil {
		c.Close()
		t.Fatal("the first handshake outlived its 1s timeout")
	}
	close(handshakeOver)
	if !waitUntil(20*time.Second, func() bool { return strings.Contains(as.log.String(), "certificate obtained successfully") }) {
		t.Fatalf("the order did not go on after the handshake ended\n%s", as.log)
	}
	var c *tls.Conn
	var err error
	waitUntil(20*time.Second, func() bool { // issued; being cached
		c, err = dialName(as.tls, "slow.gale.test", ca.IssuerRoots())
		return err == nil
	})
	if err != nil {
		t.Fatalf("after the certificate was issued: %v", err)
	}
	getHello(t, c, "slow.gale.test")
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	if asked != 1 {
		t.Errorf("the ask endpoint was asked %d times, want 1", asked)
	}
}

// TestACMEHTTP01OnRedirectListener: a redirect_to_https listener answers
// the CA's HTTP-01 before redirecting everything else.
func TestACMEHTTP01OnRedirectListener(t *testing.T) {
	ca := acmetest.Start(t, acmetest.Options{Log: acmetest.TestLog(t)})
	storage := t.TempDir()
	yaml := strings.Replace(acmeConfig(ca, storage, "domains: [d.gale.test], challenges: [http-01]", true, ""),
		`  - "127.0.0.1:0"`, `  - {address: "127.0.0.1:0", redirect_to_https: true}`, 1)
	as := startACME(t, yaml, storage)
	ca.Ready(port(t, as.plain), port(t, as.tls))
	c, err := dialName(as.tls, "d.gale.test", ca.IssuerRoots())
	if err != nil {
		t.Fatalf("handshake: %v\n%s", err, as.log)
	}
	c.Close()
	if v := ca.Validations()["http-01"]; v.Succeeded != 1 {
		t.Errorf("http-01 validations %+v, want one that succeeded", v)
	}
	req, _ := http.NewRequest("GET", "http://"+as.plain+"/page", nil)
	req.Host = "elsewhere.gale.test"
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 301 || !strings.HasPrefix(resp.Header.Get("Location"), "https://elsewhere.gale.test:") {
		t.Errorf("another host on the redirect listener: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestACMEHTTP3: QUIC handshakes, which no handshake gate bounds, get
// automatic certificates from memory only: before a TCP handshake
// obtained the name's certificate, an HTTP/3 request fails without the
// ask endpoint being asked; afterwards it is served.
func TestACMEHTTP3(t *testing.T) {
	ca := acmetest.Start(t, acmetest.Options{Log: acmetest.TestLog(t)})
	var mu sync.Mutex
	asked := 0
	ask := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		mu.Lock()
		asked++
		mu.Unlock()
	}))
	defer ask.Close()
	storage := t.TempDir()
	auto := fmt.Sprintf("on_demand: {ask: %q}, challenges: [tls-alpn-01]", ask.URL)
	yaml := strings.Replace(acmeConfig(ca, storage, auto, false, ""), "    tls: {", "    http3: true\n    tls: {", 1)
	as := startACME(t, yaml, storage)
	ca.Ready(1, port(t, as.tls))
	h3 := func() (int, string, error) {
		tr := &http3.Transport{TLSClientConfig: &tls.Config{ServerName: "q.gale.test", RootCAs: ca.IssuerRoots()}}
		defer tr.Close()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + as.tls + "/")
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	if _, _, err := h3(); err == nil {
		t.Fatal("an HTTP/3 request got a certificate no TCP handshake had obtained")
	}
	mu.Lock()
	if asked != 0 {
		t.Errorf("a QUIC handshake asked the ask endpoint %d times", asked)
	}
	mu.Unlock()
	c, err := dialName(as.tls, "q.gale.test", ca.IssuerRoots())
	if err != nil {
		t.Fatalf("TCP handshake: %v\n%s", err, as.log)
	}
	c.Close()
	status, body, err := h3()
	if err != nil {
		t.Fatalf("HTTP/3 after the certificate was obtained: %v", err)
	}
	if status != 200 || body != "hello\n" {
		t.Errorf("HTTP/3: %d %q", status, body)
	}
}
