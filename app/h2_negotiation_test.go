package app

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"

	"golang.org/x/net/http2"
)

// TestH2ForbiddenCipher negotiates h2 over TLS 1.2 with a CBC suite,
// which RFC 9113 section 9.2.2 forbids: gale answers GOAWAY
// INADEQUATE_SECURITY and closes, serving no stream.
func TestH2ForbiddenCipher(t *testing.T) {
	t.Parallel()
	ts := h2Server(t, nil)
	cfg := ts.clientConfig("localhost")
	cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	cfg.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}
	cfg.NextProtos = []string{"h2"}
	c := ts.dialTLS(cfg)
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Skipf("ALPN chose %q under a CBC suite", p)
	}
	hc := &h2Client{t: t, c: c, fr: http2.NewFramer(c, c), id: 1}
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	_ = hc.fr.WriteSettings()
	hc.get("/hello")
	for {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			t.Fatalf("closed without GOAWAY: %v", err)
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			if f.ErrCode != http2.ErrCodeInadequateSecurity {
				t.Fatalf("GOAWAY %v", f.ErrCode)
			}
			return
		case *http2.HeadersFrame, *http2.DataFrame:
			t.Fatalf("served a stream under a forbidden suite: %v", f)
		}
	}
}

// TestH2UpgradeHeaderIgnored sends HTTP/1.1 requests asking to upgrade to
// h2c (deprecated by RFC 9113): they are answered as HTTP/1.1, with no 101.
func TestH2UpgradeHeaderIgnored(t *testing.T) {
	t.Parallel()
	ts := h2Server(t, nil)
	for _, hdr := range []string{
		"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n",
		"Connection: upgrade\r\nUpgrade: H2C\r\n",
	} {
		c := (&testServer{t: t, addr: ts.plainAddr()}).dial()
		fmt.Fprintf(c, "GET /hello HTTP/1.1\r\nHost: localhost\r\n%s\r\n", hdr)
		resp, body := readResponse(t, bufio.NewReader(c), "GET")
		if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 1 || body != "hello\n" {
			t.Fatalf("%q: %d %s %q", hdr, resp.StatusCode, resp.Proto, body)
		}
	}
}
