package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gale/acme/acmetest"
)

// Automatic HTTPS from the command line, against Pebble: the quick
// commands obtain their certificates, and two gale processes sharing one
// storage directory obtain one certificate between them.

// freePort returns a port free on 127.0.0.1 a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// httpsGet fetches path from addr over TLS for name, verifying the chain
// against roots, and returns the body and the certificate's serial. The
// handshake waits on the server while the certificate is obtained.
func httpsGet(t *testing.T, addr, name, path string, roots *x509.CertPool) (string, string) {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 30 * time.Second}, "tcp", addr, &tls.Config{ServerName: name, RootCAs: roots})
	if err != nil {
		t.Fatalf("TLS to %s for %s: %v", addr, name, err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, name)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s for %s: %d %q", path, name, resp.StatusCode, body)
	}
	return string(body), c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestFileServerDomain: gale file-server --domain obtains its certificate
// by either challenge and serves the directory over HTTPS, redirecting
// plain HTTP for the name.
func TestFileServerDomain(t *testing.T) {
	ca := acmetest.Start(t, acmetest.Options{Log: acmetest.TestLog(t)})
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "index.html"), []byte("files\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	httpPort, httpsPort := freePort(t), freePort(t)
	https := "127.0.0.1:" + strconv.Itoa(httpsPort)
	p := startGale(t, "file-server", "--root", root, "--domain", "f.gale.test",
		"--listen", https, "--http", "127.0.0.1:"+strconv.Itoa(httpPort),
		"--ca", ca.URL, "--ca-root", ca.RootFile, "--storage", t.TempDir())
	ca.Ready(httpPort, httpsPort)
	if body, _ := httpsGet(t, https, "f.gale.test", "/", ca.IssuerRoots()); body != "files\n" {
		t.Errorf("body %q", body)
	}
	req, _ := http.NewRequest("GET", p.base+"/a", nil)
	req.Host = "f.gale.test"
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := "https://f.gale.test:" + strconv.Itoa(httpsPort) + "/a"; resp.StatusCode != 301 || resp.Header.Get("Location") != want {
		t.Errorf("plain GET: %d %q, want 301 to %s", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	p.stop(t)
}

// TestReverseProxyDomain: gale reverse-proxy --from NAME:PORT obtains a
// certificate for NAME and forwards over HTTPS.
func TestReverseProxyDomain(t *testing.T) {
	ca := acmetest.Start(t, acmetest.Options{Log: acmetest.TestLog(t)})
	up := newUpstream(t, "proxied\n")
	httpPort, httpsPort := freePort(t), freePort(t)
	https := "127.0.0.1:" + strconv.Itoa(httpsPort)
	p := startGale(t, "reverse-proxy", "--from", "p.gale.test:"+strconv.Itoa(httpsPort), "--to", up,
		"--http", "127.0.0.1:"+strconv.Itoa(httpPort), "--ca", ca.URL, "--ca-root", ca.RootFile, "--storage", t.TempDir())
	ca.Ready(httpPort, httpsPort)
	if body, _ := httpsGet(t, https, "p.gale.test", "/", ca.IssuerRoots()); body != "proxied\n" {
		t.Errorf("body %q", body)
	}
	p.stop(t)
}

// newUpstream serves body on 127.0.0.1 and returns its address.
func newUpstream(t *testing.T, body string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestSharedStorage: two gale processes share one storage directory.
// Only the first one's plain port is where the CA validates HTTP-01, so
// the second one's challenges are answered by the first, from storage;
// and a name both manage is obtained once, by whichever takes certmagic's
// lock, then loaded by the other.
func TestSharedStorage(t *testing.T) {
	ca := acmetest.Start(t, acmetest.Options{Log: acmetest.TestLog(t)})
	storage := t.TempDir()
	ports := [4]int{freePort(t), freePort(t), freePort(t), freePort(t)}
	start := func(plain, tls int, domains string) *galeProc {
		file := filepath.Join(t.TempDir(), "gale.yaml")
		yaml := fmt.Sprintf(`listen:
  - "127.0.0.1:%d"
  - address: "127.0.0.1:%d"
    tls: {automatic: {domains: [%s], challenges: [http-01], ca: %q, ca_root: %q, storage: %q}}
routes:
  - path: /
    respond: {body: "shared\n"}
`, plain, tls, domains, ca.URL, ca.RootFile, storage)
		if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return startGale(t, "serve", "-c", file)
	}
	first := start(ports[0], ports[1], "both.gale.test")
	second := start(ports[2], ports[3], "both.gale.test, second.gale.test")
	ca.Ready(ports[0], 1)

	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	defer func() {
		if t.Failed() {
			t.Logf("first process:\n%s\nsecond process:\n%s", first.stderr.String(), second.stderr.String())
		}
	}()
	_, s1 := httpsGet(t, addr(ports[1]), "both.gale.test", "/", ca.IssuerRoots())
	_, s2 := httpsGet(t, addr(ports[3]), "both.gale.test", "/", ca.IssuerRoots())
	httpsGet(t, addr(ports[3]), "second.gale.test", "/", ca.IssuerRoots())
	if s1 != s2 {
		t.Errorf("the processes serve certificates %s and %s for the name they share", s1, s2)
	}
	if n := ca.IssuedFor("both.gale.test"); n != 1 {
		t.Errorf("the CA issued %d certificates for the shared name, want 1", n)
	}
	if n := ca.IssuedFor("second.gale.test"); n != 1 {
		t.Errorf("the CA issued %d certificates for second.gale.test, want 1", n)
	}
	if !strings.Contains(first.stderr.String(), "second.gale.test") {
		t.Errorf("the first process's log does not show it answered the second's challenge:\n%s", first.stderr.String())
	}
	first.stop(t)
	second.stop(t)
}
