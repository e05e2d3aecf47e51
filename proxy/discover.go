package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"gale/config"
)

// Discovery: proxy.to entries dns+a://name:port and
// dns+srv://_service._proto.name become one upstream per address their
// records give, each with its own pools and health, like a fixed one.
//
// One goroutine per route asks the DNS server again as each entry's
// records expire (their smallest TTL, bounded by resolve.min_ttl and
// max_ttl). It never runs on an event loop and never touches a loop's
// state: it publishes the route's whole upstream set as a new immutable
// value behind an atomic pointer (Handler.ups), which each request loads
// once. An address that disappears is marked gone: requests in flight on
// it finish, none picks it again, and its pools close their idle
// connections at the next put or sweep (drained, not cut). A failed or
// empty answer keeps the entry's last good addresses, and is logged once
// when the entry starts failing and once when it recovers.

// discovery resolves the discovered entries of one route.
type discovery struct {
	h       *Handler
	conf    config.Resolve
	entries []*discoveredEntry
	server  string // the DNS server asked, host:port
	client  dns.Client
	byAddr  map[string]*Upstream // the discovered upstreams now, by network and address
	capped  bool                 // the last set left addresses out (logged once per change)
	quit    chan struct{}
	done    chan struct{}
}

// discoveredEntry is one dns+ entry and what its last good answer gave.
type discoveredEntry struct {
	conf    config.Upstream
	targets []target  // the last good answer; nil before the first
	due     time.Time // when to ask again
	failing bool      // the last attempt failed (logged once per change)
}

// target is one address an entry's records give.
type target struct {
	address string // ip:port, dialed
	host    string // the Host field sent for it (when preserve_host is off)
}

func newDiscovery(h *Handler, entries []config.Upstream, conf config.Resolve) *discovery {
	d := &discovery{h: h, conf: conf, byAddr: map[string]*Upstream{}}
	for _, e := range entries {
		d.entries = append(d.entries, &discoveredEntry{conf: e})
	}
	d.client = dns.Client{Net: "udp", Timeout: conf.Timeout}
	return d
}

// start resolves every entry once, publishes what it found, and goes on
// in a goroutine until stop.
func (d *discovery) start() {
	d.server = d.conf.Resolver
	if d.server == "" {
		d.server = systemResolver()
	}
	d.quit, d.done = make(chan struct{}), make(chan struct{})
	wait := d.round(time.Now())
	go d.run(wait)
}

// systemResolver returns the first nameserver of /etc/resolv.conf, or
// 127.0.0.1:53 when there is none.
func systemResolver() string {
	cc, err := dns.ClientConfigFromFile("/etc/resolv.conf")
	if err != nil || len(cc.Servers) == 0 {
		return "127.0.0.1:53"
	}
	return net.JoinHostPort(cc.Servers[0], cc.Port)
}

// stop ends the goroutine and waits for it.
func (d *discovery) stop() {
	if d.quit == nil {
		return
	}
	close(d.quit)
	<-d.done
}

func (d *discovery) run(wait time.Duration) {
	defer close(d.done)
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-d.quit:
			return
		case now := <-t.C:
			t.Reset(d.round(now))
		}
	}
}

// round asks again about the entries that are due at now, publishes the
// upstream set when an answer changed it, and returns how long to wait
// until the next entry is due.
func (d *discovery) round(now time.Time) time.Duration {
	for _, e := range d.entries {
		if now.Before(e.due) {
			continue
		}
		targets, ttl, err := d.resolve(e)
		if err == nil && len(targets) == 0 {
			err = errors.New("no records")
		}
		if err != nil {
			e.due = now.Add(d.conf.MinTTL)
			if !e.failing {
				e.failing = true
				d.logf(slog.LevelWarn, "upstream discovery failed; keeping the last addresses", e, "error", err.Error(), "addresses", len(e.targets))
			}
			continue
		}
		if e.failing {
			e.failing = false
			d.logf(slog.LevelInfo, "upstream discovery recovered", e, "addresses", len(targets))
		}
		e.targets = targets
		e.due = now.Add(min(max(ttl, d.conf.MinTTL), d.conf.MaxTTL))
	}
	d.publish()
	next := d.conf.MaxTTL
	for _, e := range d.entries {
		next = min(next, e.due.Sub(now))
	}
	return max(next, time.Millisecond)
}

// publish makes the fixed upstreams and every entry's targets the route's
// set, when that differs from the current one: targets still found keep
// their Upstream (health, counters), new ones get one, and those gone are
// drained.
func (d *discovery) publish() {
	h := d.h
	ups := slices.Clone(h.fixed)
	seen := map[string]bool{}
	for _, u := range h.fixed {
		seen[u.network+" "+u.address] = true
	}
	capped := false
	for _, e := range d.entries {
		for _, t := range e.targets {
			key := "tcp " + t.address
			if seen[key] {
				continue
			}
			if len(ups) == maxUpstreams {
				if !d.capped && !capped {
					d.logf(slog.LevelWarn, "upstream discovery found more addresses than a route may use; the rest are left out", e, "max", maxUpstreams)
				}
				capped = true
				break
			}
			seen[key] = true
			u := d.byAddr[key]
			if u == nil {
				u = h.newUpstream(config.Upstream{Network: "tcp", Host: t.host, TLS: e.conf.TLS}, t.address, t.address, e.conf.Raw)
				d.byAddr[key] = u
				if h.conf.HealthCheck.Path != "" {
					h.checkers.start(u, &h.conf.HealthCheck)
				}
				d.logf(slog.LevelInfo, "upstream discovered", e, "address", t.address)
			}
			ups = append(ups, u)
		}
	}
	d.capped = capped
	for key, u := range d.byAddr {
		if !seen[key] {
			delete(d.byAddr, key)
			d.retire(u)
		}
	}
	if cur := h.ups.Load(); !slices.Equal(cur.ups, ups) {
		h.ups.Store(newUpstreamSet(ups))
	}
}

// retire drains u, which discovery no longer finds.
func (d *discovery) retire(u *Upstream) {
	u.gone.Store(true)
	d.h.checkers.stopFor(u)
	if u.h2t != nil {
		u.h2t.CloseIdleConnections()
	}
	d.h.logf(slog.LevelInfo, "upstream removed; draining", u, "from", u.from)
}

// logf logs an event of entry e.
func (d *discovery) logf(level slog.Level, msg string, e *discoveredEntry, args ...any) {
	l := d.h.log.Load()
	if l == nil || !l.Enabled(context.Background(), level) {
		return
	}
	args = append([]any{"route", d.h.route.Conf.Path, "upstream", e.conf.Raw}, args...)
	l.Log(context.Background(), level, msg, args...)
}

// resolve asks about entry e and returns its targets and the smallest
// TTL of the records used.
func (d *discovery) resolve(e *discoveredEntry) ([]target, time.Duration, error) {
	if e.conf.Discover == "srv" {
		return d.resolveSRV(e.conf.Name)
	}
	ips, ttl, err := d.lookupA(e.conf.Name, nil)
	if err != nil {
		return nil, 0, err
	}
	out := make([]target, 0, len(ips))
	for _, ip := range ips {
		out = append(out, target{address: net.JoinHostPort(ip, e.conf.Port), host: e.conf.Host})
	}
	return out, ttl, nil
}

// resolveSRV asks for the SRV records of name and the addresses of their
// targets (from the answer's additional section when it holds them).
// Only the records of the lowest priority are used: the others are
// fallbacks the server publishes for when those are gone. Weights are
// not applied: the route's load_balancing spreads the requests.
func (d *discovery) resolveSRV(name string) ([]target, time.Duration, error) {
	r, err := d.query(name, dns.TypeSRV)
	if err != nil {
		return nil, 0, err
	}
	var srvs []*dns.SRV
	ttl := time.Duration(-1)
	for _, rr := range r.Answer {
		if s, ok := rr.(*dns.SRV); ok && s.Target != "." {
			srvs = append(srvs, s)
			ttl = minTTL(ttl, rr.Header().Ttl)
		}
	}
	if len(srvs) == 0 {
		return nil, 0, nil
	}
	lowest := srvs[0].Priority
	for _, s := range srvs {
		lowest = min(lowest, s.Priority)
	}
	var out []target
	for _, s := range srvs {
		if s.Priority != lowest {
			continue
		}
		ips, t, err := d.lookupA(s.Target, r.Extra)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", s.Target, err)
		}
		ttl = minTTL(ttl, uint32(t/time.Second))
		port := strconv.Itoa(int(s.Port))
		host := strings.TrimSuffix(s.Target, ".")
		for _, ip := range ips {
			out = append(out, target{address: net.JoinHostPort(ip, port), host: net.JoinHostPort(host, port)})
		}
	}
	return out, ttl, nil
}

// lookupA returns the IPv4 addresses of name, from extra (an answer's
// additional section) when it holds any, else from a query of its own,
// and the smallest TTL among their records.
func (d *discovery) lookupA(name string, extra []dns.RR) ([]string, time.Duration, error) {
	ips, ttl := aRecords(extra, name)
	if len(ips) > 0 {
		return ips, ttl, nil
	}
	r, err := d.query(name, dns.TypeA)
	if err != nil {
		return nil, 0, err
	}
	ips, ttl = aRecords(r.Answer, "")
	return ips, ttl, nil
}

// aRecords returns the addresses of the A records among rrs (of owner
// name only, unless name is ""), sorted, and their smallest TTL.
func aRecords(rrs []dns.RR, name string) ([]string, time.Duration) {
	var ips []string
	ttl := time.Duration(-1)
	for _, rr := range rrs {
		a, ok := rr.(*dns.A)
		if !ok || name != "" && !strings.EqualFold(rr.Header().Name, name) {
			continue
		}
		if ip := a.A.String(); !slices.Contains(ips, ip) {
			ips = append(ips, ip)
		}
		ttl = minTTL(ttl, rr.Header().Ttl)
	}
	slices.Sort(ips)
	return ips, max(ttl, 0)
}

// minTTL returns the smaller of d (negative: none yet) and ttl seconds.
func minTTL(d time.Duration, ttl uint32) time.Duration {
	t := time.Duration(ttl) * time.Second
	if d < 0 || t < d {
		return t
	}
	return d
}

// query sends one question to the DNS server, again over TCP when the
// answer was truncated, and returns the answer when its code is success.
func (d *discovery) query(name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = true
	r, _, err := d.client.Exchange(m, d.server)
	if err == nil && r.Truncated {
		tcp := d.client
		tcp.Net = "tcp"
		r, _, err = tcp.Exchange(m, d.server)
	}
	if err != nil {
		return nil, err
	}
	if r.Rcode != dns.RcodeSuccess {
		return nil, fmt.Errorf("%s %s: %s", name, dns.TypeToString[qtype], dns.RcodeToString[r.Rcode])
	}
	return r, nil
}
