package handlers

import (
	"net/netip"

	"gale/clientcert"
	"gale/config"
)

// accessRules is a route's compiled access list.
type accessRules []config.AccessRule

// allows reports whether the first rule matching the client (its address
// a, and its TLS certificate cert, nil for none) allows it, and which rule
// decided; no rule matching denies.
func (rs accessRules) allows(a netip.Addr, cert *clientcert.Info) (bool, int) {
	for i := range rs {
		if prefixesContain(rs[i].Prefixes, a) && certMatches(rs[i].ClientCert, cert) {
			return rs[i].Allow, i
		}
	}
	return false, -1
}

// certMatches reports whether cert satisfies a rule's client_cert m: any
// client when m is nil; else a certificate that verified and, for each
// list m holds, matches one of its entries.
func certMatches(m *config.CertMatch, cert *clientcert.Info) bool {
	if m == nil {
		return true
	}
	if cert == nil || cert.Verify != clientcert.Success {
		return false
	}
	if len(m.Names) > 0 && !anyName(cert, m.Names) {
		return false
	}
	if len(m.Fingerprints) > 0 && !anyOf(cert.Fingerprint, m.Fingerprints) {
		return false
	}
	return true
}

func anyName(cert *clientcert.Info, names []string) bool {
	for _, n := range names {
		if cert.HasName(n) {
			return true
		}
	}
	return false
}

func anyOf(s string, set []string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}
