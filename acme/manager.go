package acme

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"
	"go.uber.org/zap"

	"gale/config"
)

// RenewCheckInterval is how often managed certificates are checked for
// renewal; 0 keeps certmagic's default (10 minutes). Set before New.
var RenewCheckInterval time.Duration

// maxLookups bounds the HTTP-01 answers looked up at once (each may read
// storage off the loop); requests beyond are answered 503.
const maxLookups = 16

// Section is one listener's tls.automatic section with the addresses its
// challenges are answered on.
type Section struct {
	Auto     *config.Automatic
	TLSAddr  netip.AddrPort    // the TLS listener's bound address: TLS-ALPN-01 is answered in its handshakes, and plain HTTP for its names redirects to its port
	HTTPAddr netip.AddrPort    // the first plain listener's bound address, where HTTP-01 is answered; the zero value when there is none
	Shared   certmagic.Storage // with Auto.InRedis: the shared store's storage (package cluster)
}

// Manager keeps the automatic certificates of one server: a certmagic
// cache shared by its sites, and a Site per listener with an automatic
// section. Its methods are safe for concurrent use.
type Manager struct {
	cache    *certmagic.Cache
	sites    []*Site
	log      *slog.Logger
	zlog     *zap.Logger
	ctx      context.Context // ends at Stop: management started by Start
	cancel   context.CancelFunc
	issuers  []*certmagic.ACMEIssuer        // every site's, for HTTP-01 answers
	redirect atomic.Pointer[map[string]int] // listed name -> https port, for the sites that redirect plain HTTP; read-only once stored
	lookups  *shares                        // HTTP-01 lookups in flight (http01.go)

	mu      sync.Mutex
	ready   map[string]chan struct{} // listed names with no certificate cached yet, being obtained; closed when one is, or the attempt failed
	failing map[string]bool          // listed names whose last attempt failed and whose next has not started
	known   map[string]bool          // names with a managed certificate cached, for Expiries
}

// New builds the manager of secs; nothing is obtained before Start. It
// creates each section's storage directory.
func New(secs []Section, log *slog.Logger) (*Manager, error) {
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		log: log, zlog: zapToSlog(log), ctx: ctx, cancel: cancel,
		lookups: newShares(maxLookups, maxLookupsPerAddress),
		ready:   map[string]chan struct{}{}, failing: map[string]bool{}, known: map[string]bool{},
	}
	m.cache = certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert:   m.configForCert,
		RenewCheckInterval: RenewCheckInterval,
		Logger:             m.zlog,
	})
	for _, sec := range secs {
		s, err := m.newSite(sec)
		if err != nil {
			m.Stop()
			return nil, err
		}
		m.sites = append(m.sites, s)
		for _, name := range sec.Auto.Domains {
			m.ready[name] = make(chan struct{})
		}
	}
	m.setRedirects()
	return m, nil
}

// newConfig returns a certmagic config of sec's, with its ACME issuer.
func (m *Manager) newConfig(sec Section, demand *certmagic.OnDemandConfig) (*certmagic.Config, error) {
	a := sec.Auto
	storage, err := sectionStorage(sec)
	if err != nil {
		return nil, err
	}
	cfg := certmagic.New(m.cache, certmagic.Config{
		Storage:        storage,
		OnDemand:       demand,
		OnEvent:        m.onEvent,
		ShouldEmitFunc: followed,
		Logger:         m.zlog,
	})
	var roots *x509.CertPool
	if a.CARoot != "" {
		pem, err := os.ReadFile(a.CARoot)
		if err != nil {
			return nil, fmt.Errorf("acme: ca_root: %w", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("acme: ca_root %s holds no certificate", a.CARoot)
		}
	}
	iss := certmagic.NewACMEIssuer(cfg, certmagic.ACMEIssuer{
		CA:                      a.CA,
		Email:                   a.Email,
		Agreed:                  true,
		DisableHTTPChallenge:    !a.HTTP01,
		DisableTLSALPNChallenge: !a.TLSALPN01,
		ListenHost:              listenHost(sec),
		AltHTTPPort:             int(sec.HTTPAddr.Port()),
		AltTLSALPNPort:          int(sec.TLSAddr.Port()),
		TrustedRoots:            roots,
		NewAccountFunc:          dropPlaceholderContact,
		Logger:                  m.zlog,
	})
	cfg.Issuers = []certmagic.Issuer{iss}
	m.issuers = append(m.issuers, iss)
	return cfg, nil
}

// sectionStorage returns where sec's certificates are kept: the shared
// store, or the storage directory (created when missing).
func sectionStorage(sec Section) (certmagic.Storage, error) {
	if sec.Auto.InRedis {
		if sec.Shared == nil {
			return nil, errors.New("acme: storage redis without a shared store")
		}
		return sec.Shared, nil
	}
	if err := os.MkdirAll(sec.Auto.Storage, 0o700); err != nil {
		return nil, fmt.Errorf("acme: storage: %w", err)
	}
	return &certmagic.FileStorage{Path: sec.Auto.Storage}, nil
}

// dropPlaceholderContact is certmagic's NewAccountFunc. With no email
// configured, certmagic keeps the account under the name "default" in
// storage, and an instance that registers its own account while another
// one's is there takes that name for an email address: the CA refuses
// "mailto:default". The placeholder is no contact; it is dropped.
func dropPlaceholderContact(_ context.Context, _ *certmagic.ACMEIssuer, acct acme.Account) (acme.Account, error) {
	acct.Contact = slices.DeleteFunc(acct.Contact, func(c string) bool { return c == "mailto:default" })
	return acct, nil
}

// listenHost is the host certmagic would bind its own challenge solvers
// on: the listeners' host when both challenges' listeners share one, else
// all interfaces. gale holds the ports, so certmagic's bind fails and it
// leaves the answers to gale.
func listenHost(sec Section) string {
	h, t := sec.HTTPAddr.Addr(), sec.TLSAddr.Addr()
	if sec.HTTPAddr.IsValid() && h == t && !h.IsUnspecified() {
		return h.String()
	}
	return ""
}

// configForCert is the certmagic cache's way back from a certificate to
// the config that manages it: the site listing one of its names, else the
// first site obtaining on demand, else the first site.
func (m *Manager) configForCert(c certmagic.Certificate) (*certmagic.Config, error) {
	for _, s := range m.sites {
		if slices.ContainsFunc(c.Names, s.lists) {
			return s.magic, nil
		}
	}
	for _, s := range m.sites {
		if s.demand != nil {
			return s.demand, nil
		}
	}
	if len(m.sites) > 0 {
		return m.sites[0].magic, nil
	}
	return nil, errors.New("acme: no site manages the certificate")
}

// Start begins managing the listed names of every site in the
// background: certificates in storage are loaded, missing ones obtained
// (retried with backoff while the CA fails), all renewed when due.
func (m *Manager) Start() {
	for _, s := range m.sites {
		a := s.auto.Load()
		if len(a.Domains) > 0 {
			if err := s.magic.ManageAsync(m.ctx, a.Domains); err != nil {
				m.log.Error("acme: managing certificates", "domains", a.Domains, "err", err.Error())
			}
		}
		args := []any{"domains", a.Domains, "storage", a.Storage, "ca", a.CA, "challenges", s.challenges()}
		if a.OnDemand != nil {
			args = append(args, "on_demand_ask", a.OnDemand.Ask, "on_demand_rate", a.OnDemand.Rate)
		}
		m.log.Info("acme: managing certificates", args...)
		s.warnPorts()
	}
}

// warnPorts says when the CA cannot reach the site's challenges unless
// something forwards to them: it validates HTTP-01 on port 80 and
// TLS-ALPN-01 on port 443.
func (s *Site) warnPorts() {
	a := s.auto.Load()
	if a.HTTP01 && s.httpPort != 80 && (!a.TLSALPN01 || s.port != 443) {
		s.m.log.Warn("acme: the CA validates http-01 on port 80; make sure port 80 reaches this plain listener", "port", s.httpPort)
	}
	if a.TLSALPN01 && s.port != 443 && (!a.HTTP01 || s.httpPort != 80) {
		s.m.log.Warn("acme: the CA validates tls-alpn-01 on port 443; make sure port 443 reaches this listener", "port", s.port)
	}
}

// Stop ends management: background work stops, certificates already in
// memory keep serving handshakes.
func (m *Manager) Stop() {
	m.cancel()
	m.cache.Stop()
}

// Sites returns the site of each section given to New, in order.
func (m *Manager) Sites() []*Site { return m.sites }
