package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// freeAddr returns a 127.0.0.1 address no one listens on at the moment.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// writeTestCert writes a self-signed ECDSA certificate for 127.0.0.1 and
// its key into dir.
func writeTestCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// A SIGHUP every 200 ms for 20 s while keep-alive, pipelined, TLS and
// proxied clients run: no request fails, no connection is reset, and the
// route the reloads change answers the new way before the next reload.
func TestReloadUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("20 seconds of reloads")
	}
	dir := t.TempDir()
	certFile, keyFile := writeTestCert(t, dir)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "up "+r.URL.Path) }))
	defer up.Close()
	plain, secure := freeAddr(t), freeAddr(t)
	file := filepath.Join(dir, "gale.yaml")
	write := func(version int) {
		t.Helper()
		doc := fmt.Sprintf(`listen:
  - %q
  - {address: %q, tls: {certificates: [{cert: %s, key: %s}]}}
routes:
  - path: /v
    respond: {body: "v%d"}
  - path: /up/
    proxy: {to: [%q]}
`, plain, secure, certFile, keyFile, version, up.URL)
		if err := os.WriteFile(file+".tmp", []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".tmp", file); err != nil { // a reload never reads half a file
			t.Fatal(err)
		}
	}
	write(0)
	p := startCommand(t, exec.Command(galeBinary(t), "serve", "-c", file))
	base := "http://" + plain

	var version atomic.Int64 // the newest version written; responses may lag it by one
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var requests atomic.Int64
	fail := make(chan error, 16)
	report := func(err error) {
		select {
		case fail <- err:
		default:
		}
	}
	checkV := func(body string) {
		var v int64
		if _, err := fmt.Sscanf(body, "v%d", &v); err != nil {
			report(fmt.Errorf("body %q", body))
			return
		}
		if now := version.Load(); v != now && v != now-1 {
			report(fmt.Errorf("body %q while version %d is written", body, now))
		}
	}
	client := func(name string, get func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := get(); err != nil {
					report(fmt.Errorf("%s: %w", name, err))
					return
				}
				requests.Add(1)
			}
		}()
	}
	httpGet := func(c *http.Client, url string, check func(string)) func() error {
		return func() error {
			resp, err := c.Get(url)
			if err != nil {
				return err
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 {
				return fmt.Errorf("%s: %d %v", url, resp.StatusCode, err)
			}
			check(string(b))
			return nil
		}
	}
	keepAlive := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2, DisableCompression: true}}
	tlsClient := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
		ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 2,
	}}
	client("keep-alive", httpGet(keepAlive, base+"/v", checkV))
	client("tls", httpGet(tlsClient, "https://"+secure+"/v", checkV))
	client("proxied", httpGet(keepAlive, base+"/up/x", func(b string) {
		if b != "up /up/x" {
			report(fmt.Errorf("proxied body %q", b))
		}
	}))
	pipe, err := net.Dial("tcp", plain)
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Close()
	br := bufio.NewReader(pipe)
	client("pipelined", func() error {
		const depth = 8
		if _, err := io.WriteString(pipe, strings.Repeat("GET /v HTTP/1.1\r\nHost: x\r\n\r\n", depth)); err != nil {
			return err
		}
		for range depth {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				return err
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 {
				return fmt.Errorf("pipelined: %d %v", resp.StatusCode, err)
			}
			checkV(string(b))
		}
		return nil
	})

	// The reloads: each one is seen answering before the next is sent.
	end := time.Now().Add(20 * time.Second)
	reloads, slowest := 0, time.Duration(0)
	for time.Now().Before(end) {
		next := version.Load() + 1
		write(int(next))
		version.Store(next)
		sent := time.Now()
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("v%d", next)
		for {
			resp, err := keepAlive.Get(base + "/v")
			if err != nil {
				t.Fatalf("reload %d: %v", next, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) == want {
				break
			}
			if time.Since(sent) > 5*time.Second {
				t.Fatalf("reload %d not answering after 5 s (body %q)", next, b)
			}
		}
		slowest = max(slowest, time.Since(sent))
		reloads++
		select {
		case err := <-fail:
			t.Fatal(err)
		case <-time.After(time.Until(sent.Add(200 * time.Millisecond))):
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-fail:
		t.Fatal(err)
	default:
	}
	t.Logf("%d reloads, %d requests, slowest reload seen after %v", reloads, requests.Load(), slowest)
	p.stop(t)
}
