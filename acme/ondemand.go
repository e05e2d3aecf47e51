package acme

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"gale/config"
)

const (
	// askTimeout bounds one question to the ask endpoint.
	askTimeout = 10 * time.Second
	// maxAsks bounds the questions to the ask endpoint in flight at once;
	// a handshake beyond them is refused, so that a flood of made-up
	// server names cannot queue work behind the endpoint.
	maxAsks = 8
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
	asks     chan struct{}
	log      *slog.Logger

	mu  sync.Mutex
	tat time.Time // the GCRA's theoretical arrival time of the next approval
}

func newOnDemandGate(o *config.OnDemand, log *slog.Logger) *onDemandGate {
	u, _ := url.Parse(o.Ask) // checked by config
	return &onDemandGate{
		ask: u, interval: o.Interval, burst: o.Burst, log: log,
		client: &http.Client{
			Timeout: askTimeout,
			// A redirect is not an approval.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		asks: make(chan struct{}, maxAsks),
	}
}

// decide is certmagic's OnDemandConfig.DecisionFunc.
func (g *onDemandGate) decide(ctx context.Context, name string) error {
	select {
	case g.asks <- struct{}{}:
	default:
		return errAskBusy
	}
	err := g.askAbout(ctx, name)
	<-g.asks
	if err != nil {
		g.log.Info("acme: on-demand certificate refused", "name", name, "err", err.Error())
		return err
	}
	if !g.take(time.Now()) {
		g.log.Warn("acme: on-demand certificate refused", "name", name, "err", errRate.Error())
		return errRate
	}
	return nil
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
