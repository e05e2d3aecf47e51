package app

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/fcgi"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"

	"gale/config"
)

// Client certificates on gale's listeners (tls.client_auth), with real
// clients: Go's crypto/tls over HTTP/1.1 and HTTP/2, quic-go's HTTP/3
// client, curl and openssl s_client; what routes make of them: access
// rules (client_cert), FastCGI's SSL_CLIENT_* (a net/http/fcgi
// responder), a proxied upstream's Client-Cert fields (RFC 9440), and the
// access log.

// mtlsSite has three TLS listeners, one per client_auth mode: require
// (with a revocation list, and HTTP/3), verify_if_given and request.
const mtlsSite = `listen:
  - address: 127.0.0.1:0
    http3: true
    tls:
      certificates: [$CERT]
      client_auth: {mode: require, ca: clients-ca.pem, crl: clients.crl}
  - address: 127.0.0.1:0
    tls:
      certificates: [$CERT]
      client_auth: {mode: verify_if_given, ca: clients-ca.pem}
  - address: 127.0.0.1:0
    tls:
      certificates: [$CERT]
      client_auth: {mode: request, ca: clients-ca.pem}
access_log: {path: access.log, format: json}
routes:
  - path: /admin
    access: [{allow: all, client_cert: {names: [admin]}}, {deny: all}]
    respond: {body: "admin\n"}
  - path: /verified
    access: [{allow: all, client_cert: verified}, {deny: all}]
    respond: {body: "verified\n"}
  - path: /fcgi/
    fastcgi: {to: "FCGI", root: ./site}
  - path: /up/
    proxy: {to: "UP"}
  - path: /
    respond: {body: "hello\n"}
`

// mtlsEnv is a running mtlsSite with its client PKI and the certificates
// issued to clients: alice and admin (good), revoked (on the CRL), and
// stranger (from a CA the server does not trust).
type mtlsEnv struct {
	*tlsTestServer
	pki                                   *clientPKI
	alice, admin, revoked, stranger       tls.Certificate
	aliceLeaf, revokedLeaf                *x509.Certificate
	require, verifyIfGiven, request, cfgT string
}

func startMTLS(t *testing.T) *mtlsEnv {
	t.Helper()
	env := &mtlsEnv{}
	fcgiAddr := startFCGIEcho(t)
	upAddr := startHeaderEcho(t)
	site := strings.NewReplacer("FCGI", fcgiAddr, "UP", upAddr).Replace(mtlsSite)
	env.cfgT = site
	env.tlsTestServer = startTLSServer(t, site, map[string]string{"index.html": "x"}, func(_ *testCA, dir string) {
		env.pki = newClientPKI(t, dir)
		env.aliceLeaf, env.alice = env.pki.client(t, env.pki.ca, "alice", "alice")
		_, env.admin = env.pki.client(t, env.pki.ca, "admin", "admin")
		env.revokedLeaf, env.revoked = env.pki.client(t, env.pki.ca, "revoked", "mallory")
		_, env.stranger = env.pki.client(t, env.pki.stranger, "stranger", "alice")
		env.pki.revoke(t, env.revokedLeaf)
	})
	addrs := env.srv.Addrs()
	env.require, env.verifyIfGiven, env.request = addrs[0], addrs[1], addrs[2]
	return env
}

// startFCGIEcho runs a FastCGI responder that answers with the SSL_*
// variables it got and the Client-Cert field a client may have sent.
func startFCGIEcho(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		_ = fcgi.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			env := fcgi.ProcessEnv(r)
			var keys []string
			for k := range env {
				if strings.HasPrefix(k, "SSL_") {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(w, "%s=%q\n", k, env[k])
			}
			fmt.Fprintf(w, "HTTP_CLIENT_CERT=%q\n", r.Header.Values("Client-Cert"))
		}))
	}()
	return ln.Addr().String()
}

// startHeaderEcho runs an upstream that answers with the Client-Cert and
// Client-Cert-Chain fields it got.
func startHeaderEcho(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "cert=%q\nchain=%q\n", r.Header.Values("Client-Cert"), r.Header.Values("Client-Cert-Chain"))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// mtlsGet requests path from addr over HTTP/1.1 (or HTTP/2 when h2)
// presenting certs, with extra request fields hdr (name, value, ...).
func (env *mtlsEnv) mtlsGet(addr string, h2 bool, certs []tls.Certificate, path string, hdr ...string) (int, string, error) {
	cfg := env.clientConfig("localhost")
	cfg.Certificates = certs
	tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: h2, DisableKeepAlives: true}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 15 * time.Second}
	req, _ := http.NewRequest("GET", "https://"+addr+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if h2 && resp.ProtoMajor != 2 {
		return 0, "", fmt.Errorf("want HTTP/2, got %s", resp.Proto)
	}
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// certs is a helper for one certificate.
func certs(c ...tls.Certificate) []tls.Certificate { return c }

// TestClientAuthGo drives the three modes with Go's client over HTTP/1.1
// and HTTP/2: require refuses no certificate, another CA's and a revoked
// one, and accepts the right one; verify_if_given accepts none and
// refuses another CA's; request accepts anything and reports it; the
// access rules' client_cert allows and denies.
func TestClientAuthGo(t *testing.T) {
	t.Parallel()
	env := startMTLS(t)
	for _, h2 := range []bool{false, true} {
		name := map[bool]string{false: "h1", true: "h2"}[h2]
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				what  string
				addr  string
				certs []tls.Certificate
				path  string
				want  int // 0: the handshake is refused
				body  string
			}{
				{"require, no certificate", env.require, nil, "/", 0, ""},
				{"require, another CA's", env.require, certs(env.stranger), "/", 0, ""},
				{"require, revoked", env.require, certs(env.revoked), "/", 0, ""},
				{"require, good", env.require, certs(env.alice), "/", 200, "hello\n"},
				{"require, admin route, alice", env.require, certs(env.alice), "/admin", 403, ""},
				{"require, admin route, admin", env.require, certs(env.admin), "/admin", 200, "admin\n"},
				{"verify_if_given, none", env.verifyIfGiven, nil, "/", 200, "hello\n"},
				{"verify_if_given, none, verified route", env.verifyIfGiven, nil, "/verified", 403, ""},
				{"verify_if_given, good, verified route", env.verifyIfGiven, certs(env.alice), "/verified", 200, "verified\n"},
				{"verify_if_given, another CA's", env.verifyIfGiven, certs(env.stranger), "/", 0, ""},
				{"request, another CA's", env.request, certs(env.stranger), "/", 200, "hello\n"},
				{"request, another CA's, verified route", env.request, certs(env.stranger), "/verified", 403, ""},
				{"request, good, verified route", env.request, certs(env.alice), "/verified", 200, "verified\n"},
			} {
				status, body, err := env.mtlsGet(c.addr, h2, c.certs, c.path)
				switch {
				case c.want == 0 && err == nil:
					t.Errorf("%s: answered %d %q, want the handshake refused", c.what, status, body)
				case c.want == 0:
					t.Logf("%s: refused: %v", c.what, err)
				case err != nil:
					t.Errorf("%s: %v", c.what, err)
				case status != c.want || c.body != "" && body != c.body:
					t.Errorf("%s: %d %q, want %d %q", c.what, status, body, c.want, c.body)
				}
			}
		})
	}
}

// TestClientAuthFastCGI: a FastCGI application gets SSL_CLIENT_* as nginx
// sets them, SSL_CLIENT_VERIFY NONE without a certificate and FAILED in
// request mode for another CA's, and never a client's own Client-Cert.
func TestClientAuthFastCGI(t *testing.T) {
	t.Parallel()
	env := startMTLS(t)
	_, body, err := env.mtlsGet(env.require, false, certs(env.alice), "/fcgi/x", "Client-Cert", ":Zm9v:")
	if err != nil {
		t.Fatal(err)
	}
	leaf := env.aliceLeaf
	for _, want := range []string{
		`SSL_CLIENT_VERIFY="SUCCESS"`,
		fmt.Sprintf("SSL_CLIENT_S_DN=%q", leaf.Subject.String()),
		fmt.Sprintf("SSL_CLIENT_I_DN=%q", leaf.Issuer.String()),
		fmt.Sprintf("SSL_CLIENT_SERIAL=%q", strings.ToUpper(leaf.SerialNumber.Text(16))),
		fmt.Sprintf("SSL_CLIENT_FINGERPRINT=%q", fingerprint(leaf)),
		`SSL_CLIENT_CERT="-----BEGIN CERTIFICATE-----\n`,
		`HTTP_CLIENT_CERT=[]`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("FastCGI got no %s:\n%s", want, body)
		}
	}
	if !strings.Contains(body, "SSL_CLIENT_S_DN=\"CN=alice,O=gale tests\"") {
		t.Errorf("subject not in RFC 2253 form:\n%s", body)
	}
	for _, c := range []struct {
		addr  string
		certs []tls.Certificate
		want  string
	}{
		{env.verifyIfGiven, nil, `SSL_CLIENT_VERIFY="NONE"`},
		{env.request, certs(env.stranger), `SSL_CLIENT_VERIFY="FAILED:x509: certificate signed by unknown authority`},
	} {
		_, body, err := env.mtlsGet(c.addr, true, c.certs, "/fcgi/x")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(body, c.want) {
			t.Errorf("want %s:\n%s", c.want, body)
		}
	}
}

func fingerprint(c *x509.Certificate) string {
	return fmt.Sprintf("%x", sha256Sum(c.Raw))
}

// TestClientAuthProxyFields: a proxied upstream gets the client's
// certificate as Client-Cert and the intermediate it sent as
// Client-Cert-Chain, and never what a client sent under those names, in
// any spelling, over HTTP/1.1, HTTP/2 and HTTP/3; a client without a
// verified certificate sends none through.
func TestClientAuthProxyFields(t *testing.T) {
	t.Parallel()
	env := startMTLS(t)
	wantCert := fmt.Sprintf("cert=[%q]", ":"+base64.StdEncoding.EncodeToString(env.alice.Certificate[0])+":")
	wantChain := fmt.Sprintf("chain=[%q]", ":"+base64.StdEncoding.EncodeToString(env.alice.Certificate[1])+":")
	forged := []string{"Client-Cert", ":Zm9yZ2Vk:", "Client-Cert-Chain", ":Zm9yZ2Vk:"}
	for _, h2 := range []bool{false, true} {
		_, body, err := env.mtlsGet(env.require, h2, certs(env.alice), "/up/x", forged...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(body, wantCert+"\n") || !strings.Contains(body, wantChain+"\n") {
			t.Errorf("h2 %v: upstream got\n%s\nwant %s and %s", h2, body, wantCert, wantChain)
		}
	}
	// Raw HTTP/1.1, spellings a parser might treat apart.
	cfg := env.clientConfig("localhost")
	cfg.Certificates = certs(env.alice)
	cfg.NextProtos = []string{"http/1.1"}
	conn, err := tls.Dial("tcp", env.require, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET /up/raw HTTP/1.1\r\nHost: localhost\r\nclient-cert: :YQ==:\r\nCLIENT-CERT: :Yg==:\r\ncLiEnT-cErT-cHaIn: :Yw==:\r\nClient-Cert-Chain: :ZA==:\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if body := string(b); !strings.Contains(body, wantCert+"\n") || !strings.Contains(body, wantChain+"\n") {
		t.Errorf("raw h1: upstream got\n%s", body)
	}
	// No certificate: nothing goes up, whatever the client sends.
	_, body, err := env.mtlsGet(env.verifyIfGiven, false, nil, "/up/x", forged...)
	if err != nil {
		t.Fatal(err)
	}
	if body != "cert=[]\nchain=[]\n" {
		t.Errorf("without a certificate the upstream got\n%s", body)
	}
	// A certificate that did not verify (request mode): none either.
	_, body, err = env.mtlsGet(env.request, true, certs(env.stranger), "/up/x", forged...)
	if err != nil {
		t.Fatal(err)
	}
	if body != "cert=[]\nchain=[]\n" {
		t.Errorf("with an unverified certificate the upstream got\n%s", body)
	}
	// HTTP/3, with quic-go's client presenting the certificate.
	h3 := env.h3ClientWith(t, env.alice)
	resp3, body3 := h3Get(t, h3, "GET", "https://"+env.require+"/up/h3", "Client-Cert", ":Zm9yZ2Vk:", "client-cert-chain", ":Zm9yZ2Vk:")
	if resp3.ProtoMajor != 3 || !strings.Contains(string(body3), wantCert+"\n") || !strings.Contains(string(body3), wantChain+"\n") {
		t.Errorf("h3 (%s): upstream got\n%s", resp3.Proto, body3)
	}
}

// h3ClientWith is an HTTP/3 client presenting cert.
func (env *mtlsEnv) h3ClientWith(t *testing.T, cert ...tls.Certificate) *http.Client {
	cfg := env.clientConfig("localhost")
	cfg.Certificates = cert
	tr := &http3.Transport{TLSClientConfig: cfg, DisableCompression: true}
	t.Cleanup(func() { _ = tr.Close() })
	return &http.Client{Transport: tr, Timeout: 15 * time.Second}
}

// TestClientAuthHTTP3: over QUIC, require refuses a client without a
// certificate and a revoked one, and the access rules and FastCGI see
// the certificate as over TCP.
func TestClientAuthHTTP3(t *testing.T) {
	t.Parallel()
	env := startMTLS(t)
	base := "https://" + env.require
	resp, body := h3Get(t, env.h3ClientWith(t, env.admin), "GET", base+"/admin")
	if resp.StatusCode != 200 || string(body) != "admin\n" || resp.ProtoMajor != 3 {
		t.Errorf("admin over h3: %s %d %q", resp.Proto, resp.StatusCode, body)
	}
	resp, _ = h3Get(t, env.h3ClientWith(t, env.alice), "GET", base+"/admin")
	if resp.StatusCode != 403 {
		t.Errorf("alice on /admin over h3: %d, want 403", resp.StatusCode)
	}
	_, body = h3Get(t, env.h3ClientWith(t, env.alice), "GET", base+"/fcgi/x")
	if !strings.Contains(string(body), `SSL_CLIENT_VERIFY="SUCCESS"`) || !strings.Contains(string(body), "CN=alice") {
		t.Errorf("FastCGI over h3:\n%s", body)
	}
	for what, c := range map[string]*http.Client{
		"no certificate": env.h3ClientWith(t),
		"revoked":        env.h3ClientWith(t, env.revoked),
		"another CA's":   env.h3ClientWith(t, env.stranger),
	} {
		req, _ := http.NewRequest("GET", base+"/", nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Errorf("h3, %s: answered %d, want the handshake refused", what, resp.StatusCode)
		}
	}
}

// TestClientAuthCRLReload: a certificate revoked after the start is
// refused once a reload (SIGHUP) read the new revocation list, also when
// the client resumes a session it got before.
func TestClientAuthCRLReload(t *testing.T) {
	t.Parallel()
	env := startMTLS(t)
	if _, _, err := env.mtlsGet(env.require, false, certs(env.alice), "/"); err != nil {
		t.Fatalf("alice before the reload: %v", err)
	}
	sessions := tls.NewLRUClientSessionCache(4)
	if _, err := env.rawGet(certs(env.alice), sessions); err != nil {
		t.Fatalf("alice's first session: %v", err)
	}
	if resumed, err := env.rawGet(certs(env.alice), sessions); err != nil || !resumed {
		t.Fatalf("alice's second connection: resumed %v, %v", resumed, err)
	}
	env.pki.revoke(t, env.revokedLeaf, env.aliceLeaf)
	cfg, err := config.Load(filepath.Join(env.dir, "gale.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if status, _, err := env.mtlsGet(env.require, false, certs(env.alice), "/"); err == nil {
		t.Fatalf("alice after her certificate was revoked: %d, want the handshake refused", status)
	}
	if _, err := env.rawGet(certs(env.alice), sessions); err == nil {
		t.Fatal("alice resuming her session after her certificate was revoked: answered, want refused")
	}
	if _, _, err := env.mtlsGet(env.require, false, certs(env.admin), "/"); err != nil {
		t.Fatalf("admin after the reload: %v", err)
	}
}

// TestClientAuthAccessLog: the JSON access log names the client's
// certificate.
func TestClientAuthAccessLog(t *testing.T) {
	t.Parallel()
	env := startMTLS(t)
	if _, _, err := env.mtlsGet(env.require, false, certs(env.alice), "/logged"); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`"tls":{"client_common_name":"alice","client_serial":"%s","client_subject":"CN=alice,O=gale tests"`, strings.ToUpper(env.aliceLeaf.SerialNumber.Text(16)))
	p := filepath.Join(env.dir, "access.log")
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), "/logged") {
			if !strings.Contains(string(b), want) || !strings.Contains(string(b), `"client_verify":"SUCCESS"`) {
				t.Fatalf("access log:\n%s\nwant %s", b, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no access log line for /logged:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClientAuthCurl: curl --cert/--key against require.
func TestClientAuthCurl(t *testing.T) {
	t.Parallel()
	curl := needTool(t, "curl")
	env := startMTLS(t)
	ca := env.writeRootCA(t)
	_, port, _ := net.SplitHostPort(env.require)
	url := "https://localhost:" + port + "/admin"
	base := []string{"-sS", "--cacert", ca, "--resolve", "localhost:" + port + ":127.0.0.1", "--max-time", "10"}
	run := func(args ...string) (string, error) {
		return runTool(t, "", curl, append(append(append([]string{}, base...), args...), url)...)
	}
	pem := func(n string) string { return filepath.Join(env.dir, n) }
	if out, err := run("--cert", pem("admin.pem"), "--key", pem("admin.key")); err != nil || out != "admin\n" {
		t.Errorf("curl with admin's certificate: %v\n%s", err, out)
	}
	if out, err := run("--cert", pem("alice.pem"), "--key", pem("alice.key"), "-o", "/dev/null", "-w", "%{http_code}"); err != nil || out != "403" {
		t.Errorf("curl with alice's certificate on /admin: %v %s, want 403", err, out)
	}
	// Each is refused with its alert (which a reset of the connection
	// would destroy: the connection lingers after it).
	for _, c := range []struct {
		what, alert string
		args        []string
	}{
		{"no certificate", "alert certificate required", nil},
		{"revoked", "alert bad certificate", []string{"--cert", pem("revoked.pem"), "--key", pem("revoked.key")}},
		{"another CA's", "alert unknown ca", []string{"--cert", pem("stranger.pem"), "--key", pem("stranger.key")}},
	} {
		out, err := run(c.args...)
		if err == nil || !strings.Contains(out, c.alert) {
			t.Errorf("curl, %s: %v, want the %q:\n%s", c.what, err, c.alert, out)
		}
	}
}

// TestClientAuthOpenSSL: openssl s_client -cert/-key against require,
// over TLS 1.2 and 1.3.
func TestClientAuthOpenSSL(t *testing.T) {
	t.Parallel()
	openssl := needTool(t, "openssl")
	env := startMTLS(t)
	ca := env.writeRootCA(t)
	req := "GET /admin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
	pem := func(n string) string { return filepath.Join(env.dir, n) }
	for _, version := range []string{"-tls1_2", "-tls1_3"} {
		base := []string{"s_client", "-connect", env.require, "-servername", "localhost", "-CAfile", ca, "-verify_return_error", version, "-ign_eof"}
		out, err := runTool(t, req, openssl, append(base, "-cert", pem("admin.pem"), "-key", pem("admin.key"))...)
		if err != nil || !strings.Contains(out, "\r\n\r\nadmin\n") {
			t.Errorf("%s with admin's certificate: %v\n%s", version, err, out)
		}
		for what, args := range map[string][]string{
			"no certificate": nil,
			"revoked":        {"-cert", pem("revoked.pem"), "-key", pem("revoked.key")},
			"another CA's":   {"-cert", pem("stranger.pem"), "-key", pem("stranger.key")},
		} {
			out, _ := runTool(t, req, openssl, append(base, args...)...)
			if strings.Contains(out, "HTTP/1.1 ") {
				t.Errorf("%s, %s: answered, want refused:\n%s", version, what, out)
			}
			if !strings.Contains(out, "alert") {
				t.Errorf("%s, %s: no alert:\n%s", version, what, out)
			}
		}
	}
}

// TestClientAuthPerCertificate: client_auth on one certificate of a
// listener applies to the handshakes whose server name chooses it, over
// TCP and QUIC; the listener's other names ask for nothing.
func TestClientAuthPerCertificate(t *testing.T) {
	t.Parallel()
	var pki *clientPKI
	var alice tls.Certificate
	ts := startTLSServer(t, `listen:
  - address: 127.0.0.1:0
    http3: true
    tls:
      certificates:
        - $CERT
        - {cert: admin.pem, key: admin.key, client_auth: {mode: require, ca: clients-ca.pem}}
routes:
  - path: /
    access: [{allow: all, client_cert: verified}, {deny: all}]
    respond: {body: "verified\n"}
`, nil, func(ca *testCA, dir string) {
		ca.issue(dir, "admin", "admin.test")
		pki = newClientPKI(t, dir)
		_, alice = pki.client(t, pki.ca, "alice", "alice")
	})
	get := func(name string, h3 bool, cert ...tls.Certificate) (int, error) {
		cfg := ts.clientConfig(name)
		cfg.Certificates = cert
		var rt http.RoundTripper = &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
		if h3 {
			tr := &http3.Transport{TLSClientConfig: cfg}
			defer tr.Close()
			rt = tr
		}
		c := &http.Client{Transport: rt, Timeout: 10 * time.Second}
		req, _ := http.NewRequest("GET", "https://"+ts.tlsAddr+"/", nil)
		req.Host = name
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for _, h3 := range []bool{false, true} {
		if s, err := get("localhost", h3); err != nil || s != 403 {
			t.Errorf("h3 %v: localhost without a certificate: %d %v, want 403 (asked for nothing, denied by the route)", h3, s, err)
		}
		if s, err := get("admin.test", h3); err == nil {
			t.Errorf("h3 %v: admin.test without a certificate: %d, want the handshake refused", h3, s)
		}
		if s, err := get("admin.test", h3, alice); err != nil || s != 200 {
			t.Errorf("h3 %v: admin.test with alice's certificate: %d %v", h3, s, err)
		}
	}
	// Startup summary and gale route name the scoped client_auth.
	cfg, err := config.Load(filepath.Join(ts.dir, "gale.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Join(cfg.Summary(), "\n")
	if !strings.Contains(lines, "certificates[1].client_auth require ca ./clients-ca.pem") {
		t.Errorf("summary:\n%s", lines)
	}
}

// rawGet sends GET / over HTTP/1.1 on a new TLS connection to the require
// listener, presenting certs and resuming from sessions, and reports
// whether the session was resumed; an error when no 200 came back.
func (env *mtlsEnv) rawGet(certs []tls.Certificate, sessions tls.ClientSessionCache) (bool, error) {
	cfg := env.clientConfig("localhost")
	cfg.Certificates, cfg.ClientSessionCache, cfg.NextProtos = certs, sessions, []string{"http/1.1"}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", env.require, cfg)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"); err != nil {
		return false, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return false, err
	}
	_, _ = io.ReadAll(resp.Body) // reads the session ticket too, if it came after
	resumed := conn.ConnectionState().DidResume
	if resp.StatusCode != 200 {
		return resumed, fmt.Errorf("status %d", resp.StatusCode)
	}
	return resumed, nil
}

// anyNameSessions is a client session cache that offers its one session
// to every server name: a client that resumes a session under another
// name than the one it began under.
type anyNameSessions struct{ s *tls.ClientSessionState }

func (c *anyNameSessions) Get(string) (*tls.ClientSessionState, bool) { return c.s, c.s != nil }
func (c *anyNameSessions) Put(_ string, s *tls.ClientSessionState) {
	if s != nil {
		c.s = s
	}
}

// TestClientAuthResumeAcrossNames: a session that began under one
// certificate's client_auth (request: any certificate is accepted) and is
// resumed under another's (verify_if_given) has its certificate verified
// again: another CA's certificate is not let through as verified.
func TestClientAuthResumeAcrossNames(t *testing.T) {
	t.Parallel()
	var stranger tls.Certificate
	ts := startTLSServer(t, `listen:
  - address: 127.0.0.1:0
    tls:
      certificates:
        - $CERT
        - {cert: admin.pem, key: admin.key, client_auth: {mode: verify_if_given, ca: clients-ca.pem}}
      client_auth: {mode: request, ca: clients-ca.pem}
routes:
  - path: /
    access: [{allow: all, client_cert: verified}, {deny: all}]
    respond: {body: "verified\n"}
`, nil, func(ca *testCA, dir string) {
		ca.issue(dir, "admin", "admin.test")
		pki := newClientPKI(t, dir)
		_, stranger = pki.client(t, pki.stranger, "stranger", "alice")
	})
	sessions := &anyNameSessions{}
	get := func(name string, skip bool, cert ...tls.Certificate) (int, bool, error) {
		cfg := ts.clientConfig(name)
		cfg.Certificates, cfg.ClientSessionCache, cfg.InsecureSkipVerify = cert, sessions, skip
		cfg.NextProtos = []string{"http/1.1"}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", ts.tlsAddr, cfg)
		if err != nil {
			return 0, false, err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: "+name+"\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return 0, conn.ConnectionState().DidResume, err
		}
		_, _ = io.ReadAll(resp.Body)
		return resp.StatusCode, conn.ConnectionState().DidResume, nil
	}
	if s, _, err := get("localhost", false, stranger); err != nil || s != 403 {
		t.Fatalf("localhost (request) with another CA's certificate: %d %v, want 403", s, err)
	}
	if sessions.s == nil {
		t.Fatal("no session to resume")
	}
	s, resumed, err := get("admin.test", true)
	if err == nil && s == 200 {
		t.Fatalf("admin.test resuming the session of another CA's certificate: 200 (resumed %v), want it refused", resumed)
	}
	t.Logf("admin.test resuming: status %d resumed %v err %v", s, resumed, err)
}

// TestClientAuthCRLPoll: a new revocation list written over the crl file
// is picked up by the file watcher (Poll) without a reload; one that does
// not load leaves the running one in place.
func TestClientAuthCRLPoll(t *testing.T) {
	t.Parallel()
	env := startMTLS(t)
	tl := env.srv.listeners[0].tls
	writeAtomic(t, filepath.Join(env.dir, "clients.crl"), []byte("-----BEGIN X509 CRL-----\nbroken\n-----END X509 CRL-----\n"))
	tl.Poll() // what the watcher runs: the files are looked at now
	if _, _, err := env.mtlsGet(env.require, false, certs(env.alice), "/"); err != nil {
		t.Fatalf("alice after a broken list was written: %v", err)
	}
	if _, _, err := env.mtlsGet(env.require, false, certs(env.revoked), "/"); err == nil {
		t.Fatal("the revoked certificate after a broken list was written: accepted, want the running list kept")
	}
	env.pki.revoke(t, env.aliceLeaf)
	tl.Poll()
	if _, _, err := env.mtlsGet(env.require, false, certs(env.alice), "/"); err == nil {
		t.Fatal("alice after the new list: accepted, want refused")
	}
	if _, _, err := env.mtlsGet(env.require, false, certs(env.revoked), "/"); err != nil {
		t.Fatalf("mallory, off the new list: %v", err)
	}
}
