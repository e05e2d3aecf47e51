package acme

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"

	"gale/config"
)

const (
	// askTimeout bounds one question to the ask endpoint.
	askTimeout = 10 * time.Second
	// maxAsks bounds the questions to the ask endpoint in flight at once
	// about names without a certificate; a handshake beyond them is
	// refused, so that a flood of made-up server names cannot queue work
	// behind the endpoint.
	maxAsks = 8
	// maxAsksPerAddress is one client address's share of maxAsks.
	maxAsksPerAddress = 2
)

var (
	errAskBusy  = errors.New("acme: on-demand: too many names being asked about at once")
	errRate     = errors.New("acme: on-demand: rate of approved names exceeded (on_demand.rate)")
	errRefused  = errors.New("acme: on-demand: the ask endpoint refused the name")
	errAskError = errors.New("acme: on-demand: the ask endpoint could not be asked")
)

// onDemandGate decides whether a name may get a certificate on demand:
// the ask endpoint must approve it (a 200 to GET ask?domain=NAME), and
// approvals are spaced by the configured rate (GCRA: burst+1 at once,
// then one per interval).
type onDemandGate struct {
	ask      *url.URL
	interval time.Duration
	burst    int
	client   *http.Client
	has      func(name string) bool // whether a certificate for name is in memory (certmagic asks again at renewal)
	log      *slog.Logger

	asks *shares // questions in flight about new names, per client address (an IPv6 /64)

	mu  sync.Mutex
	tat time.Time // the GCRA's theoretical arrival time of the next approval
}

func newOnDemandGate(o *config.OnDemand, log *slog.Logger, has func(string) bool) *onDemandGate {
	u, _ := url.Parse(o.Ask) // checked by config
	return &onDemandGate{
		ask: u, interval: o.Interval, burst: o.Burst, log: log, has: has,
		client: &http.Client{
			Timeout: askTimeout,
			// A redirect is not an approval.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		asks: newShares(maxAsks, maxAsksPerAddress),
	}
}

// decide is certmagic's OnDemandConfig.DecisionFunc, asked before a name
// is obtained and again before it is renewed.
func (g *onDemandGate) decide(ctx context.Context, name string) error {
	if g.has(name) {
		return g.decideKnown(ctx, name)
	}
	key := clientKey(ctx)
	if !g.asks.claim(key) {
		return errAskBusy
	}
	err := g.askAbout(ctx, name)
	g.asks.release(key)
	if err != nil {
		g.log.Debug("acme: on-demand certificate refused", "name", name, "err", err.Error())
		return err
	}
	if !g.take(time.Now()) {
		g.log.Warn("acme: on-demand certificate refused", "name", name, "err", errRate.Error())
		return errRate
	}
	return nil
}

// decideKnown decides about a name whose certificate is in memory (a
// renewal): no share, no rate, and an endpoint that cannot be asked
// approves, since a refusal would drop a certificate that serves. Only an
// answer other than 200 refuses: the operator withdrew the name.
func (g *onDemandGate) decideKnown(ctx context.Context, name string) error {
	err := g.askAbout(ctx, name)
	if errors.Is(err, errAskError) {
		g.log.Warn("acme: on-demand renewal approved without the ask endpoint", "name", name, "err", err.Error())
		return nil
	}
	return err
}

// clientKey is the address of the client whose handshake asks (an IPv6
// address is counted by its /64), or the zero Addr when unknown.
func clientKey(ctx context.Context) netip.Addr {
	hello, _ := ctx.Value(certmagic.ClientHelloInfoCtxKey).(*tls.ClientHelloInfo)
	if hello == nil || hello.Conn == nil {
		return netip.Addr{}
	}
	ta, ok := hello.Conn.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	a := ta.AddrPort().Addr().Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		a = p.Addr()
	}
	return a
}

// askAbout asks the endpoint whether name may have a certificate.
func (g *onDemandGate) askAbout(ctx context.Context, name string) error {
	u := *g.ask
	q := u.Query()
	q.Set("domain", name)
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errAskError, err)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", errAskError, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w (status %d)", errRefused, resp.StatusCode)
	}
	return nil
}

// take spends one approval of the rate at now, and reports whether there
// was one to spend.
func (g *onDemandGate) take(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	tat := g.tat
	if tat.Before(now) {
		tat = now
	}
	if tat.Sub(now) > time.Duration(g.burst)*g.interval {
		return false
	}
	g.tat = tat.Add(g.interval)
	return true
}
