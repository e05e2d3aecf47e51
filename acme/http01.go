package acme

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/caddyserver/certmagic"
)

// ChallengePrefix is the path under which HTTP-01 challenges are asked
// (RFC 8555 section 8.3).
const ChallengePrefix = "/.well-known/acme-challenge/"

// maxKeyAuth bounds a key authorization: a token and a thumbprint, both
// base64url, well under a hundred bytes each.
const maxKeyAuth = 512

// LooksLikeHTTP01 reports whether a request may be an HTTP-01 validation:
// GET for ChallengePrefix followed by a token of base64url characters.
// It does not allocate; safe on an event loop.
func LooksLikeHTTP01(method, path []byte) bool {
	if string(method) != http.MethodGet || len(path) <= len(ChallengePrefix) || len(path) > 256 || string(path[:len(ChallengePrefix)]) != ChallengePrefix {
		return false
	}
	for _, c := range path[len(ChallengePrefix):] {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// maxLookupsPerAddress is one client address's share of maxLookups: a CA
// validates from each of its perspectives at once (Pebble sends 3 at once
// from one address).
const maxLookupsPerAddress = 4

// AnswersHTTP01 reports whether some site answers HTTP-01 challenges.
func (m *Manager) AnswersHTTP01() bool {
	return slices.ContainsFunc(m.sites, func(s *Site) bool { return s.auto.Load().HTTP01 })
}

// ChallengeInMemory returns the key authorization that answers an HTTP-01
// challenge this process started, for host at path, without touching
// storage (it takes certmagic's lock of its challenges briefly).
func (m *Manager) ChallengeInMemory(host, path string) (string, bool) {
	c, ok := certmagic.GetACMEChallenge(host)
	if !ok || c.Type != "http-01" || c.HTTP01ResourcePath() != path || !strings.EqualFold(c.Identifier.Value, host) {
		return "", false
	}
	return c.KeyAuthorization, true
}

// TryLookup claims one of the bounded HTTP-01 lookups for a client at
// addr: false when all are in flight, or addr holds its share. A true
// return must be paired with EndLookup(addr).
func (m *Manager) TryLookup(addr netip.Addr) bool { return m.lookups.claim(addr) }

// EndLookup gives back a lookup claimed by TryLookup.
func (m *Manager) EndLookup(addr netip.Addr) { m.lookups.release(addr) }

// AnswerHTTP01 returns the key authorization that answers the HTTP-01
// challenge for host at path (a GET), if one of the sites has it under
// way: started by this process, or by another instance sharing the
// storage (then read from there). certmagic checks the path and the host
// against the challenge. It blocks: call it off the event loops.
func (m *Manager) AnswerHTTP01(ctx context.Context, host, path string) (string, bool) {
	for _, iss := range m.issuers {
		w := &keyAuthWriter{header: http.Header{}}
		r := (&http.Request{
			Method: http.MethodGet, URL: &url.URL{Path: path}, RequestURI: path,
			Host: host, Header: http.Header{}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		}).WithContext(ctx)
		if iss.HandleHTTPChallenge(w, r) && w.status == 0 && !w.over && w.body.Len() > 0 {
			return w.body.String(), true
		}
	}
	return "", false
}

// keyAuthWriter takes what certmagic writes in answer to a challenge.
type keyAuthWriter struct {
	header http.Header
	status int  // set when certmagic wrote a status of its own (not a 200)
	over   bool // more than maxKeyAuth bytes were written: not an answer
	body   strings.Builder
}

func (w *keyAuthWriter) Header() http.Header { return w.header }
func (w *keyAuthWriter) Write(p []byte) (int, error) {
	if w.body.Len()+len(p) > maxKeyAuth {
		w.over = true
	} else {
		w.body.Write(p)
	}
	return len(p), nil
}
func (w *keyAuthWriter) WriteHeader(code int) {
	if code != http.StatusOK {
		w.status = code
	}
}
