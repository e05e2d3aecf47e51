package config

import "go.yaml.in/yaml/v3"

// routeKind is one kind of route handler as the config file gives it: its
// key in a route, and how its value is decoded into the Route. A route
// has exactly one of these keys; the handler is built from the decoded
// Route by the handlers package, whose own table has an entry per key.
// The key's spec stays in routeKeys (keys.go), whose order is the order
// of the route's keys in messages and the schema
// (TestRouteKindsInKeyTable checks that every kind has its key there).
type routeKind struct {
	key string
	// decode decodes n, the value of key at path, into r; s is the
	// route's section, for checks across its keys.
	decode func(d *decoder, n *yaml.Node, path string, s *section, r *Route)
}

// routeKinds are the route kinds, in the order messages list them.
var routeKinds = []routeKind{
	{"static", func(d *decoder, n *yaml.Node, path string, _ *section, r *Route) {
		r.Static = d.static(n, path, &r.Match)
	}},
	{"proxy", decodeProxyKind},
	{"fastcgi", func(d *decoder, n *yaml.Node, path string, _ *section, r *Route) {
		r.FastCGI = d.fastcgi(n, path, false)
	}},
	{"php", func(d *decoder, n *yaml.Node, path string, _ *section, r *Route) {
		if r.FastCGI = d.fastcgi(n, path, true); r.FastCGI != nil {
			r.Static = phpStatic(r.FastCGI.Root)
		}
	}},
	{"respond", func(d *decoder, n *yaml.Node, path string, _ *section, r *Route) {
		r.Respond = d.respond(n, path)
	}},
	{"redirect", func(d *decoder, n *yaml.Node, path string, _ *section, r *Route) {
		r.Redirect = d.redirect(n, path, &r.Match)
	}},
	{"health", func(d *decoder, n *yaml.Node, path string, _ *section, r *Route) {
		if h, ok := d.enum(n, path, healthKinds...); ok {
			r.Health = h
		}
	}},
}

// handlerKinds are the keys of routeKinds, in their order.
var handlerKinds = RouteKinds()

// RouteKinds returns the keys that give a route its handler, in the order
// messages list them.
func RouteKinds() []string {
	keys := make([]string, len(routeKinds))
	for i, k := range routeKinds {
		keys[i] = k.key
	}
	return keys
}

// decodeProxyKind decodes a proxy route. A proxy route that also has a
// rewrite must leave the upstream path to that rewrite alone.
func decodeProxyKind(d *decoder, n *yaml.Node, path string, s *section, r *Route) {
	r.Proxy = d.proxy(n, path)
	if r.Proxy != nil && r.Rewrite != nil && (r.Proxy.StripPrefix || r.Proxy.Rewrite != "") {
		d.errorf(s.key("rewrite"), join(s.path, "rewrite"), "the route's rewrite sets the whole path sent upstream; remove proxy.strip_prefix and proxy.rewrite")
	}
}
