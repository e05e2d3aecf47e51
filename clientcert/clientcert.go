// Package clientcert describes the certificate a TLS client presented:
// what access rules, the access log, FastCGI and proxied upstreams are
// told about it. One Info is built per connection, after its handshake,
// off the event loops; requests only copy its pointer.
package clientcert

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"strings"
)

// Verify is the outcome of verifying a client's certificate.
type Verify uint8

const (
	// None: the client presented no certificate (nginx's "NONE").
	None Verify = iota
	// Success: the certificate chains to the listener's CA and is not
	// revoked.
	Success
	// Failed: the certificate did not verify; the handshake was accepted
	// only because client_auth.mode is request.
	Failed
)

// Info is what is known of the certificate one client presented. It is
// immutable once built and safe to share between goroutines; every slice
// and string in it is its own.
type Info struct {
	Verify      Verify
	Result      string   // SSL_CLIENT_VERIFY as nginx sets it: "SUCCESS", or "FAILED:" and the reason
	Subject     string   // the subject's distinguished name, RFC 2253 ("CN=client,O=Example")
	Issuer      string   // the issuer's, likewise
	CommonName  string   // the subject's common name
	Serial      string   // the serial number, upper-case hexadecimal as nginx writes it
	Fingerprint string   // SHA-256 of the DER certificate, lower-case hexadecimal
	DNSNames    []string // subject alternative names of each kind
	Emails      []string
	URIs        []string
	IPs         []string
	PEM         string // the certificate, PEM (SSL_CLIENT_CERT)
	Field       []byte // the Client-Cert field value (RFC 9440): ":" base64 DER ":"
	ChainField  []byte // the Client-Cert-Chain field value: the other certificates the client sent, each a byte sequence, ", "-separated; nil when it sent none
}

// New describes the certificates a client sent (chain[0] its own, then
// the intermediates it sent). failure is why they did not verify; "" when
// they did.
func New(chain []*x509.Certificate, failure string) *Info {
	c := chain[0]
	sum := sha256.Sum256(c.Raw)
	in := &Info{
		Verify:      Success,
		Result:      "SUCCESS",
		Subject:     c.Subject.String(),
		Issuer:      c.Issuer.String(),
		CommonName:  c.Subject.CommonName,
		Fingerprint: hex.EncodeToString(sum[:]),
		DNSNames:    c.DNSNames,
		Emails:      c.EmailAddresses,
		PEM:         string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})),
		Field:       appendByteSequence(nil, c.Raw),
	}
	if failure != "" {
		in.Verify, in.Result = Failed, "FAILED:"+oneLine(failure)
	}
	if c.SerialNumber != nil {
		in.Serial = strings.ToUpper(c.SerialNumber.Text(16))
	}
	for _, u := range c.URIs {
		in.URIs = append(in.URIs, u.String())
	}
	for _, ip := range c.IPAddresses {
		in.IPs = append(in.IPs, ip.String())
	}
	for i, ic := range chain[1:] {
		if i > 0 {
			in.ChainField = append(in.ChainField, ", "...)
		}
		in.ChainField = appendByteSequence(in.ChainField, ic.Raw)
	}
	return in
}

// appendByteSequence appends der as a structured field byte sequence
// (RFC 8941 section 3.3.5): base64 between colons.
func appendByteSequence(dst, der []byte) []byte {
	dst = append(dst, ':')
	dst = base64.StdEncoding.AppendEncode(dst, der)
	return append(dst, ':')
}

// oneLine keeps a reason to printable ASCII on one line, for a FastCGI
// parameter and a log field.
func oneLine(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = ' '
		}
	}
	return string(b)
}

// ResultOrNone returns SSL_CLIENT_VERIFY for in: "NONE" when in is nil.
func (in *Info) ResultOrNone() string {
	if in == nil {
		return "NONE"
	}
	return in.Result
}

// HasName reports whether name is the certificate's subject common name
// or one of its subject alternative names (DNS, email, URI or IP, compared
// exactly; DNS names and emails without regard to ASCII case).
func (in *Info) HasName(name string) bool {
	if strings.EqualFold(in.CommonName, name) && in.CommonName != "" {
		return true
	}
	for _, set := range [][]string{in.DNSNames, in.Emails} {
		for _, n := range set {
			if strings.EqualFold(n, name) {
				return true
			}
		}
	}
	for _, set := range [][]string{in.URIs, in.IPs} {
		for _, n := range set {
			if n == name {
				return true
			}
		}
	}
	return false
}
