package acme

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/certmagic"

	"gale/config"
)

// maxReadyWait bounds how long a handshake waits for a listed name's
// first certificate when its context has no deadline of its own.
const maxReadyWait = 10 * time.Second

// ALPNChallenge is the ALPN protocol of TLS-ALPN-01 (RFC 8737): a
// listener that answers the challenge offers it, and closes a connection
// that negotiated it once the handshake is done.
const ALPNChallenge = "acme-tls/1"

// ErrNotManaged is returned for a handshake whose server name the site
// neither lists nor obtains on demand.
var ErrNotManaged = errors.New("acme: no automatic certificate for the server name")

// Site is the automatic certificates of one TLS listener.
type Site struct {
	m        *Manager
	port     int                              // the TLS listener's port, where plain HTTP for the listed names is redirected
	httpPort int                              // the plain listener's port, where HTTP-01 is answered; 0 for none
	auto     atomic.Pointer[config.Automatic] // the section; replaced by Update when only its domains change
	listed   atomic.Pointer[map[string]bool]  // auto's Domains; read-only once stored
	magic    *certmagic.Config                // the listed names
	demand   *certmagic.Config                // names obtained on demand; nil without on_demand
	gate     *onDemandGate                    // with demand: the ask endpoint and the rate
}

func (m *Manager) newSite(sec Section) (*Site, error) {
	s := &Site{m: m, port: int(sec.TLSAddr.Port()), httpPort: int(sec.HTTPAddr.Port())}
	s.setAuto(sec.Auto)
	var err error
	if s.magic, err = m.newConfig(sec, nil); err != nil {
		return nil, err
	}
	if o := sec.Auto.OnDemand; o != nil {
		s.gate = newOnDemandGate(o, m.log, m.has)
		if s.demand, err = m.newConfig(sec, &certmagic.OnDemandConfig{DecisionFunc: s.gate.decide}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// setAuto makes a the site's section.
func (s *Site) setAuto(a *config.Automatic) {
	listed := make(map[string]bool, len(a.Domains))
	for _, n := range a.Domains {
		listed[n] = true
	}
	s.listed.Store(&listed)
	s.auto.Store(a)
}

func (s *Site) lists(name string) bool {
	return (*s.listed.Load())[strings.ToLower(strings.TrimSuffix(name, "."))]
}

// Covers reports whether the site gives certificates for name: a listed
// name, or any name when it obtains them on demand. It reads immutable
// state only; safe on an event loop.
func (s *Site) Covers(name string) bool {
	return s.demand != nil || s.lists(name)
}

// Automatic returns the section the site was built from.
func (s *Site) Automatic() *config.Automatic { return s.auto.Load() }

// AnswersTLSALPN reports whether the site answers TLS-ALPN-01 challenges
// in its listener's handshakes (its listener then offers ALPNChallenge).
func (s *Site) AnswersTLSALPN() bool { return s.auto.Load().TLSALPN01 }

func (s *Site) challenges() []string {
	a := s.auto.Load()
	var out []string
	if a.HTTP01 {
		out = append(out, config.ChallengeHTTP01)
	}
	if a.TLSALPN01 {
		out = append(out, config.ChallengeTLSALPN01)
	}
	return out
}

// IsChallenge reports whether hello opens a TLS-ALPN-01 validation: it
// offers "acme-tls/1" alone, with a server name (RFC 8737 section 3).
func IsChallenge(hello *tls.ClientHelloInfo) bool {
	return hello.ServerName != "" && len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == ALPNChallenge
}

// Certificate returns the certificate for a handshake: the TLS-ALPN-01
// challenge certificate for a validation of a name the site covers, the
// certificate of a listed name (waiting, within the handshake's context,
// for the first one to be obtained), or one obtained on demand. It
// blocks: call it from the handshake's goroutine, never on an event loop.
// ErrNotManaged means the site has nothing for the name.
func (s *Site) Certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if IsChallenge(hello) {
		if !s.AnswersTLSALPN() || !s.Covers(hello.ServerName) {
			return nil, ErrNotManaged
		}
		return s.magic.GetCertificate(hello)
	}
	name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	if s.lists(name) {
		return s.listedCertificate(hello, name)
	}
	if s.demand != nil && name != "" {
		return s.onDemandCertificate(hello)
	}
	return nil, ErrNotManaged
}

// Cached returns the certificate in memory for the server name of hello,
// listed or obtained on demand, without asking, obtaining or waiting:
// for handshakes that no gate bounds (QUIC's).
func (s *Site) Cached(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	if name == "" || !s.Covers(name) {
		return nil, ErrNotManaged
	}
	for _, c := range s.m.cache.AllMatchingCertificates(name) {
		if c.Leaf != nil && time.Now().Before(c.Leaf.NotAfter) {
			return &c.Certificate, nil
		}
	}
	return nil, ErrNotManaged
}

// handshakeContext is the handshake's context, or a background one.
func handshakeContext(hello *tls.ClientHelloInfo) context.Context {
	if ctx := hello.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// listedCertificate returns the certificate of a listed name, waiting for
// the first one while it is being obtained.
func (s *Site) listedCertificate(hello *tls.ClientHelloInfo, name string) (*tls.Certificate, error) {
	c, err := s.magic.GetCertificate(hello)
	if err == nil {
		return c, nil
	}
	ready := s.m.waitReady(name)
	if ready == nil {
		if s.m.has(name) { // cached between the two looks: the wait ended just now
			return s.magic.GetCertificate(hello)
		}
		return nil, err
	}
	t := time.NewTimer(maxReadyWait)
	defer t.Stop()
	select {
	case <-ready:
		return s.magic.GetCertificate(hello)
	case <-handshakeContext(hello).Done():
	case <-t.C:
	}
	return nil, fmt.Errorf("acme: the certificate for %s is not obtained yet: %w", name, err)
}

// onDemandTimeout bounds an on-demand certificate's asking and obtaining,
// which outlive the handshake that started them.
const onDemandTimeout = 3 * time.Minute

// onDemandCertificate returns the certificate of a name obtained on
// demand. Asking about the name and obtaining its certificate run apart
// from the handshake, so that a CA slower than handshake_timeout still
// completes the order (the next handshake finds the certificate); the
// handshake waits for them only within its own context.
func (s *Site) onDemandCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c, err := s.Cached(hello); err == nil {
		return c, nil
	}
	detached := *hello
	if hello.Conn != nil {
		detached.Conn = addrConn{local: hello.Conn.LocalAddr(), remote: hello.Conn.RemoteAddr()}
	}
	type result struct {
		c   *tls.Certificate
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(handshakeContext(hello)), onDemandTimeout)
		defer cancel()
		c, err := s.demand.GetCertificateWithContext(ctx, &detached)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		return r.c, r.err
	case <-handshakeContext(hello).Done():
		return nil, fmt.Errorf("acme: the certificate for %s is not obtained yet (obtaining continues)", hello.ServerName)
	}
}

// addrConn is the connection a detached ClientHelloInfo names: its
// addresses only (certmagic logs them), valid after the handshake ended.
type addrConn struct {
	net.Conn // nil: nothing but the addresses is used
	local    net.Addr
	remote   net.Addr
}

func (c addrConn) LocalAddr() net.Addr  { return c.local }
func (c addrConn) RemoteAddr() net.Addr { return c.remote }
