package config

import (
	"slices"
	"testing"
)

// TestRouteKindsInKeyTable: every route kind has its key in the route's
// key table, which requires exactly one of them.
func TestRouteKindsInKeyTable(t *testing.T) {
	names := routeKeys.names()
	for _, k := range routeKinds {
		if !slices.Contains(names, k.key) {
			t.Errorf("route kind %q is not a key of the route table", k.key)
		}
	}
	if !slices.Equal(routeKeys.oneOf, RouteKinds()) {
		t.Errorf("the route table requires one of %v, the kinds are %v", routeKeys.oneOf, RouteKinds())
	}
}
