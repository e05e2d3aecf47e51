package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// TLS defaults and bounds.
const (
	defaultHandshakeTimeout = 10 * time.Second
	// defaultClientHelloTimeout bounds how long a client may take to send
	// its whole ClientHello: one flight, sent right after the TCP
	// handshake, which real clients deliver within a round trip or two
	// (a few TCP retransmissions fit too).
	defaultClientHelloTimeout = 5 * time.Second
	defaultMaxHandshakes      = 4096
	// perAddressDivisor sets the default share of one client address:
	// max_handshakes / perAddressDivisor, at least 1.
	perAddressDivisor = 16
	maxMaxHandshakes  = 1 << 20
	maxCertificates   = 1000
	maxPEMBytes       = 1 << 20 // a certificate chain or key file larger than this is refused
)

// TLSVersions are the accepted values of tls.min_version.
var TLSVersions = []string{"1.2", "1.3"}

// listenerObject decodes the object form of a listen entry:
// {address, tls, redirect_to_https, protocols}.
func (d *decoder) listenerObject(n *yaml.Node, path string) (Listener, bool) {
	s := d.section(n, path, listenerKeys.names()...)
	if s == nil {
		return Listener{}, false
	}
	l := Listener{Pos: Pos{n.Line, n.Column}}
	ok := true
	if v := s.get("address"); v != nil {
		p := join(path, "address")
		addr, good := d.str(v, p)
		if good {
			if msg := checkAddress(addr); msg != "" {
				d.errorf(deref(v), p, "%s", msg)
				good = false
			}
		}
		l.Address = addr
		ok = ok && good
	} else if s.missing("address") {
		d.errorf(s.node, join(path, "address"), `missing required key; e.g. {address: ":8443", tls: {certificates: [{cert: fullchain.pem, key: key.pem}]}}`)
		ok = false
	}
	var redirect bool
	d.setBool(s, "redirect_to_https", &redirect)
	if redirect {
		l.RedirectToHTTPS = &HTTPSRedirect{Listener: -1} // linked by linkHTTPSRedirects
	}
	if v := s.get("tls"); v != nil {
		l.TLS = d.tlsSection(v, join(path, "tls"))
		if l.TLS == nil {
			ok = false
		} else if redirect {
			d.errorf(s.key("redirect_to_https"), join(path, "redirect_to_https"),
				"a TLS listener serves the routes itself; redirect_to_https belongs on a plain listener")
			ok = false
		}
	}
	l.Protocols = DefaultProtocols(s.has("tls"))
	if v := s.get("protocols"); v != nil {
		p := join(path, "protocols")
		set, good := d.protocols(v, p, s.has("tls"))
		if good {
			l.Protocols = set
			d.protoKeys = append(d.protoKeys, protocolsKey{node: v, path: p, set: set})
			if redirect && !set.H1() {
				d.errorf(deref(v), p, "a redirect_to_https listener must include h1: browsers that were sent to http:// arrive over HTTP/1.1")
				good = false
			}
		}
		ok = ok && good
	}
	ok = d.listenerHTTP3(s, path, &l) && ok
	d.setBool(s, "proxy_protocol", &l.ProxyProtocol)
	if v := s.get("deny"); v != nil {
		l.Deny = d.prefixes(v, join(path, "deny"))
	}
	if v := s.get("max_conns_per_address"); v != nil {
		if k, ok := d.integer(v, join(path, "max_conns_per_address"), 0, 1<<20); ok {
			l.MaxConnsPerAddr = int(k)
		}
	}
	if l.ProxyProtocol && l.HTTP3 {
		d.errorf(s.key("proxy_protocol"), join(path, "proxy_protocol"),
			"HTTP/3 arrives over QUIC (UDP), which carries no PROXY protocol header: serve http3 on a listener without proxy_protocol")
		ok = false
	}
	return l, ok
}

// linkHTTPSRedirects points every redirect_to_https listener at the first
// TLS listener, whose port its redirects carry.
func linkHTTPSRedirects(ls []Listener) {
	first := slices.IndexFunc(ls, func(l Listener) bool { return l.TLS != nil })
	for i := range ls {
		if ls[i].RedirectToHTTPS != nil {
			ls[i].RedirectToHTTPS.Listener = first
		}
	}
}

// tlsSection decodes a listener's tls mapping and checks its certificates.
// It returns nil when the section is unusable (already reported).
func (d *decoder) tlsSection(n *yaml.Node, path string) *TLS {
	s := d.section(n, path, tlsKeys.names()...)
	if s == nil {
		return nil
	}
	t := &TLS{MinVersion: "1.2", HandshakeTimeout: defaultHandshakeTimeout, MaxHandshakes: defaultMaxHandshakes}
	ok := true
	if v := s.get("certificates"); v != nil {
		p := join(path, "certificates")
		items, good := d.list(v, p, "certificates")
		if good && len(items) == 0 {
			d.errorf(deref(v), p, "expected at least one certificate, e.g. [{cert: fullchain.pem, key: key.pem}]")
			good = false
		}
		if len(items) > maxCertificates {
			d.errorf(deref(v), p, "at most %d certificates per listener, got %d", maxCertificates, len(items))
			good = false
			items = items[:maxCertificates]
		}
		for i, item := range items {
			c, cok := d.certificate(item, index(p, i))
			if cok {
				t.Certificates = append(t.Certificates, c)
			}
			good = good && cok
		}
		ok = ok && good
	}
	if v := s.get("automatic"); v != nil {
		a, good := d.automaticSection(v, join(path, "automatic"))
		t.Automatic = a
		ok = ok && good
	}
	if !s.has("certificates") && !s.has("automatic") && !s.suggested["certificates"] && !s.suggested["automatic"] {
		d.errorf(s.node, join(path, "certificates"), "missing required key; e.g. certificates: [{cert: fullchain.pem, key: key.pem}], or automatic: {domains: [example.com]} to obtain them from Let's Encrypt")
		ok = false
	}
	if v := s.get("min_version"); v != nil {
		p := join(path, "min_version")
		if vn := deref(v); vn.Kind == yaml.ScalarNode && vn.ShortTag() == "!!float" && (vn.Value == "1.2" || vn.Value == "1.3") {
			t.MinVersion = vn.Value // min_version: 1.3 written without quotes
		} else if e, good := d.enum(v, p, TLSVersions...); good {
			t.MinVersion = e
		} else {
			ok = false
		}
	}
	d.setDuration(s, "handshake_timeout", &t.HandshakeTimeout)
	if v := s.get("max_handshakes"); v != nil {
		if m, good := d.integer(v, join(path, "max_handshakes"), 1, maxMaxHandshakes); good {
			t.MaxHandshakes = int(m)
		} else {
			ok = false
		}
	}
	ok = d.handshakeShares(s, t) && ok
	if v := s.get("client_auth"); v != nil {
		t.ClientAuth = d.clientAuthSection(v, join(path, "client_auth"))
		ok = ok && t.ClientAuth != nil
	}
	if !ok {
		return nil
	}
	return t
}

// handshakeShares decodes client_hello_timeout and
// max_handshakes_per_address, whose defaults and bounds follow from
// handshake_timeout and max_handshakes (already decoded into t).
func (d *decoder) handshakeShares(s *section, t *TLS) bool {
	ok := true
	t.ClientHelloTimeout = min(defaultClientHelloTimeout, t.HandshakeTimeout)
	if v := s.get("client_hello_timeout"); v != nil {
		p := join(s.path, "client_hello_timeout")
		if h, good := d.duration(v, p); !good {
			ok = false
		} else if h > t.HandshakeTimeout {
			d.errorf(deref(v), p, "must not exceed handshake_timeout (%s), got %s", t.HandshakeTimeout, quote(deref(v).Value))
			ok = false
		} else {
			t.ClientHelloTimeout = h
		}
	}
	t.MaxHandshakesPerAddress = max(1, t.MaxHandshakes/perAddressDivisor)
	if v := s.get("max_handshakes_per_address"); v != nil {
		p := join(s.path, "max_handshakes_per_address")
		if m, good := d.integer(v, p, 1, maxMaxHandshakes); !good {
			ok = false
		} else if int(m) > t.MaxHandshakes {
			d.errorf(deref(v), p, "must not exceed max_handshakes (%d), got %d", t.MaxHandshakes, m)
			ok = false
		} else {
			t.MaxHandshakesPerAddress = int(m)
		}
	}
	return ok
}

// certificate decodes one {cert, key} entry and checks that both files
// can be read and hold a matching certificate chain and private key.
func (d *decoder) certificate(n *yaml.Node, path string) (Certificate, bool) {
	s := d.section(n, path, certificateKeys.names()...)
	if s == nil {
		return Certificate{}, false
	}
	c := Certificate{Pos: Pos{deref(n).Line, deref(n).Column}}
	file := func(name string) (abs string, v *yaml.Node) {
		v = s.get(name)
		if v == nil {
			if s.missing(name) {
				d.errorf(s.node, join(path, name), "missing required key; e.g. {cert: fullchain.pem, key: key.pem}")
			}
			return "", nil
		}
		f, ok := d.str(v, join(path, name))
		if !ok {
			return "", nil
		}
		if f == "" {
			d.errorf(deref(v), join(path, name), "expected a file path, got an empty string")
			return "", nil
		}
		return d.resolve(f), deref(v)
	}
	certAbs, certNode := file("cert")
	keyAbs, keyNode := file("key")
	if certNode == nil || keyNode == nil {
		return Certificate{}, false
	}
	c.Cert, c.Key = certAbs, keyAbs
	if v := s.get("client_auth"); v != nil {
		if c.ClientAuth = d.clientAuthSection(v, join(path, "client_auth")); c.ClientAuth == nil {
			return Certificate{}, false
		}
	}
	// The messages name the files by their absolute paths.
	if where, msg := CheckKeyPair(certAbs, keyAbs); msg != "" {
		if where == "cert" {
			d.errorf(certNode, join(path, "cert"), "%s", msg)
		} else {
			d.errorf(keyNode, join(path, "key"), "%s", msg)
		}
		return Certificate{}, false
	}
	return c, true
}

// CheckKeyPair loads the PEM certificate chain at certFile and the PEM
// private key at keyFile and reports what is wrong with them: where is
// "cert" or "key" (the file to blame) and msg names that file; msg is ""
// when the pair is usable (readable, parsable, and the key matches the
// first certificate of the chain). It is safe for concurrent use.
func CheckKeyPair(certFile, keyFile string) (where, msg string) {
	_, where, msg = LoadKeyPair(certFile, keyFile)
	return where, msg
}

// LoadKeyPair is CheckKeyPair that also returns the loaded pair, whose
// Leaf is parsed. The certificate is nil when msg is not "". It is safe
// for concurrent use; the result belongs to the caller.
func LoadKeyPair(certFile, keyFile string) (cert *tls.Certificate, where, msg string) {
	certPEM, msg := readPEM(certFile, "certificate chain")
	if msg != "" {
		return nil, "cert", msg
	}
	keyPEM, msg := readPEM(keyFile, "private key")
	if msg != "" {
		return nil, "key", msg
	}
	if !hasPEMBlock(certPEM, func(t string) bool { return t == "CERTIFICATE" }) {
		return nil, "cert", fmt.Sprintf("%s holds no PEM CERTIFICATE block", quote(certFile))
	}
	if !hasPEMBlock(keyPEM, func(t string) bool { return t == "PRIVATE KEY" || strings.HasSuffix(t, " PRIVATE KEY") }) {
		return nil, "key", fmt.Sprintf("%s holds no PEM PRIVATE KEY block", quote(keyFile))
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The PEM blocks are present, so the failure is in what they
		// hold: a certificate that does not parse, a key that does not,
		// or a key of another certificate.
		switch e := err.Error(); {
		case strings.Contains(e, "does not match"):
			return nil, "key", fmt.Sprintf("the private key in %s does not match the certificate in %s (the first certificate of the chain must be the one the key belongs to)", quote(keyFile), quote(certFile))
		case strings.Contains(e, "private key") || strings.Contains(e, "key input"):
			return nil, "key", fmt.Sprintf("%s: %v", quote(keyFile), err)
		default:
			return nil, "cert", fmt.Sprintf("%s: %v", quote(certFile), err)
		}
	}
	for i, der := range pair.Certificate {
		if _, err := x509.ParseCertificate(der); err != nil {
			return nil, "cert", fmt.Sprintf("%s: certificate %d of the chain does not parse: %v", quote(certFile), i+1, err)
		}
	}
	// tls.X509KeyPair sets Leaf since Go 1.23.
	if pair.Leaf == nil {
		pair.Leaf, _ = x509.ParseCertificate(pair.Certificate[0])
	}
	return &pair, "", ""
}

// readPEM reads a PEM file of bounded size; msg names the file on failure.
func readPEM(file, what string) ([]byte, string) {
	return readFileBounded(file, what, maxPEMBytes)
}

// readFileBounded reads a regular file of at most limit bytes; msg names
// the file on failure.
func readFileBounded(file, what string, limit int64) ([]byte, string) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Sprintf("cannot read the %s %s: %v", what, quote(file), unwrapPath(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Sprintf("the %s %s is not a regular file", what, quote(file))
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Sprintf("cannot read the %s %s: %v", what, quote(file), unwrapPath(err))
	}
	if int64(len(data)) > limit {
		return nil, fmt.Sprintf("the %s %s is larger than %s", what, quote(file), formatSize(limit))
	}
	return data, ""
}

// unwrapPath drops the path from an *os.PathError, which the message
// already names.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func hasPEMBlock(data []byte, want func(string) bool) bool {
	for len(data) > 0 {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if want(b.Type) {
			return true
		}
	}
	return false
}
