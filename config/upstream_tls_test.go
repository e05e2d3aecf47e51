package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpstreamTLS checks proxy.tls: files loaded at load, defaults for an
// https:// upstream without the section, and positioned errors.
func TestUpstreamTLS(t *testing.T) {
	dir := t.TempDir()
	p := newTestPair(t, "app.internal")
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.pem", p.interPEM)
	write("client.pem", p.leafPEM)
	write("client.key", p.keyPEM)
	write("empty.pem", []byte("nothing here\n"))
	head := "listen: [\"127.0.0.1:8080\"]\nroutes:\n  - path: /\n    proxy:\n"
	tests := []struct {
		name, proxy, want string
	}{
		{"https without tls", "      to: https://app.internal:8443\n", ""},
		{"full", "      to: https://app.internal:8443\n      tls: {server_name: App.Internal, ca: ca.pem, certificate: client.pem, key: client.key, min_version: 1.3}\n", ""},
		{"tls with an http upstream", "      to: [\"app.internal:8443\", http://app.internal:8080]\n      tls: {ca: ca.pem}\n",
			`x.yaml:6:7: routes[0].proxy.tls: upstream "http://app.internal:8080" is http:// (cleartext) but the route has a tls section`},
		{"tls makes host:port upstreams TLS", "      to: \"app.internal:8443\"\n      tls: {insecure_skip_verify: true}\n", ""},
		{"no such ca", "      to: https://app.internal\n      tls: {ca: nope.pem}\n",
			`x.yaml:6:17: routes[0].proxy.tls.ca: cannot read the CA bundle`},
		{"ca without certificates", "      to: https://app.internal\n      tls: {ca: empty.pem}\n",
			`x.yaml:6:17: routes[0].proxy.tls.ca: "$DIR/empty.pem" holds no PEM CERTIFICATE block`},
		{"certificate without key", "      to: https://app.internal\n      tls: {certificate: client.pem}\n",
			`x.yaml:6:13: routes[0].proxy.tls.certificate: certificate needs key`},
		{"key of another certificate", "      to: https://app.internal\n      tls: {certificate: client.pem, key: ca.pem}\n",
			`routes[0].proxy.tls.key:`},
		{"bad server name", "      to: https://app.internal\n      tls: {server_name: \"a b\"}\n",
			`x.yaml:6:26: routes[0].proxy.tls.server_name: expected a host name`},
		{"bad min_version", "      to: https://app.internal\n      tls: {min_version: \"1.1\"}\n",
			`routes[0].proxy.tls.min_version:`},
		{"insecure with ca", "      to: https://app.internal\n      tls: {insecure_skip_verify: true, ca: ca.pem}\n",
			`routes[0].proxy.tls.insecure_skip_verify: the upstream's certificate is not verified`},
		{"h2c over https", "      to: https://app.internal\n      protocol: h2c\n",
			`routes[0].proxy.protocol: h2c is HTTP/2 over cleartext`},
		{"h2 over https", "      to: https://app.internal\n      protocol: h2\n", ""},
		{"h2 to a cleartext upstream", "      to: [https://app.internal, \"app.internal:80\"]\n      protocol: h2\n",
			`routes[0].proxy.protocol: h2 is HTTP/2 over TLS, but upstream "app.internal:80" is cleartext`},
		{"auto over https", "      to: https://app.internal\n      protocol: auto\n", ""},
		{"auto to a cleartext upstream", "      to: \"app.internal:80\"\n      protocol: auto\n",
			`routes[0].proxy.protocol: auto chooses the protocol by ALPN, over TLS, but upstream "app.internal:80" is cleartext`},
		{"unknown key", "      to: https://app.internal\n      tls: {server_nam: x}\n",
			`routes[0].proxy.tls.server_nam:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, "x.yaml")
			cfg, err := Parse([]byte(head+tt.proxy), file)
			if tt.want != "" {
				got := renderOutcome(cfg, err, file, dir)
				if !strings.Contains(got, tt.want) {
					t.Fatalf("outcome:\n%s\nwant it to contain:\n%s", got, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			px := cfg.Routes[0].Proxy
			if !px.To[0].TLS || px.TLS == nil || px.TLS.ID == "" {
				t.Fatalf("to %+v tls %+v", px.To, px.TLS)
			}
			if sum := strings.Join(cfg.Summary(), "\n"); !strings.Contains(sum, "(tls 1.") {
				t.Errorf("summary does not show the TLS settings:\n%s", sum)
			}
			if strings.Contains(tt.proxy, "ca.pem") {
				if px.TLS.Roots == nil || px.TLS.ClientCert == nil || px.TLS.ServerName != "app.internal" || px.TLS.MinVersion != "1.3" {
					t.Fatalf("tls %+v", px.TLS)
				}
			}
		})
	}
}

// TestUpstreamTLSReload checks that a new CA file read by a new load
// changes the settings' identity, so new connections use it.
func TestUpstreamTLSReload(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "x.yaml")
	src := []byte("listen: [\"127.0.0.1:8080\"]\nroutes:\n  - path: /\n    proxy: {to: \"https://a:1\", tls: {ca: ca.pem}}\n")
	id := func(ca []byte) string {
		if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Parse(src, file)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Routes[0].Proxy.TLS.ID
	}
	a, b := id(newTestPair(t, "a").interPEM), id(newTestPair(t, "a").interPEM)
	if a == b {
		t.Fatal("a new CA bundle kept the identity of the old one")
	}
}
