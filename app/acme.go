package app

// Automatic certificates as the server uses them (package acme does the
// ACME side): the manager built from the listeners' tls.automatic
// sections, and what answers on the plain listeners before routing: the
// HTTP-01 challenge and the redirect of the managed names to https.

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"gale/acme"
	"gale/app/wire"
	"gale/config"
	"gale/handlers"
)

// http01Timeout bounds the lookup of one HTTP-01 answer off the loop.
const http01Timeout = 5 * time.Second

// newACME builds the manager of cfg's automatic sections, whose listeners
// are bound at addrs; nil when there are none.
func (s *Server) newACME(cfg *config.Config, addrs []netip.AddrPort) (*acme.Manager, []*acme.Site, error) {
	var plain netip.AddrPort
	for i := range cfg.Listen {
		if cfg.Listen[i].TLS == nil {
			plain = addrs[i]
			break
		}
	}
	var secs []acme.Section
	var at []int
	for i := range cfg.Listen {
		if a := automaticOf(&cfg.Listen[i]); a != nil {
			secs = append(secs, acme.Section{Auto: a, TLSAddr: addrs[i], HTTPAddr: plain})
			at = append(at, i)
		}
	}
	if len(secs) == 0 {
		return nil, nil, nil
	}
	m, err := acme.New(secs, s.log)
	if err != nil {
		return nil, nil, err
	}
	sites := make([]*acme.Site, len(cfg.Listen))
	for j, i := range at {
		sites[i] = m.Sites()[j]
	}
	return m, sites, nil
}

// stopACME ends the management of automatic certificates.
func (s *Server) stopACME() {
	if s.acme != nil {
		s.acme.Stop()
	}
}

func automaticOf(l *config.Listener) *config.Automatic {
	if l.TLS == nil {
		return nil
	}
	return l.TLS.Automatic
}

// acmeFront answers a plain listener's requests before its routes (or
// its https redirect) do: an HTTP-01 validation with the key
// authorization, and a request for a managed name with a redirect to
// https (redirect_http), the challenge path excepted.
type acmeFront struct {
	m         *acme.Manager
	http01    bool                           // some site answers HTTP-01
	set       *atomic.Pointer[wire.Settings] // the router of the current settings
	next      handlers.Handler               // the listener's https redirect; nil: the router
	redirects map[int]*httpsRedirect         // per https port of the managed names
}

func (s *Server) newACMEFront(next handlers.Handler) *acmeFront {
	f := &acmeFront{m: s.acme, http01: s.acme.AnswersHTTP01(), set: &s.sh.Set, next: next, redirects: map[int]*httpsRedirect{}}
	for _, site := range s.sites {
		if site == nil {
			continue
		}
		for i := range s.listeners {
			if s.listeners[i].site == site {
				p := int(s.listeners[i].addr.Port())
				h := &httpsRedirect{}
				if p != 443 {
					h.port = []byte(":" + strconv.Itoa(p))
				}
				f.redirects[p] = h
			}
		}
	}
	return f
}

var (
	ctKeyAuth = []byte("text/plain")
	body503   = []byte("Service Unavailable\n")
)

// Serve implements handlers.Handler.
func (f *acmeFront) Serve(ctx *handlers.Ctx) {
	req := ctx.Req
	if f.http01 && acme.LooksLikeHTTP01(req.Method, req.Path) && req.Query == nil && f.answer(ctx) {
		return
	}
	if port, ok := f.m.RedirectPort(hostOnly(req.Host)); ok {
		if h := f.redirects[port]; h != nil {
			h.Serve(ctx)
			return
		}
	}
	f.pass(ctx)
}

// pass serves the request as the listener would without automatic
// certificates.
func (f *acmeFront) pass(ctx *handlers.Ctx) {
	if f.next != nil {
		f.next.Serve(ctx)
		return
	}
	f.set.Load().Router.Serve(ctx)
}

// answer answers an HTTP-01 request for a challenge this process
// started from memory, on the loop; otherwise it looks the answer up off
// the loop (another instance sharing the storage may have started the
// challenge, for a name this one does not even manage: then it is in
// storage) and waits for it, within the lookups' shares. It reports
// false when the request is left to the routes.
func (f *acmeFront) answer(ctx *handlers.Ctx) bool {
	host, path := string(hostOnly(ctx.Req.Host)), string(ctx.Req.Path)
	if ka, ok := f.m.ChallengeInMemory(host, path); ok {
		writeKeyAuth(ctx, ka)
		return true
	}
	if host == "" || ctx.Cache == nil {
		return false
	}
	client := addrKey(ctx.Remote.Addr())
	if !f.m.TryLookup(client) {
		ctx.Error(503)
		ctx.Resp.Body = body503
		return true
	}
	w := &challengeWait{f: f, key: "acme http-01 " + path}
	done := ctx.Cache.CacheDone([]byte(w.key))
	go func() {
		c, cancel := context.WithTimeout(context.Background(), http01Timeout)
		if ka, ok := f.m.AnswerHTTP01(c, host, path); ok {
			w.answer.Store(&ka)
		}
		cancel()
		f.m.EndLookup(client)
		done(nil, nil) // wakes the exchange
	}()
	ctx.Resp.Pending = w
	return true
}

// writeKeyAuth answers an HTTP-01 validation.
func writeKeyAuth(ctx *handlers.Ctx, keyAuth string) {
	ctx.Resp.Reset()
	ctx.Resp.Status = 200
	ctx.Resp.Add(hdrContentType, ctKeyAuth)
	ctx.Resp.Body = []byte(keyAuth)
}

// challengeWait is an HTTP-01 request waiting for its answer.
type challengeWait struct {
	f      *acmeFront
	key    string
	answer atomic.Pointer[string] // set by the lookup when it found the answer
}

// Resume implements handlers.Pending.
func (w *challengeWait) Resume(ctx *handlers.Ctx) handlers.Progress {
	if _, _, ok := ctx.Cache.CacheLoaded([]byte(w.key)); !ok {
		return handlers.Waiting
	}
	if ka := w.answer.Load(); ka != nil {
		writeKeyAuth(ctx, *ka)
		return handlers.Answered
	}
	ctx.Resp.Reset()
	// Not a challenge under way: the request is an ordinary one.
	if port, ok := w.f.m.RedirectPort(hostOnly(ctx.Req.Host)); ok && w.f.redirects[port] != nil {
		w.f.redirects[port].Serve(ctx)
		return handlers.Answered
	}
	w.f.pass(ctx)
	return handlers.Answered
}

// Closed implements handlers.Pending: the lookup finishes on its own.
func (w *challengeWait) Closed() {}

// reloadAutomatic applies the reloaded tls.automatic sections of cfg
// (whose listeners are the running ones) to the running sites: a change
// of domains at once (acme.Manager.Update), any other change at the next
// restart, which the returned notes say.
func (s *Server) reloadAutomatic(cfg *config.Config) []string {
	var notes []string
	var changes []acme.Change
	for i := range cfg.Listen {
		if i >= len(s.listeners) || s.listeners[i].tls == nil {
			continue
		}
		site, a := s.listeners[i].site, automaticOf(&cfg.Listen[i])
		switch {
		case site == nil && a == nil:
		case site == nil || a == nil:
			notes = append(notes, fmt.Sprintf("listen %s: tls.automatic added or removed: restart gale to apply it", cfg.Listen[i].Address))
		default:
			changes = append(changes, acme.Change{Site: site, Auto: a})
		}
	}
	if len(changes) == 0 {
		return notes
	}
	for _, site := range s.acme.Update(changes) {
		for i := range s.listeners {
			if s.listeners[i].site == site {
				notes = append(notes, fmt.Sprintf("listen %s: tls.automatic changed beyond its domains: restart gale to apply it (the running certificates stay managed as they were)", cfg.Listen[i].Address))
			}
		}
	}
	return notes
}
