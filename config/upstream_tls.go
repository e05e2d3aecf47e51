package config

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"net/netip"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// UpstreamTLS is proxy.tls: how a route speaks TLS to its https://
// upstreams. The files are read when the configuration is loaded, so a
// reload picks up new ones; the loaded values are what the proxy uses.
type UpstreamTLS struct {
	ServerName         string           // "" = each upstream's host: sent by SNI (unless an IP address) and verified in its certificate
	CA                 string           // absolute path of the PEM bundle the upstream's chain must lead to; "" = the system's roots
	Roots              *x509.CertPool   // CA's certificates, loaded; nil = the system's roots
	Certificate        string           // absolute path of the client certificate chain (mutual TLS); "" = none
	Key                string           // absolute path of its private key; "" exactly when Certificate is
	ClientCert         *tls.Certificate // Certificate and Key, loaded; nil = none
	MinVersion         string           // "1.2" (default) | "1.3"
	InsecureSkipVerify bool             // default false: the upstream's certificate is accepted unverified
	ID                 string           // a digest of the settings and of the files' contents: two routes with equal IDs speak TLS alike (and share connections)
}

// DefaultUpstreamTLS returns the settings of an https:// upstream whose
// route has no tls section: its host's name verified against the
// system's roots, TLS 1.2 or later, no client certificate.
func DefaultUpstreamTLS() *UpstreamTLS {
	t := &UpstreamTLS{MinVersion: "1.2"}
	t.ID = t.digest(nil)
	return t
}

// MinTLSVersion returns MinVersion as a crypto/tls constant.
func (t *UpstreamTLS) MinTLSVersion() uint16 {
	if t.MinVersion == "1.3" {
		return tls.VersionTLS13
	}
	return tls.VersionTLS12
}

// Describe sums the settings up for the startup summary and gale route:
// "(tls 1.2+ name app.internal ca /etc/ca.pem client-cert)".
func (t *UpstreamTLS) Describe() string {
	s := "(tls " + t.MinVersion + "+"
	if t.ServerName != "" {
		s += " name " + t.ServerName
	}
	switch {
	case t.InsecureSkipVerify:
		s += " UNVERIFIED"
	case t.CA != "":
		s += " ca " + t.CA
	default:
		s += " system roots"
	}
	if t.ClientCert != nil {
		s += " client-cert " + t.Certificate
	}
	return s + ")"
}

// upstreamTLS decodes proxy.tls. It returns nil when the section is
// wrong (the errors are recorded).
func (d *decoder) upstreamTLS(n *yaml.Node, path string) *UpstreamTLS {
	s := d.section(n, path, upstreamTLSKeys.names()...)
	if s == nil {
		return nil
	}
	t := &UpstreamTLS{MinVersion: "1.2"}
	ok := true
	var caPEM []byte
	if v := s.get("server_name"); v != nil {
		p := join(path, "server_name")
		name, good := d.checkedStr(v, p, checkServerName)
		ok = ok && good
		t.ServerName = strings.ToLower(name)
	}
	if v := s.get("ca"); v != nil {
		p := join(path, "ca")
		if f, good := d.filePath(v, p); good {
			t.CA = f
			var msg string
			if caPEM, msg = readPEM(f, "CA bundle"); msg == "" {
				t.Roots = x509.NewCertPool()
				if !t.Roots.AppendCertsFromPEM(caPEM) {
					msg = quote(f) + " holds no PEM CERTIFICATE block that parses"
				}
			}
			if msg != "" {
				d.errorf(deref(v), p, "%s", msg)
				good = false
			}
		}
		ok = ok && t.CA != "" && t.Roots != nil
	}
	ok = d.upstreamClientCert(s, t) && ok
	if v := s.get("min_version"); v != nil {
		if vn := deref(v); vn.Kind == yaml.ScalarNode && vn.ShortTag() == "!!float" && (vn.Value == "1.2" || vn.Value == "1.3") {
			t.MinVersion = vn.Value // min_version: 1.3 written without quotes
		} else if e, good := d.enum(v, join(path, "min_version"), TLSVersions...); good {
			t.MinVersion = e
		} else {
			ok = false
		}
	}
	d.setBool(s, "insecure_skip_verify", &t.InsecureSkipVerify)
	if t.InsecureSkipVerify && t.CA != "" {
		d.errorf(s.key("insecure_skip_verify"), join(path, "insecure_skip_verify"), "the upstream's certificate is not verified at all, so ca would go unused; remove one of them")
		ok = false
	}
	if !ok {
		return nil
	}
	t.ID = t.digest(caPEM)
	return t
}

// upstreamClientCert decodes certificate and key, which come together,
// and loads them.
func (d *decoder) upstreamClientCert(s *section, t *UpstreamTLS) bool {
	cv, kv := s.get("certificate"), s.get("key")
	if cv == nil && kv == nil {
		return true
	}
	if cv == nil || kv == nil {
		have, want := "certificate", "key"
		if cv == nil {
			have, want = "key", "certificate"
		}
		d.errorf(s.key(have), join(s.path, have), "%s needs %s: a client certificate is a chain and its private key", have, want)
		return false
	}
	cf, cok := d.filePath(cv, join(s.path, "certificate"))
	kf, kok := d.filePath(kv, join(s.path, "key"))
	if !cok || !kok {
		return false
	}
	pair, where, msg := LoadKeyPair(cf, kf)
	if msg != "" {
		if where == "cert" {
			d.errorf(deref(cv), join(s.path, "certificate"), "%s", msg)
		} else {
			d.errorf(deref(kv), join(s.path, "key"), "%s", msg)
		}
		return false
	}
	t.Certificate, t.Key, t.ClientCert = cf, kf, pair
	return true
}

// checkServerName checks proxy.tls.server_name: a host name or an IP
// address.
func checkServerName(s string) string {
	if _, err := netip.ParseAddr(s); err == nil {
		return ""
	}
	if msg := checkHostName(strings.ToLower(s)); msg != "" {
		return "expected a host name such as \"app.internal\" or an IP address, got " + quote(s) + ": " + msg
	}
	return ""
}

// digest identifies the settings and the files' contents.
func (t *UpstreamTLS) digest(caPEM []byte) string {
	h := sha256.New()
	put := func(b []byte) {
		h.Write([]byte(strconv.Itoa(len(b))))
		h.Write([]byte{':'})
		h.Write(b)
	}
	put([]byte(t.ServerName))
	put(caPEM)
	if t.ClientCert != nil {
		for _, der := range t.ClientCert.Certificate {
			put(der)
		}
	}
	put([]byte(t.MinVersion))
	put([]byte(strconv.FormatBool(t.InsecureSkipVerify)))
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// proxyTLS decodes proxy.tls and applies it to the upstreams: with the
// section every upstream is reached over TLS ("host:port" and "unix:"
// ones too; an explicit http:// is a contradiction), without it only the
// https:// ones, with the defaults. h2c is cleartext.
func (d *decoder) proxyTLS(s *section, path string, p *Proxy) {
	https := false
	for _, u := range p.To {
		https = https || u.TLS
	}
	if v := s.get("tls"); v != nil {
		p.TLS = d.upstreamTLS(v, join(path, "tls"))
		items := []*yaml.Node{deref(s.get("to"))}
		if items[0] != nil && items[0].Kind == yaml.SequenceNode {
			items = items[0].Content
		}
		for i := range p.To {
			u := &p.To[i]
			if strings.HasPrefix(strings.ToLower(u.Raw), "http://") {
				d.errorf(s.key("tls"), join(path, "tls"), "upstream %s is http:// (cleartext) but the route has a tls section; write it https:// or without a scheme", quote(u.Raw))
				continue
			}
			u.TLS = true
		}
		https = len(p.To) > 0
	} else if https {
		p.TLS = DefaultUpstreamTLS()
	}
	switch {
	case https && p.Protocol == "h2c":
		d.errorf(deref(s.get("protocol")), join(path, "protocol"), "h2c is HTTP/2 over cleartext; upstreams reached over TLS speak HTTP/2 as h2 (protocol: h2)")
	case (p.Protocol == "h2" || p.Protocol == "auto") && len(p.To) > 0:
		for _, u := range p.To {
			if !u.TLS {
				what := "h2 is HTTP/2 over TLS"
				if p.Protocol == "auto" {
					what = "auto chooses the protocol by ALPN, over TLS"
				}
				d.errorf(deref(s.get("protocol")), join(path, "protocol"), "%s, but upstream %s is cleartext; write it https://, or use protocol: h2c or http1", what, quote(u.Raw))
				break
			}
		}
	}
}
