package handlers

import (
	"io"

	"gale/config"
)

// routeKind is one kind of route handler: the config key that selects
// it, how a route says it is of this kind, and how its handler is built.
// A route is of exactly one kind. A kind registers itself from the file
// of its handler (respond.go, redirect.go, health.go); the kinds whose
// handler comes from outside this package (proxy, fastcgi) or that share
// the static handler (static, php) are registered here.
type routeKind struct {
	key     string                           // the route's key in the config file
	present func(rc *config.Route) bool      // whether rc is of this kind
	build   func(rt *Router, r *Route) error // sets r.Handler, from r.Conf
}

// routeKinds are the registered kinds, in registration order.
var routeKinds []routeKind

// registerRouteKind adds k to the kinds routes are built from.
func registerRouteKind(k routeKind) bool {
	routeKinds = append(routeKinds, k)
	return true
}

// kindOf returns the kind of rc: ErrNoHandler when it has none,
// ErrManyHandlers when it has more than one.
func kindOf(rc *config.Route) (*routeKind, error) {
	var found *routeKind
	for i := range routeKinds {
		if !routeKinds[i].present(rc) {
			continue
		}
		if found != nil {
			return nil, ErrManyHandlers
		}
		found = &routeKinds[i]
	}
	if found == nil {
		return nil, ErrNoHandler
	}
	return found, nil
}

var (
	_ = registerRouteKind(routeKind{
		key:     "static",
		present: func(rc *config.Route) bool { return rc.Static != nil && rc.FastCGI == nil },
		build:   buildStatic,
	})
	_ = registerRouteKind(routeKind{
		key:     "php", // the php preset: a static handler whose scripts FastCGI runs
		present: func(rc *config.Route) bool { return rc.Static != nil && rc.FastCGI != nil },
		build:   (*Router).buildFastCGI,
	})
	_ = registerRouteKind(routeKind{
		key:     "fastcgi",
		present: func(rc *config.Route) bool { return rc.FastCGI != nil && rc.Static == nil },
		build:   (*Router).buildFastCGI,
	})
	_ = registerRouteKind(routeKind{
		key:     "proxy",
		present: func(rc *config.Route) bool { return rc.Proxy != nil },
		build:   buildProxy,
	})
)

// buildStatic makes the handler of a static route.
func buildStatic(rt *Router, r *Route) error {
	s, err := newStatic(r.Conf.Static, r, rt.staticEnv())
	if err != nil {
		return err
	}
	rt.closer = append(rt.closer, s.close)
	r.Handler = s
	return nil
}

// buildProxy makes the handler of a proxy route with the factory given
// to Build (WithProxy).
func buildProxy(rt *Router, r *Route) error {
	if rt.opts.proxy == nil {
		return ErrNoProxy
	}
	r.forwards = true
	h, err := rt.opts.proxy(r)
	if err != nil {
		return err
	}
	r.Handler = withCache(h, r)
	if c, ok := h.(io.Closer); ok {
		rt.closer = append(rt.closer, c.Close)
	}
	return nil
}
