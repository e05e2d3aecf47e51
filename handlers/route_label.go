package handlers

import "strconv"

// Index is the route's position in the config file's routes (0 first):
// the metrics count requests per route by it.
func (rt *Route) Index() int { return rt.order }

// Label is the route's label in metrics: its configured name, or its
// index in the file ("0", "1", ...) when it has none. Names are never
// all digits, so the two cannot collide.
func (rt *Route) Label() string {
	if rt.Conf.Name != "" {
		return rt.Conf.Name
	}
	return strconv.Itoa(rt.order)
}

// RouteLabel is the metrics label of the route at index i of the file,
// or i itself in decimal when the router has no such route (a route
// counted before a reload removed it).
func (r *Router) RouteLabel(i int) string {
	if r == nil {
		return strconv.Itoa(i)
	}
	if i >= 0 && i < len(r.routes) && r.routes[i].order == i {
		return r.routes[i].Label()
	}
	for _, rt := range r.routes {
		if rt.order == i {
			return rt.Label()
		}
	}
	return strconv.Itoa(i)
}
