package app

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/config"
)

// TLS termination. Each TLS listener has one tlsListener, shared by the
// loops: its tls.Config (immutable once built; the certificates and the
// settings that may change on reload sit behind atomic pointers), the
// admission of handshakes (tls_gate.go), and the files its certificates
// came from. The per-connection transport is in tls_conn.go.

// certPoll is how often the certificate files of the TLS listeners are
// checked for changes, off the loops.
var certPoll = 3 * time.Second

// errTLSListener wraps the errors of loading a listener's certificates.
var errTLSListener = errors.New("app: tls")

// listenerInfo is what a connection needs to know about the listener that
// accepted it. It is immutable once the server is built.
type listenerInfo struct {
	addr    netip.AddrPort   // the bound address (port resolved; the unspecified address for "all interfaces")
	tls     *tlsListener     // nil for plain listeners
	toHTTPS *httpsRedirect   // non-nil for redirect_to_https listeners
	protos  config.Protocols // the HTTP versions it speaks (listen[].protocols), as the server started with it
}

// tlsListener is the TLS state of one listener. Its methods are safe for
// concurrent use.
type tlsListener struct {
	index  int                         // position in config.Listen
	protos config.Protocols            // what ALPN may offer: h2 and http/1.1 as listen[].protocols holds them
	config *tls.Config                 // what handshakes start from; GetConfigForClient returns cur's
	cur    atomic.Pointer[tlsSettings] // the settings generation new handshakes use
	gate   *handshakeGate              // handshake slots, per-address shares and the queue (tls_gate.go)
	log    func(msg string, args ...any)

	reload sync.Mutex  // serializes loads (the poller and Reload); guards files and bad
	files  []fileStamp // the certificate and key files of cur, as they were read
	bad    []fileStamp // the files as they were when loading them last failed (reported once)
}

// tlsSettings is one generation of a listener's TLS settings: replaced as
// a whole when certificates or settings change. Immutable.
type tlsSettings struct {
	config   *tls.Config // per-handshake config: version floor, certificate choice; ALPN http/1.1 when the listener has h1
	configH2 *tls.Config // the same, offering h2 first when the listener has h2 (while the server serves HTTP/2)
	certs    certSet     // the loaded certificates
	timeout  int64       // handshake timeout, nanoseconds
	hello    int64       // ClientHello timeout, nanoseconds
	max      int64       // handshakes in progress at once
	share    int64       // slots one client address may hold or wait for
	src      *config.TLS // what this generation was loaded from
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

func (s *certSet) pick(hello *tls.ClientHelloInfo) *tls.Certificate {
	name := hello.ServerName
	if name != "" {
		name = strings.ToLower(strings.TrimSuffix(name, "."))
		if c := supported(hello, s.exact[name]); c != nil {
			return c
		}
		if i := strings.IndexByte(name, '.'); i > 0 {
			if c := supported(hello, s.wild[name[i+1:]]); c != nil {
				return c
			}
		}
	}
	return supported(hello, s.all)
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

// newTLSListener loads the certificates of l and builds its TLS config.
func newTLSListener(index int, l *config.Listener, logf func(string, ...any), h2 func() bool) (*tlsListener, error) {
	tl := &tlsListener{index: index, protos: l.Protocols, log: logf, gate: newHandshakeGate()}
	set, stamps, err := loadTLSSettings(l.TLS, tl.protos)
	if err != nil {
		return nil, err
	}
	tl.cur.Store(set)
	tl.files = stamps
	tl.config = &tls.Config{
		// The base config holds what must stay the same for the
		// listener's life: the session ticket keys (generated and
		// rotated by crypto/tls), so that resumption survives reloads.
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			if h2() {
				return tl.cur.Load().configH2, nil
			}
			return tl.cur.Load().config, nil
		},
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
	}
	return tl, nil
}

// loadTLSSettings reads the certificate files of t and builds a settings
// generation for a listener speaking protos, with the stamps of the files
// it read.
func loadTLSSettings(t *config.TLS, protos config.Protocols) (*tlsSettings, []fileStamp, error) {
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
	set := &tlsSettings{
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
	set.config = &tls.Config{
		MinVersion: minVersion,
		NextProtos: alpn(protos, false),
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			return set.certs.pick(hello), nil
		},
		// Full-size records: fewer records (and AEAD calls) per
		// response, like nginx's default 16k ssl_buffer_size.
		DynamicRecordSizingDisabled: true,
	}
	// h2 is offered over TLS 1.2 and later only (the floor is 1.2 at
	// least); a TLS 1.2 session with a suite RFC 9113 section 9.2.2
	// forbids is refused after the handshake (h2Cipher).
	set.configH2 = set.config.Clone()
	set.configH2.NextProtos = alpn(protos, true)
	return set, stamps, nil
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
func (tl *tlsListener) swapNolock(set *tlsSettings, stamps []fileStamp) {
	tl.cur.Store(set)
	tl.files, tl.bad = stamps, nil
}

// poll reloads the certificates when their files changed. A failed load
// (a file half written, a key not yet matching its new certificate) is
// logged once and retried at every poll, since the stamps stay those of
// the last good load.
func (tl *tlsListener) poll() {
	tl.reload.Lock()
	defer tl.reload.Unlock()
	now := stampsNow(tl.files)
	if slices.Equal(now, tl.files) || slices.Equal(now, tl.bad) {
		return
	}
	src := tl.cur.Load().src
	set, stamps, err := loadTLSSettings(src, tl.protos)
	if err != nil {
		tl.bad = now
		tl.log("tls: certificate files changed but cannot be loaded; keeping the running certificates", "err", err.Error())
		return
	}
	tl.swapNolock(set, stamps)
	tl.log("tls: certificates reloaded", "listener", tl.index, "certificates", len(src.Certificates))
}

// httpsRedirect answers every request of a redirect_to_https listener.
type httpsRedirect struct {
	port []byte // ":8443", or nil for 443
}

// setupListeners builds the per-listener state for cfg's listeners, whose
// resolved addresses are s.addrs.
func (s *Server) setupListeners(cfg *config.Config) error {
	s.listeners = make([]listenerInfo, len(cfg.Listen))
	logf := func(msg string, args ...any) { s.log.Info(msg, args...) }
	for i := range cfg.Listen {
		l := &cfg.Listen[i]
		ap, err := netip.ParseAddrPort(s.addrs[i])
		if err != nil {
			// "host" empty: all interfaces.
			_, port, _ := net.SplitHostPort(s.addrs[i])
			p, _ := strconv.Atoi(port)
			ap = netip.AddrPortFrom(netip.IPv6Unspecified(), uint16(p))
		}
		li := listenerInfo{addr: ap, protos: l.Protocols}
		if l.TLS != nil {
			tl, err := newTLSListener(i, l, logf, s.http2On)
			if err != nil {
				return fmt.Errorf("listen %s: %w", l.Address, err)
			}
			li.tls = tl
			s.anyTLS = true
		}
		s.listeners[i] = li
	}
	for i := range cfg.Listen {
		r := cfg.Listen[i].RedirectToHTTPS
		if r == nil {
			continue
		}
		h := &httpsRedirect{}
		if r.Listener >= 0 && r.Listener < len(s.listeners) {
			if p := s.listeners[r.Listener].addr.Port(); p != 443 {
				h.port = []byte(":" + strconv.Itoa(int(p)))
			}
		}
		s.listeners[i].toHTTPS = h
		s.anyTLS = true
	}
	s.sameProtos = uniformProtocols(s.listeners)
	return nil
}

// uniformProtocols returns the protocols of listeners when all of them
// are plain and speak the same ones, else 0: then a connection must find
// its listener at open.
func uniformProtocols(listeners []listenerInfo) config.Protocols {
	var p config.Protocols
	for i := range listeners {
		li := &listeners[i]
		if li.tls != nil || li.toHTTPS != nil || (p != 0 && li.protos != p) {
			return 0
		}
		p = li.protos
	}
	return p
}

// listenerOf finds the listener that accepted c by its local address
// (gnet reports the listener's own address for accepted connections).
func (s *Server) listenerOf(c gnet.Conn) *listenerInfo {
	ta, ok := c.LocalAddr().(*net.TCPAddr)
	if !ok {
		return nil
	}
	port := uint16(ta.Port)
	var byPort *listenerInfo
	for i := range s.listeners {
		li := &s.listeners[i]
		if li.addr.Port() != port {
			continue
		}
		ip, _ := netip.AddrFromSlice(ta.IP)
		if ip.Unmap() == li.addr.Addr().Unmap() {
			return li
		}
		if byPort == nil {
			byPort = li
		}
	}
	return byPort
}

// attachTransport gives a newly opened client connection what it needs
// of its listener for its whole life: the protocols it may speak, and its
// transport (TLS, or the https redirect). When every listener is plain
// and speaks the same protocols, nothing is looked up.
func (s *Server) attachTransport(c gnet.Conn) {
	cs, ok := c.Context().(*conn)
	if !ok {
		return
	}
	if s.sameProtos != 0 {
		cs.protos = s.sameProtos
		return
	}
	li := s.listenerOf(c)
	if li == nil {
		return
	}
	cs.protos = li.protos
	switch {
	case li.tls != nil:
		cs.tls = newTLSConn(cs, li.tls)
		cs.SetLayer(cs.tls)
		cs.ctx.TLS = true
	case li.toHTTPS != nil:
		cs.toHTTPS = li.toHTTPS
	}
}

// watchCertificates polls the TLS listeners' certificate files every
// interval until stop is closed.
func (s *Server) watchCertificates(stop <-chan struct{}, interval time.Duration) {
	if !s.anyTLS {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			for i := range s.listeners {
				if tl := s.listeners[i].tls; tl != nil {
					tl.poll()
				}
			}
		}
	}
}

// reloadTLS applies the TLS settings of cfg (whose listen addresses are
// those running) to the running TLS listeners: certificates are read
// again, even when their files did not change. A listener that changes
// between plain, TLS and redirect, or changes its protocols, needs a
// restart; that is returned as a note.
func (s *Server) reloadTLS(cfg *config.Config) (notes []string, err error) {
	type job struct {
		tl *tlsListener
		t  *config.TLS
	}
	var jobs []job
	for i := range cfg.Listen {
		if i >= len(s.listeners) {
			break
		}
		l, li := &cfg.Listen[i], &s.listeners[i]
		if (l.TLS != nil) != (li.tls != nil) || (l.RedirectToHTTPS != nil) != (li.toHTTPS != nil) {
			notes = append(notes, fmt.Sprintf("listen %s: switching between plain, TLS and redirect_to_https needs a restart", l.Address))
			continue
		}
		if l.Protocols != li.protos {
			notes = append(notes, fmt.Sprintf("listen %s: protocols changed to %s: restart gale to apply them (the listener keeps %s)", l.Address, l.Protocols, li.protos))
		}
		if l.TLS != nil {
			jobs = append(jobs, job{li.tls, l.TLS})
		}
	}
	// Load everything first, then swap: either all listeners get the new
	// certificates or none does.
	sets := make([]*tlsSettings, len(jobs))
	stamps := make([][]fileStamp, len(jobs))
	for i, j := range jobs {
		if sets[i], stamps[i], err = loadTLSSettings(j.t, j.tl.protos); err != nil {
			return nil, err
		}
	}
	for i, j := range jobs {
		j.tl.reload.Lock()
		j.tl.swapNolock(sets[i], stamps[i])
		j.tl.reload.Unlock()
	}
	return notes, nil
}

// URLs returns the base URL of every listener, "http://host:port" or
// "https://host:port", ports resolved, in config order.
func (s *Server) URLs() []string {
	out := make([]string, len(s.addrs))
	for i, a := range s.addrs {
		scheme := "http://"
		if i < len(s.listeners) && s.listeners[i].tls != nil {
			scheme = "https://"
		}
		out[i] = scheme + a
	}
	return out
}
