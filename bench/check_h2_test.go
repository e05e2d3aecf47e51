package main

import (
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckH2Response checks that the HTTP/2 check passes a server that
// speaks HTTP/2 over TLS 1.3 with the bench certificate, or h2c with prior
// knowledge, and fails one that offers only HTTP/1.1, only TLS 1.2, or
// HTTP/1.1 in cleartext.
func TestCheckH2Response(t *testing.T) {
	cert, err := writeBenchCert(filepath.Join(t.TempDir(), "tls"))
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(cert.CertFile, cert.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(respondBody)
	want := fixture{Name: "respond", Size: len(body), SHA256: sha256Hex(body)}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
	start := func(h2 bool, maxVersion uint16) *httptest.Server {
		srv := httptest.NewUnstartedServer(handler)
		srv.EnableHTTP2 = h2
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are expected
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MaxVersion: maxVersion}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv
	}
	h2W, _ := findWorkload("h2-respond")
	h2cW, _ := findWorkload("h2c-respond")

	if c := checkH2Response(start(true, 0).URL+"/respond", h2W, want, cert); !c.OK || c.Proto != "HTTP/2.0" || c.TLSVersion != "TLS 1.3" {
		t.Errorf("h2 over TLS 1.3: %+v", c)
	}
	for name, srv := range map[string]*httptest.Server{"HTTP/1.1 only": start(false, 0), "TLS 1.2 only": start(true, tls.VersionTLS12)} {
		if c := checkH2Response(srv.URL+"/respond", h2W, want, cert); c.OK || c.Error == "" {
			t.Errorf("%s passed: %+v", name, c)
		}
	}

	h2c := httptest.NewUnstartedServer(handler)
	h2c.Config.Protocols = new(http.Protocols)
	h2c.Config.Protocols.SetHTTP1(true)
	h2c.Config.Protocols.SetUnencryptedHTTP2(true)
	h2c.Start()
	defer h2c.Close()
	if c := checkH2Response(h2c.URL+"/respond", h2cW, want, cert); !c.OK || c.Proto != "HTTP/2.0" {
		t.Errorf("h2c: %+v", c)
	}
	h1 := httptest.NewServer(handler)
	defer h1.Close()
	if c := checkH2Response(h1.URL+"/respond", h2cW, want, cert); c.OK || !strings.Contains(c.Error, "http2") {
		t.Errorf("h2c against HTTP/1.1 passed: %+v", c)
	}
}
