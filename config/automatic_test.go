package config

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestAutomaticDefaults checks what an automatic section holds when only
// its names are written: Let's Encrypt production, both challenges where
// a plain listener exists (tls-alpn-01 alone where none does), the
// redirect of plain HTTP, and storage under systemd's StateDirectory or
// the XDG data directory.
func TestAutomaticDefaults(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "gale.yaml")
	const tail = "routes: [{path: /, respond: {body: hi}}]\n"
	t.Setenv("STATE_DIRECTORY", "")
	t.Setenv("XDG_DATA_HOME", "/var/xdg")
	cfg, err := Parse([]byte(`listen: [":80", {address: ":443", tls: {automatic: {domains: [Example.com., www.example.com]}}}]`+"\n"+tail), file)
	if err != nil {
		t.Fatal(err)
	}
	want := &Automatic{
		Domains: []string{"example.com", "www.example.com"}, CA: LetsEncrypt, Storage: "/var/xdg/gale",
		HTTP01: true, TLSALPN01: true, RedirectHTTP: true, Pos: Pos{1, 52},
	}
	if got := cfg.Listen[1].TLS.Automatic; !reflect.DeepEqual(got, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", got, want)
	}

	t.Setenv("STATE_DIRECTORY", "/var/lib/gale:/var/lib/other")
	cfg, err = Parse([]byte(`listen: {address: ":443", tls: {automatic: {ca: letsencrypt-staging, on_demand: {ask: "http://127.0.0.1:9/ok", rate: 2/h}}}}`+"\n"+tail), file)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Listen[0].TLS.Automatic
	if a.Storage != "/var/lib/gale" || a.CA != LetsEncryptStaging || a.HTTP01 || !a.TLSALPN01 {
		t.Errorf("storage %q, ca %q, http-01 %v (no plain listener: want false), tls-alpn-01 %v", a.Storage, a.CA, a.HTTP01, a.TLSALPN01)
	}
	if o := a.OnDemand; o == nil || o.Ask != "http://127.0.0.1:9/ok" || o.Interval != 30*time.Minute || o.Burst != 10 {
		t.Errorf("on_demand: %+v", o)
	}

	// Beside certificate files; storage relative to the config file.
	cfg, err = Parse([]byte(`listen: {address: ":443", tls: {automatic: {domains: [a.example], storage: certs, redirect_http: false}}}`+"\n"+tail), file)
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Listen[0].TLS.Automatic; a.Storage != filepath.Join(dir, "certs") || a.RedirectHTTP {
		t.Errorf("storage %q redirect_http %v", a.Storage, a.RedirectHTTP)
	}
}
