package matrix

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"gale/app"
	"gale/config"
	"gale/gateway/fpmtest"
)

// patternBlock is the period of every response body: pattern(n) is its
// first n bytes repeated. Its length is a prime, so that a slip of a
// buffer's worth of bytes shows in the digest.
var patternBlock = func() string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 251)
	for j := range b {
		b[j] = alnum[(j*j+7*j+3)%len(alnum)]
	}
	return string(b)
}()

// pattern returns the response body of n bytes the applications send.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += len(patternBlock) {
		copy(b[i:], patternBlock)
	}
	return b
}

// digest is the "length sha256" line the applications answer in X-Got.
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return strconv.Itoa(len(b)) + " " + hex.EncodeToString(sum[:])
}

// echoPHP answers X-Got for the body PHP read, and pattern(n) in one
// echo (f=cl) or in flushed pieces (f=stream).
var echoPHP = `<?php
$b = file_get_contents('php://input');
header('X-Got: ' . strlen($b) . ' ' . hash('sha256', $b));
header('Content-Type: application/octet-stream');
$n = (int)($_GET['n'] ?? 0);
$s = substr(str_repeat('` + patternBlock + `', intdiv($n, 251) + 1), 0, $n);
if (($_GET['f'] ?? '') === 'stream') {
	foreach (str_split($s, 16384) as $p) { echo $p; flush(); }
} else {
	echo $s;
}
`

// echoHandler is the net/http application: X-Got for the body it read,
// then pattern(n) framed as f asks: "cl" with Content-Length, "chunked"
// (streamed: chunked over HTTP/1.1, DATA without content-length over
// HTTP/2) or "close" (HTTP/1.1 delimited by closing the connection).
func echoHandler(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading body: "+err.Error(), 500)
		return
	}
	n, _ := strconv.Atoi(r.URL.Query().Get("n"))
	body := pattern(n)
	switch r.URL.Query().Get("f") {
	case "close":
		writeClosing(w, digest(b), body)
		return
	case "chunked":
		w.Header().Set("X-Got", digest(b))
		w.WriteHeader(200)
		w.(http.Flusher).Flush() // the head goes without a length
		half := len(body) / 2
		_, _ = w.Write(body[:half])
		w.(http.Flusher).Flush()
		_, _ = w.Write(body[half:])
	default:
		w.Header().Set("X-Got", digest(b))
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}
}

// writeClosing answers an HTTP/1.1 response without a length, delimited
// by the end of the connection.
func writeClosing(w http.ResponseWriter, got string, body []byte) {
	conn, brw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		http.Error(w, "hijack: "+err.Error(), 500)
		return
	}
	defer conn.Close()
	_, _ = fmt.Fprintf(brw, "HTTP/1.1 200 OK\r\nX-Got: %s\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n", got)
	_, _ = brw.Write(body)
	_ = brw.Flush()
}

// upstream is a net/http application on 127.0.0.1 that counts the
// connections it accepted.
type upstream struct {
	addr  string
	conns atomic.Int64
}

// startUpstream serves echoHandler over HTTP/1.1, or h2c with prior
// knowledge only.
func startUpstream(t *testing.T, h2c bool) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{addr: ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(echoHandler), ReadHeaderTimeout: 30 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				u.conns.Add(1)
			}
		}}
	if h2c {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return u
}

// startTLSUpstream serves echoHandler over TLS with dir's cert.pem (ALPN
// h2 and http/1.1: the https and h2 route kinds share it).
func startTLSUpstream(t *testing.T, dir string) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{addr: ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(echoHandler), ReadHeaderTimeout: 30 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				u.conns.Add(1)
			}
		}}
	go func() { _ = srv.ServeTLS(ln, filepath.Join(dir, "cert.pem"), filepath.Join(dir, "cert.key")) }()
	t.Cleanup(func() { _ = srv.Close() })
	return u
}

// site is the running gale server with its applications.
type site struct {
	plain, tls string         // gale's listeners: HTTP/1.1 and h2c; TLS with HTTP/1.1, h2 and HTTP/3
	roots      *x509.CertPool // trusts the TLS listener's certificate
	up1, up2   *upstream      // the HTTP/1.1 and h2c applications
	up3        *upstream      // the application over TLS (HTTP/1.1 and h2)
	fpm        *fpmtest.FPM
	auth       string // the Authorization field the basic_auth routes accept
}

// wrappers are what stands before each body-reading route kind.
var wrappers = []string{"plain", "auth", "rl"}

// startSite starts php-fpm, the two net/http applications and gale;
// server holds further keys of gale's server section ("" for none).
func startSite(t *testing.T, server string) *site {
	t.Helper()
	dir := t.TempDir()
	s := &site{up1: startUpstream(t, false), up2: startUpstream(t, true)}
	// Every FastCGI route keeps up to 2 connections, each holding a worker.
	s.fpm = fpmtest.Start(t, "app/matrix", dir, "m", false, 2*2*len(wrappers)+2)
	for _, w := range wrappers {
		writeFile(t, filepath.Join(dir, "www", w, "fcgi", "echo.php"), []byte(echoPHP))
		writeFile(t, filepath.Join(dir, "www", w, "php", "echo.php"), []byte(echoPHP))
	}
	for _, n := range respSizes {
		writeFile(t, filepath.Join(dir, "files", "f"+strconv.Itoa(n)), pattern(n))
	}
	s.roots = writeCert(t, dir)
	s.up3 = startTLSUpstream(t, dir) // verified against cert.pem, for 127.0.0.1
	hash, err := bcrypt.GenerateFromPassword([]byte("alice-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	s.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:alice-pw"))
	srv := runGale(t, dir, s.config(string(hash), server))
	s.plain, s.tls = srv.Addrs()[0], srv.Addrs()[1]
	return s
}

// config renders gale's config: one event loop, and the routes that
// routes() describes. The php routes' root is www too: their try_files
// candidate {path} is the whole request path, prefix included.
func (s *site) config(hash, server string) string {
	var b strings.Builder
	b.WriteString(`listen:
  - "127.0.0.1:0"
  - {address: "127.0.0.1:0", http3: true, tls: {certificates: [{cert: cert.pem, key: cert.key}]}}
server:
  event_loops: 1
  timeouts: {read_header: 60s, read_body: 60s, write: 60s}
` + server + `
routes:
  - {path: /static/, static: {root: files, compress: {encodings: []}}}
  - {path: /respond, respond: {status: 200, body: "` + strings.ReplaceAll(respondBody, "\n", `\n`) + `", content_type: text/plain}}
  - {path: /redirect/, redirect: {to: "/elsewhere/", status: 308, keep_path: true}}
`)
	fcgi := func(root string) string {
		return fmt.Sprintf(`{to: "%s", root: %s, max_conns: 2, timeouts: {connect: 30s}}`, s.fpm.Listen, root)
	}
	for _, w := range wrappers {
		guard := ""
		switch w {
		case "auth":
			guard = `    basic_auth: {users: {alice: "` + hash + `"}}` + "\n"
		case "rl":
			guard = `    rate_limit: {rate: "100000/s", burst: 100000}` + "\n"
		}
		fmt.Fprintf(&b, "  - path: /%s/up1/\n%s    proxy: {to: [\"%s\"], timeouts: {connect: 30s}}\n", w, guard, s.up1.addr)
		fmt.Fprintf(&b, "  - path: /%s/up2/\n%s    proxy: {to: [\"%s\"], protocol: h2c, timeouts: {connect: 30s}}\n", w, guard, s.up2.addr)
		fmt.Fprintf(&b, "  - path: /%s/up3/\n%s    proxy: {to: [\"https://%s\"], tls: {ca: cert.pem}, timeouts: {connect: 30s}}\n", w, guard, s.up3.addr)
		fmt.Fprintf(&b, "  - path: /%s/up4/\n%s    proxy: {to: [\"https://%s\"], protocol: h2, tls: {ca: cert.pem}, timeouts: {connect: 30s}}\n", w, guard, s.up3.addr)
		fmt.Fprintf(&b, "  - path: /%s/fcgi/\n%s    fastcgi: %s\n", w, guard, fcgi("www"))
		fmt.Fprintf(&b, "  - path: /%s/php/\n%s    php: %s\n", w, guard, fcgi("www"))
	}
	return b.String()
}

// runGale loads yamlText from dir and runs it until the test ends.
func runGale(t *testing.T, dir, yamlText string) *app.Server {
	t.Helper()
	file := filepath.Join(dir, "gale.yaml")
	writeFile(t, file, []byte(yamlText))
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yamlText)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("GALE_MATRIX_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv, err := app.New(cfg, log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run() }()
	select {
	case <-srv.Booted():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server did not boot")
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Stop(ctx)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
	})
	return srv
}

// writeFile writes a file, dated an hour ago as a deployed file is (a
// file changed a moment ago is within the static cache's racy window).
func writeFile(t *testing.T, p string, body []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

// writeCert writes a self-signed certificate for 127.0.0.1 and localhost
// as dir/cert.pem and dir/cert.key, and returns a pool that trusts it.
func writeCert(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writeFile(t, filepath.Join(dir, "cert.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return pool
}

// tlsConfig is the clients' TLS config for the site, offering protos.
func (s *site) tlsConfig(protos ...string) *tls.Config {
	return &tls.Config{RootCAs: s.roots, ServerName: "localhost", NextProtos: protos}
}
