package handlers

import (
	"slices"
	"testing"

	"gale/config"
)

// TestRouteKindsMatchConfig: every kind the config file decodes has one
// entry in the table routes are built from, and no entry is without one.
func TestRouteKindsMatchConfig(t *testing.T) {
	var keys []string
	for _, k := range routeKinds {
		keys = append(keys, k.key)
	}
	want := config.RouteKinds()
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("handlers' route kinds %v, config's %v", keys, want)
	}
}

// TestRouteKindOf: a route is of exactly one kind; the php preset (static
// and fastcgi together) is one kind, not two.
func TestRouteKindOf(t *testing.T) {
	fcgi := &config.FastCGI{}
	cases := []struct {
		rc   config.Route
		want string
		err  error
	}{
		{config.Route{}, "", ErrNoHandler},
		{config.Route{Static: &config.Static{}}, "static", nil},
		{config.Route{Static: &config.Static{}, FastCGI: fcgi}, "php", nil},
		{config.Route{FastCGI: fcgi}, "fastcgi", nil},
		{config.Route{Proxy: &config.Proxy{}}, "proxy", nil},
		{config.Route{Respond: &config.Respond{}}, "respond", nil},
		{config.Route{Redirect: &config.Redirect{}}, "redirect", nil},
		{config.Route{Health: "live"}, "health", nil},
		{config.Route{Static: &config.Static{}, Respond: &config.Respond{}}, "", ErrManyHandlers},
		{config.Route{Static: &config.Static{}, FastCGI: fcgi, Proxy: &config.Proxy{}}, "", ErrManyHandlers},
		{config.Route{Respond: &config.Respond{}, Health: "ready"}, "", ErrManyHandlers},
	}
	for i, c := range cases {
		k, err := kindOf(&c.rc)
		if err != c.err || err == nil && k.key != c.want {
			got := ""
			if k != nil {
				got = k.key
			}
			t.Errorf("case %d: %q %v, want %q %v", i, got, err, c.want, c.err)
		}
	}
}
