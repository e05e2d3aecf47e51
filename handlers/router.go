package handlers

import "gale/config"

// Route is a compiled route: where it matches and what serves it.
type Route struct {
	Conf    *config.Route // the route as configured
	Handler Handler       // serves matched requests
	// compiled header rules live here too (unexported)
}

// Router maps a request's host and path to a route. It is immutable after
// NewRouter and safe for concurrent use; lookups do not allocate.
type Router struct {
	// unexported
}

// Build compiles cfg's routes into a Router. Errors name the route's file
// position.
func Build(cfg *config.Config) (*Router, error) { panic("unimplemented") }

// Serve routes c.Req and runs the handler (or answers 404), then applies
// the route's response header rules to c.Resp.
func (rt *Router) Serve(c *Ctx) { panic("unimplemented") }
