package tlsconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"gale/acme"
	"gale/config"
)

// TLS termination. Each TLS listener has one Listener, shared by the
// loops: its tls.Config (immutable once built; the certificates and the
// settings that may change on reload sit behind atomic pointers), the
// admission of handshakes (gate.go), and the files its certificates
// came from. The per-connection layer is in conn.go.

// errTLSListener wraps the errors of loading a listener's certificates.
var errTLSListener = errors.New("app: tls")

// Listener is the TLS state of one listener. Its methods are safe for
// concurrent use.
type Listener struct {
	index  int                      // position in config.Listen
	protos config.Protocols         // what ALPN may offer: h2 and http/1.1 as listen[].protocols holds them
	config *tls.Config              // what handshakes start from; GetConfigForClient returns cur's
	cur    atomic.Pointer[settings] // the settings generation new handshakes use
	gate   *handshakeGate           // handshake slots, per-address shares and the queue (gate.go)
	site   *acme.Site               // automatic certificates (tls.automatic); nil for none
	log    func(msg string, args ...any)

	reload sync.Mutex  // serializes loads (the poller and Reload); guards files and bad
	files  []fileStamp // the certificate and key files of cur, as they were read
	bad    []fileStamp // the files as they were when loading them last failed (reported once)
}

// settings is one generation of a listener's TLS settings: replaced as
// a whole when certificates or settings change. Immutable.
type settings struct {
	// base is the per-handshake config: version floor, certificate
	// choice, the listener's client_auth; config offers ALPN http/1.1
	// when the listener has h1, configH2 h2 first when it has h2 (while
	// the server serves HTTP/2). scoped holds the variants of the
	// certificates that have a client_auth of their own (clientauth.go).
	base    variant
	scoped  map[*tls.Certificate]*variant
	certs   certSet     // the loaded certificates
	timeout int64       // handshake timeout, nanoseconds
	hello   int64       // ClientHello timeout, nanoseconds
	max     int64       // handshakes in progress at once
	share   int64       // slots one client address may hold or wait for
	src     *config.TLS // what this generation was loaded from
}

// fileStamp identifies one version of a certificate or key file.
type fileStamp struct {
	path  string
	size  int64
	mtime int64
	ino   uint64
	ctime int64
}

func stampOf(path string) fileStamp {
	st := fileStamp{path: path}
	fi, err := os.Stat(path)
	if err != nil {
		return st
	}
	st.size, st.mtime = fi.Size(), fi.ModTime().UnixNano()
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
		st.ctime = sys.Ctim.Nano()
	}
	return st
}

// certSet picks a certificate by server name: an exact DNS name of a
// leaf, then a wildcard one ("*.example.com" for one label under
// example.com), then the first certificate of the listener. Among several
// certificates for one name, the first one the client supports wins.
type certSet struct {
	all   []*tls.Certificate            // config order; all[0] is the default
	exact map[string][]*tls.Certificate // lower-case DNS name
	wild  map[string][]*tls.Certificate // "example.com" for "*.example.com"
}

func newCertSet(certs []*tls.Certificate) certSet {
	s := certSet{all: certs, exact: map[string][]*tls.Certificate{}, wild: map[string][]*tls.Certificate{}}
	for _, c := range certs {
		names := c.Leaf.DNSNames
		if len(names) == 0 && c.Leaf.Subject.CommonName != "" {
			names = []string{c.Leaf.Subject.CommonName}
		}
		for _, n := range names {
			n = strings.ToLower(strings.TrimSuffix(n, "."))
			if rest, ok := strings.CutPrefix(n, "*."); ok {
				s.wild[rest] = append(s.wild[rest], c)
			} else {
				s.exact[n] = append(s.exact[n], c)
			}
		}
	}
	return s
}

// names reports whether some certificate of the set is for name (a DNS
// name, exactly or under a wildcard).
func (s *certSet) names(name string) bool {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if len(s.exact[name]) > 0 {
		return true
	}
	i := strings.IndexByte(name, '.')
	return i > 0 && len(s.wild[name[i+1:]]) > 0
}

func (s *certSet) pick(hello *tls.ClientHelloInfo) *tls.Certificate {
	if c := s.match(hello); c != nil {
		return c
	}
	return supported(hello, s.all)
}

// match returns the certificate for the server name of hello, exactly or
// under a wildcard, or nil when none is for it.
func (s *certSet) match(hello *tls.ClientHelloInfo) *tls.Certificate {
	name := hello.ServerName
	if name == "" {
		return nil
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if c := supported(hello, s.exact[name]); c != nil {
		return c
	}
	if i := strings.IndexByte(name, '.'); i > 0 {
		return supported(hello, s.wild[name[i+1:]])
	}
	return nil
}

// certificate chooses the certificate of a handshake: a TLS-ALPN-01
// validation's from the automatic site; else a certificate file's for
// the server name; else the site's for it (listed, or obtained on
// demand: this may wait, off the loop, within the handshake's context);
// else the first certificate file's.
func (tl *Listener) certificate(set *settings, hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if tl.site == nil {
		return set.certs.pick(hello), nil
	}
	if acme.IsChallenge(hello) {
		return tl.site.Certificate(hello)
	}
	return tl.choose(set, hello, tl.site.Certificate)
}

// choose is certificate for a handshake that is no validation, with
// automatic the site's way of giving one.
func (tl *Listener) choose(set *settings, hello *tls.ClientHelloInfo, automatic func(*tls.ClientHelloInfo) (*tls.Certificate, error)) (*tls.Certificate, error) {
	if c := set.certs.match(hello); c != nil {
		return c, nil
	}
	c, err := automatic(hello)
	if err == nil {
		return c, nil
	}
	if d := supported(hello, set.certs.all); d != nil {
		return d, nil
	}
	return nil, err
}

// supported returns the first of cs the client can use (its signature
// algorithms and curves), the first of cs when it can use none, or nil
// when cs is empty.
func supported(hello *tls.ClientHelloInfo, cs []*tls.Certificate) *tls.Certificate {
	if len(cs) == 0 {
		return nil
	}
	if len(cs) > 1 {
		for _, c := range cs {
			if hello.SupportsCertificate(c) == nil {
				return c
			}
		}
	}
	return cs[0]
}

// NewListener loads the certificates of l and builds its TLS config.
func NewListener(index int, l *config.Listener, logf func(string, ...any), h2 func() bool, site *acme.Site) (*Listener, error) {
	tl := &Listener{index: index, protos: l.Protocols, log: logf, gate: newHandshakeGate(), site: site}
	set, stamps, err := tl.loadSettings(l.TLS)
	if err != nil {
		return nil, err
	}
	tl.cur.Store(set)
	tl.files = stamps
	tl.config = &tls.Config{
		// The base config holds what must stay the same for the
		// listener's life: the session ticket keys (generated and
		// rotated by crypto/tls), so that resumption survives reloads.
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			v := tl.cur.Load().variantFor(hello)
			if s, ok := hello.Conn.(*shim); ok {
				s.t.auth = v.auth // read by the handshake goroutine once it succeeded
			}
			if h2() {
				return v.configH2, nil
			}
			return v.config, nil
		},
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
	}
	return tl, nil
}

// loadSettings reads the certificate files of t and builds a settings
// generation for the listener, with the stamps of the files it read.
func (tl *Listener) loadSettings(t *config.TLS) (*settings, []fileStamp, error) {
	var stamps []fileStamp
	certs := make([]*tls.Certificate, 0, len(t.Certificates))
	for _, c := range t.Certificates {
		// Stamp before reading: a change during the read is seen by
		// the next poll.
		stamps = append(stamps, stampOf(c.Cert), stampOf(c.Key))
		pair, _, msg := config.LoadKeyPair(c.Cert, c.Key)
		if msg != "" {
			return nil, nil, fmt.Errorf("%w: %s", errTLSListener, msg)
		}
		certs = append(certs, pair)
	}
	set := &settings{
		certs:   newCertSet(certs),
		timeout: int64(t.HandshakeTimeout),
		hello:   int64(t.ClientHelloTimeout),
		max:     int64(t.MaxHandshakes),
		share:   int64(t.MaxHandshakesPerAddress),
		src:     t,
	}
	minVersion := uint16(tls.VersionTLS12)
	if t.MinVersion == "1.3" {
		minVersion = tls.VersionTLS13
	}
	base := &tls.Config{
		MinVersion: minVersion,
		NextProtos: tl.alpn(false),
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			return tl.certificate(set, hello)
		},
		// Full-size records: fewer records (and AEAD calls) per
		// response, like nginx's default 16k ssl_buffer_size.
		DynamicRecordSizingDisabled: true,
	}
	auth, authStamps, err := loadClientAuth(t.ClientAuth)
	if err != nil {
		return nil, nil, err
	}
	stamps = append(stamps, authStamps...)
	set.base = tl.variant(base, auth)
	for i, c := range t.Certificates {
		if c.ClientAuth == nil {
			continue
		}
		own, ownStamps, err := loadClientAuth(c.ClientAuth)
		if err != nil {
			return nil, nil, err
		}
		stamps = append(stamps, ownStamps...)
		if set.scoped == nil {
			set.scoped = map[*tls.Certificate]*variant{}
		}
		v := tl.variant(base, own)
		set.scoped[certs[i]] = &v
	}
	return set, stamps, nil
}

// variant builds the per-handshake configs of client_auth a (nil for
// none) from base.
func (tl *Listener) variant(base *tls.Config, a *clientAuth) variant {
	v := variant{config: base.Clone(), auth: a}
	if a != nil {
		a.apply(v.config)
	}
	// h2 is offered over TLS 1.2 and later only (the floor is 1.2 at
	// least); a TLS 1.2 session with a suite RFC 9113 section 9.2.2
	// forbids is refused after the handshake (h2Cipher).
	v.configH2 = v.config.Clone()
	v.configH2.NextProtos = tl.alpn(true)
	return v
}

// alpn is what the listener offers in ALPN: its protocols (see alpn),
// then "acme-tls/1" when it answers TLS-ALPN-01 challenges, which only a
// validation offers (RFC 8737 section 3).
func (tl *Listener) alpn(h2 bool) []string {
	out := alpn(tl.protos, h2)
	if tl.site != nil && tl.site.AnswersTLSALPN() {
		out = append(out, acme.ALPNChallenge)
	}
	return out
}

// alpn is what a listener speaking protos offers in ALPN (RFC 7301): "h2"
// first when it has h2 and HTTP/2 is on (h2), then "http/1.1" when it has
// h1. A listener without h1 never offers "http/1.1": a client that offers
// only that gets no protocol from crypto/tls, and is served only if it
// opens with the HTTP/2 preface (chooseProto).
func alpn(protos config.Protocols, h2 bool) []string {
	var out []string
	if h2 && protos.H2() {
		out = append(out, "h2")
	}
	if protos.H1() {
		out = append(out, "http/1.1")
	}
	return out
}

// stampsNow returns the current stamps of the files in stamps.
func stampsNow(stamps []fileStamp) []fileStamp {
	now := make([]fileStamp, len(stamps))
	for i, st := range stamps {
		now[i] = stampOf(st.path)
	}
	return now
}

// swapNolock makes set (read from the files as stamped) the listener's
// settings. The caller holds tl.reload.
func (tl *Listener) swapNolock(set *settings, stamps []fileStamp) {
	tl.cur.Store(set)
	tl.files, tl.bad = stamps, nil
}

// Poll reloads the certificates when their files changed. A failed load
// (a file half written, a key not yet matching its new certificate) is
// logged once and retried at every poll, since the stamps stay those of
// the last good load.
func (tl *Listener) Poll() {
	tl.reload.Lock()
	defer tl.reload.Unlock()
	now := stampsNow(tl.files)
	if slices.Equal(now, tl.files) || slices.Equal(now, tl.bad) {
		return
	}
	src := tl.cur.Load().src
	set, stamps, err := tl.loadSettings(src)
	if err != nil {
		tl.bad = now
		tl.log("tls: certificate files changed but cannot be loaded; keeping the running certificates", "err", err.Error())
		return
	}
	tl.swapNolock(set, stamps)
	tl.log("tls: certificates reloaded", "listener", tl.index, "certificates", len(src.Certificates))
}

// Reload reads the certificates of every listener of ls again, from the
// settings of ts (one per listener), even when their files did not
// change. Everything is loaded first, then swapped: either all listeners
// get the new certificates or none does.
func Reload(ls []*Listener, ts []*config.TLS) error {
	sets := make([]*settings, len(ls))
	stamps := make([][]fileStamp, len(ls))
	for i, tl := range ls {
		var err error
		if sets[i], stamps[i], err = tl.loadSettings(ts[i]); err != nil {
			return err
		}
	}
	for i, tl := range ls {
		tl.reload.Lock()
		tl.swapNolock(sets[i], stamps[i])
		tl.reload.Unlock()
	}
	return nil
}
