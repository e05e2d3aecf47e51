package app

// The front of the plain listeners while automatic certificates are
// managed: the HTTP-01 challenge answered before routing, and the
// redirect of the listed names to https.

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"gale/acme"
	"gale/app/wire"
	"gale/codec"
	"gale/handlers"
)

// http01Timeout bounds the lookup of one HTTP-01 answer off the loop.
const http01Timeout = 5 * time.Second

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
	f.route(ctx)
}

// route serves a request that is no challenge: a redirect to https for a
// listed name, else what the listener serves without automatic
// certificates.
func (f *acmeFront) route(ctx *handlers.Ctx) {
	if port, ok := f.m.RedirectPort(hostOnly(ctx.Req.Host)); ok {
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
	client := wire.AddrKey(ctx.Remote.Addr())
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
	ctx.Resp.Add(codec.NameContentType, ctKeyAuth)
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
	w.f.route(ctx) // not a challenge under way: an ordinary request
	return handlers.Answered
}

// Closed implements handlers.Pending: the lookup finishes on its own.
func (w *challengeWait) Closed() {}
