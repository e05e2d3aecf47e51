package h3

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"gale/app/wire"
	"gale/clientcert"
	"gale/config"
)

// Loops is where the event loops that answer HTTP/3 requests come from:
// the server's loops. Loops is safe for concurrent use, and the slice it
// returns is never modified (a new one replaces it when a loop appears).
type Loops interface {
	Loops() []*wire.Loop
}

// ClientCerts describes the certificates clients present, as the TLS
// listener asks for them. Its methods are safe for concurrent use.
type ClientCerts interface {
	// AsksClientCerts reports whether handshakes ask for certificates.
	AsksClientCerts() bool
	// ClientCert describes the certificate of a finished handshake;
	// nil when none was presented.
	ClientCert(*tls.ConnectionState) *clientcert.Info
}

// Config is what a Listener is made from.
type Config struct {
	Addr   string       // the UDP address, "host:port" with the port resolved (the TLS listener's)
	TLS    *tls.Config  // tlsconn.Listener.QUICConfig: TLS 1.3, ALPN h3, the listener's certificates
	Certs  ClientCerts  // the client certificates of the listener (tlsconn.Listener); nil = none asked for
	HTTP3  config.HTTP3 // server.http3
	Shared *wire.Shared // settings, budget, access log, stop flag
	Loops  Loops
	Log    *slog.Logger
}

// Listener is one TLS listener's HTTP/3 side. Its methods are safe for
// concurrent use.
type Listener struct {
	cfg   Config
	udp   *net.UDPConn
	tr    *quic.Transport
	ln    http3.QUICListener
	srv   *http3.Server
	next  atomic.Uint32 // round robin over the loops, per QUIC connection
	pool  sync.Pool     // *exchange
	heads headCache     // parsed cached-file heads
	date  dateCache     // the Date value of the current second
	stop  sync.Once
}

// errNoLoop answers a request that arrived before any event loop ran.
var errNoLoop = errors.New("h3: no event loop to answer on")

// Listen binds the UDP socket of cfg.Addr and prepares QUIC and HTTP/3 on
// it; Serve starts accepting. The socket is counted in the descriptor
// budget until Close.
func Listen(cfg Config) (*Listener, error) {
	if !cfg.Shared.Budget.Acquire(1) {
		return nil, fmt.Errorf("http3 %s: no descriptor left for the UDP socket", cfg.Addr)
	}
	ua, err := net.ResolveUDPAddr("udp", cfg.Addr)
	if err == nil {
		var c *net.UDPConn
		if c, err = net.ListenUDP("udp", ua); err == nil {
			return newListener(cfg, c)
		}
	}
	cfg.Shared.Budget.Release(1)
	return nil, fmt.Errorf("http3 %s: %w", cfg.Addr, err)
}

// newListener starts QUIC on the bound socket c.
func newListener(cfg Config, c *net.UDPConn) (*Listener, error) {
	sizeBuffers(c, cfg.Log)
	l := &Listener{cfg: cfg, udp: c, tr: &quic.Transport{Conn: c}}
	l.pool.New = func() any { return newExchange(l) }
	h := cfg.HTTP3
	qc := &quic.Config{
		MaxIncomingStreams:    int64(h.MaxConcurrentStreams),
		MaxIncomingUniStreams: 16, // control and QPACK streams; no server push or WebTransport
		MaxIdleTimeout:        h.IdleTimeout,
		HandshakeIdleTimeout:  h.HandshakeTimeout,
		Allow0RTT:             h.Allow0RTT,
	}
	tc := http3.ConfigureTLSConfig(cfg.TLS)
	var err error
	if h.Allow0RTT {
		l.ln, err = l.tr.ListenEarly(tc, qc)
	} else {
		l.ln, err = l.tr.Listen(tc, qc)
	}
	if err != nil {
		_ = c.Close()
		cfg.Shared.Budget.Release(1)
		return nil, fmt.Errorf("http3 %s: %w", cfg.Addr, err)
	}
	l.srv = &http3.Server{
		Handler:        l,
		MaxHeaderBytes: h.MaxHeaderBytes,
		IdleTimeout:    h.IdleTimeout,
		ConnContext:    l.connContext,
	}
	return l, nil
}

// Port is the UDP port the listener is bound to.
func (l *Listener) Port() int { return l.udp.LocalAddr().(*net.UDPAddr).Port }

// AltSvc is the Alt-Svc field value that advertises the listener (RFC
// 7838): h3 on its port for maxAge.
func AltSvc(port int, maxAge int64) string {
	return `h3=":` + strconv.Itoa(port) + `"; ma=` + strconv.FormatInt(maxAge, 10)
}

// Serve accepts QUIC connections until Shutdown or Close. It blocks, and
// returns nil after a stop.
func (l *Listener) Serve() error {
	err := l.srv.ServeListener(l.ln)
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, quic.ErrServerClosed) {
		return nil
	}
	return err
}

// connKey carries a QUIC connection's *connInfo in its context.
type connKey struct{}

// connInfo is what a QUIC connection's requests share: the loop that
// answers them and the client's certificate.
type connInfo struct {
	lp   *wire.Loop
	qc   *quic.Conn
	once sync.Once
	cert *clientcert.Info // set by the first certificate call
}

// connContext gives each QUIC connection the event loop that answers all
// of its requests (round robin over the loops), so that one connection's
// requests share that loop's cache view and counters, and counts it
// there.
func (l *Listener) connContext(ctx context.Context, qc *quic.Conn) context.Context {
	loops := l.cfg.Loops.Loops()
	ci := &connInfo{qc: qc}
	if len(loops) > 0 {
		ci.lp = loops[int(l.next.Add(1)-1)%len(loops)]
		_ = ci.lp.EL.Execute(ctx, countConn{ci.lp})
	}
	return context.WithValue(ctx, connKey{}, ci)
}

// certOf returns the certificate the client of the request's connection
// presented, nil for none: described once per connection, on its first
// request's goroutine (when the listener asks for certificates, a 0-RTT
// request waits for the handshake to end).
func (l *Listener) certOf(ctx context.Context) *clientcert.Info {
	ci, ok := ctx.Value(connKey{}).(*connInfo)
	if !ok || l.cfg.Certs == nil {
		return nil
	}
	ci.once.Do(func() {
		if !l.cfg.Certs.AsksClientCerts() {
			return
		}
		select {
		case <-ci.qc.HandshakeComplete():
		case <-ci.qc.Context().Done():
			return
		}
		st := ci.qc.ConnectionState().TLS
		ci.cert = l.cfg.Certs.ClientCert(&st)
	})
	return ci.cert
}

// countConn counts a QUIC connection on the loop that answers it.
type countConn struct{ lp *wire.Loop }

func (c countConn) Run(context.Context) error {
	c.lp.Stats.H3Conns.Add(1)
	return nil
}

// loopOf returns the loop of the request's connection.
func (l *Listener) loopOf(ctx context.Context) (*wire.Loop, error) {
	if ci, ok := ctx.Value(connKey{}).(*connInfo); ok && ci.lp != nil {
		return ci.lp, nil
	}
	loops := l.cfg.Loops.Loops() // the connection came before the loops
	if len(loops) == 0 {
		return nil, errNoLoop
	}
	return loops[int(l.next.Add(1)-1)%len(loops)], nil
}

// Shutdown stops gracefully: no new connections, GOAWAY on every open
// one, and the requests in flight finish until ctx ends, when whatever
// is left is closed. It then closes the socket (Close).
func (l *Listener) Shutdown(ctx context.Context) error {
	err := l.srv.Shutdown(ctx)
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close closes every connection and the socket at once. It is safe to
// call more than once.
func (l *Listener) Close() error {
	var err error
	l.stop.Do(func() {
		_ = l.srv.Close()
		_ = l.ln.Close()
		err = l.tr.Close()
		_ = l.udp.Close()
		l.cfg.Shared.Budget.Release(1)
	})
	return err
}
