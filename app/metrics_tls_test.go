package app

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

const tlsMetricsSite = `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT], client_hello_timeout: 300ms}}
metrics: {listen: "127.0.0.1:0"}
routes:
  - path: /
    respond: {status: 200, body: "hello\n"}
`

// Each TLS handshake is counted once: successes by version (with those
// whose server name matched no certificate), failures by reason, each
// reason brought about by a real client.
func TestMetricsTLSHandshakes(t *testing.T) {
	ts := startTLSServer(t, tlsMetricsSite, nil, nil)
	handshake := func(cfg *tls.Config, wantOK bool) {
		t.Helper()
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ts.tlsAddr, cfg)
		if (err == nil) != wantOK {
			t.Fatalf("handshake %+v: err %v, want success %v", cfg, err, wantOK)
		}
		if err == nil {
			// A request first, so that the server's side of the
			// handshake is surely done: one that the client closes at
			// once may count as closed.
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 200 {
				t.Fatalf("request after the handshake: %v %v", resp, err)
			}
			c.Close()
		}
	}
	handshake(ts.clientConfig("localhost"), true)
	tls12 := ts.clientConfig("localhost")
	tls12.MaxVersion = tls.VersionTLS12
	handshake(tls12, true)
	handshake(&tls.Config{ServerName: "other.example", InsecureSkipVerify: true}, true)
	handshake(&tls.Config{ServerName: "localhost"}, false) // the client does not trust the certificate: an alert
	old := ts.clientConfig("localhost")
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	handshake(old, false)
	cipher := ts.clientConfig("localhost")
	cipher.MaxVersion = tls.VersionTLS12
	cipher.CipherSuites = []uint16{tls.TLS_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}
	handshake(cipher, false)
	alpn := ts.clientConfig("localhost")
	alpn.NextProtos = []string{"h3-only"}
	handshake(alpn, false)
	// Plain HTTP to the TLS port.
	plain, err := net.Dial("tcp", ts.tlsAddr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(plain, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	defer plain.Close()
	// A client that says nothing until client_hello_timeout passes.
	silent, err := net.Dial("tcp", ts.tlsAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// One that goes away after a part of its ClientHello.
	gone, err := net.Dial("tcp", ts.tlsAddr)
	if err != nil {
		t.Fatal(err)
	}
	gone.Write([]byte{0x16, 0x03, 0x01, 0x01, 0x00, 0x01})
	gone.Close() // whether gale reads the bytes and the FIN at once or apart, the handshake is "closed"

	want := map[string]float64{"client_alert": 1, "version": 1, "cipher": 1, "alpn": 1, "not_tls": 1, "timeout": 1, "closed": 1, "bad_record": 0, "refused": 0, "other": 0}
	var fams map[string]*dto.MetricFamily
	waitUntil(5*time.Second, func() bool {
		fams = scrape(t, ts.testServer)
		done := sum(fams, "gale_tls_handshakes_total") == 3
		for r, n := range want {
			done = done && sum(fams, "gale_tls_handshake_failures_total", "reason", r) == n
		}
		return done
	})
	for r, n := range want {
		if got := sum(fams, "gale_tls_handshake_failures_total", "reason", r); got != n {
			t.Errorf("handshake failures for %s: %v, want %v", r, got, n)
		}
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"gale_tls_handshakes_total", []string{"version", "1.3"}, 2},
		{"gale_tls_handshakes_total", []string{"version", "1.2"}, 1},
		{"gale_tls_unknown_server_name_total", nil, 1},
	} {
		if got := sum(fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}
