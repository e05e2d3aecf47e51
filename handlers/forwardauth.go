package handlers

import (
	"errors"
	"fmt"
	"io"

	"gale/codec"
)

// Forward authentication (forward_auth): before a route serves an
// exchange, its authentication service is asked about it with a GET
// subrequest (nginx's auth_request, Caddy's forward_auth, Traefik's
// ForwardAuth). The subrequest goes through the upstream core, which
// lives outside this package: Build is given a factory (WithForwardAuth)
// that makes each route's AuthGate, and the exchange waits for the
// verdict as it waits for a file load (Pending), its request body held
// by the engine meanwhile. A 2xx verdict lets the exchange through to
// the route's rewrite and handler with the answer's copy_headers fields
// added to the request; any other answer is the response, as it came
// (a 401, a 302 to a login page with its Set-Cookie); no answer is 502
// (504 past the timeout). The fields copy_headers names are removed
// from the client's request before anything else, so that a client
// never sends them itself. Verdicts are not remembered.

// ErrNoForwardAuth is returned by Build for a route with forward_auth
// when no factory was given (WithForwardAuth).
var ErrNoForwardAuth = errors.New("handlers: forward_auth route, but no forward_auth factory was given to Build (WithForwardAuth)")

// AuthGate asks a route's authentication service about exchanges. It is
// shared by all loops and safe for concurrent use. When it implements
// io.Closer, the Router's Close closes it.
type AuthGate interface {
	// Ask starts asking about c, on c's loop, and returns the call,
	// which wakes c's exchange (Exchange.Wake) once it holds the
	// verdict. It copies what it needs of c's request before it
	// returns. It returns nil when the exchange offers no way to ask
	// (no loop state for upstreams).
	Ask(c *Ctx) AuthCall
}

// AuthCall is one question to an authentication service. Its methods
// run on the loop of the exchange that asked.
type AuthCall interface {
	// Verdict returns the verdict once there is one (false: not yet).
	// Its fields and body stay valid until Release.
	Verdict() (*AuthVerdict, bool)
	// Release ends the call: the exchange took the verdict, or it ended
	// without one (the call is abandoned then). The call must not be
	// used afterwards.
	Release()
}

// AuthVerdict is what an authentication service answered.
type AuthVerdict struct {
	Status int            // the answer's status; 0 when there was none (Fail says why)
	Fail   int            // 502 (no answer, a bad one) or 504 (none within the timeout) when Status is 0
	Fields []codec.Header // the answer's end-to-end fields (hop-by-hop and framing ones removed)
	Body   []byte         // the answer's body (for answers that are not 2xx)
}

// AuthFactory builds a route's AuthGate (rt.Conf.ForwardAuth is set).
type AuthFactory func(rt *Route) (AuthGate, error)

// WithForwardAuth gives Build the factory of forward_auth gates.
// Without it a config with forward_auth fails to build with
// ErrNoForwardAuth.
func WithForwardAuth(f AuthFactory) Option {
	return func(o *buildOptions) { o.fauth = f }
}

// forwardAuth is a route's compiled forward_auth.
type forwardAuth struct {
	gate AuthGate
	copy [][]byte // copy_headers, canonical: removed from requests, copied from 2xx answers
}

// buildForwardAuth compiles rc's forward_auth into r.
func (rt *Router) buildForwardAuth(r *Route) error {
	fc := r.Conf.ForwardAuth
	if fc == nil {
		return nil
	}
	if rt.opts.fauth == nil {
		return ErrNoForwardAuth
	}
	g, err := rt.opts.fauth(r)
	if err != nil {
		return fmt.Errorf("forward_auth: %w", err)
	}
	fa := &forwardAuth{gate: g}
	for _, name := range fc.CopyHeaders {
		fa.copy = append(fa.copy, []byte(name))
	}
	if c, ok := g.(io.Closer); ok {
		rt.closer = append(rt.closer, c.Close)
	}
	r.fauth = fa
	return nil
}

// AuthGate returns the route's forward_auth gate, or nil.
func (r *Route) AuthGate() AuthGate {
	if r.fauth == nil {
		return nil
	}
	return r.fauth.gate
}

// ask removes the copy_headers fields from c's request and starts asking
// about it: c.Resp.Pending waits for the verdict (500 when the exchange
// cannot ask).
func (fa *forwardAuth) ask(r *Route, c *Ctx) {
	fa.strip(c.Req)
	call := fa.gate.Ask(c)
	if call == nil {
		c.Error(500)
		r.ApplyResponseHeaders(&c.Resp)
		return
	}
	c.fauth = fauthWait{fa: fa, r: r, call: call}
	c.Resp.Pending = &c.fauth
}

// strip removes every field copy_headers names from req, whatever its
// case: a client cannot send what the authentication service vouches for.
func (fa *forwardAuth) strip(req *codec.Request) {
	for _, name := range fa.copy {
		req.Headers = delHeader(req.Headers, name)
	}
}

// fauthWait is an exchange's continuation while its authentication
// service is asked.
type fauthWait struct {
	fa   *forwardAuth
	r    *Route
	call AuthCall
}

// Resume implements Pending: once the verdict is in, the exchange goes
// on to the route's rewrite and handler, or is answered with what the
// service said (or 502/504).
func (w *fauthWait) Resume(c *Ctx) Progress {
	v, ok := w.call.Verdict()
	if !ok {
		return Waiting
	}
	c.Resp.Reset()
	switch {
	case v.Status == 0:
		c.Error(v.Fail)
		w.r.ApplyResponseHeaders(&c.Resp)
	case v.Status >= 200 && v.Status < 300:
		w.pass(c, v)
		r := w.r
		w.release()
		r.serveAuthorized(c)
		return Answered
	default:
		w.deny(c, v)
		w.r.ApplyResponseHeaders(&c.Resp)
	}
	w.release()
	return Answered
}

// release releases the call and lets go of the route.
func (w *fauthWait) release() {
	call := w.call
	*w = fauthWait{}
	call.Release()
}

// pass copies the copy_headers fields of the verdict onto the request,
// their values into c.Scratch (the call's memory goes with Release).
func (w *fauthWait) pass(c *Ctx, v *AuthVerdict) {
	for _, name := range w.fa.copy {
		for _, f := range v.Fields {
			if !codec.EqualFoldBytes(f.Name, name) {
				continue
			}
			mark := len(c.Scratch)
			c.Scratch = append(c.Scratch, f.Value...)
			c.Req.Headers = append(c.Req.Headers, codec.Header{Name: name, Value: c.scratchSince(mark)})
		}
	}
}

// deny makes the verdict the response: its status, fields and body,
// copied into c.Scratch.
func (w *fauthWait) deny(c *Ctx, v *AuthVerdict) {
	c.Resp.Status = v.Status
	for _, f := range v.Fields {
		mark := len(c.Scratch)
		c.Scratch = append(c.Scratch, f.Name...)
		name := c.scratchSince(mark)
		mark = len(c.Scratch)
		c.Scratch = append(c.Scratch, f.Value...)
		c.Resp.Add(name, c.scratchSince(mark))
	}
	if len(v.Body) > 0 {
		mark := len(c.Scratch)
		c.Scratch = append(c.Scratch, v.Body...)
		c.Resp.Body = c.scratchSince(mark)
	}
}

// Closed implements Pending: the exchange ended while it waited.
func (w *fauthWait) Closed() { w.release() }
