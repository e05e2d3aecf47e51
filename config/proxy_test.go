package config

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseUpstream(t *testing.T) {
	cases := []struct {
		raw                    string
		network, address, host string
		err                    string // substring of the message; "" = valid
	}{
		{"127.0.0.1:9000", "tcp", "127.0.0.1:9000", "127.0.0.1:9000", ""},
		{"App.Internal:80", "tcp", "app.internal:80", "app.internal:80", ""},
		{"[::1]:8080", "tcp", "[::1]:8080", "[::1]:8080", ""},
		{"http://app:8080", "tcp", "app:8080", "app:8080", ""},
		{"http://app", "tcp", "app:80", "app", ""},
		{"http://app/", "tcp", "app:80", "app", ""},
		{"http://[::1]", "tcp", "[::1]:80", "[::1]", ""},
		{"unix:/run/app.sock", "unix", "/run/app.sock", "localhost", ""},
		{"unix:app.sock", "unix", "/etc/gale/app.sock", "localhost", ""},
		{"unix:/run/../run/app.sock", "unix", "/run/app.sock", "localhost", ""},
		{"127.0.0.1", "", "", "", "missing port"},
		{"app:0", "", "", "", "from 1 to 65535"},
		{"app:+80", "", "", "", "from 1 to 65535"},
		{"::1:80", "", "", "", "brackets"},
		{"[fe80::1%eth0]:80", "", "", "", "zones"},
		{"https://app", "tcp", "app:443", "app", ""},
		{"https://app:8443", "tcp", "app:8443", "app:8443", ""},
		{"ws://app", "", "", "", "scheme must be http or https"},
		{"http://a@app", "", "", "", "user info"},
		{"http://app/x", "", "", "", "no path"},
		{"http://app?x", "", "", "", "no path"},
		{"http://", "", "", "", "missing host"},
		{"unix:", "", "", "", "empty socket path"},
		{" app:80", "", "", "", "got"},
		{"-app-:80", "", "", "", "'-'"},
	}
	for _, c := range cases {
		u, msg := parseUpstream(c.raw, "/etc/gale")
		if c.err != "" {
			if msg == "" || !strings.Contains(msg, c.err) {
				t.Errorf("parseUpstream(%q) = %+v %q, want an error with %q", c.raw, u, msg, c.err)
			}
			continue
		}
		if msg != "" || u.Network != c.network || u.Address != c.address || u.Host != c.host || u.Raw != c.raw {
			t.Errorf("parseUpstream(%q) = %+v %q, want %s %s host %s", c.raw, u, msg, c.network, c.address, c.host)
		}
	}
}

func TestParsePrefix(t *testing.T) {
	cases := []struct{ in, want string }{
		{"127.0.0.1", "127.0.0.1/32"},
		{"10.1.2.3/8", "10.0.0.0/8"},
		{"::1", "::1/128"},
		{"::ffff:10.0.0.1", "10.0.0.1/32"},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8"},
		{"2001:db8::/32", "2001:db8::/32"},
		{"10.0.0.0/33", ""},
		{"fe80::1%eth0", ""},
		{"example.com", ""},
		{"", ""},
	}
	for _, c := range cases {
		p, msg := parsePrefix(c.in)
		if c.want == "" {
			if msg == "" {
				t.Errorf("parsePrefix(%q) = %v, want an error", c.in, p)
			}
			continue
		}
		if msg != "" || p != netip.MustParsePrefix(c.want) {
			t.Errorf("parsePrefix(%q) = %v %q, want %s", c.in, p, msg, c.want)
		}
	}
}

func TestProxyDefaultsFinite(t *testing.T) {
	p := defaultProxy()
	h := p.HealthCheck
	for name, v := range map[string]int64{
		"timeouts.connect": int64(p.Timeouts.Connect), "timeouts.response_header": int64(p.Timeouts.ResponseHeader),
		"timeouts.idle": int64(p.Timeouts.Idle), "health_check.interval": int64(h.Interval),
		"health_check.timeout": int64(h.Timeout), "health_check.passive.window": int64(h.Passive.Window),
		"health_check.passive.cooldown": int64(h.Passive.Cooldown), "max_idle_per_upstream": int64(p.MaxIdlePerUpstream),
		"health_check.fails": int64(h.Fails), "health_check.passes": int64(h.Passes),
	} {
		if v <= 0 || v > 1<<40 {
			t.Errorf("default %s = %d, want positive and finite", name, v)
		}
	}
}

func TestForProxy(t *testing.T) {
	c, err := ForProxy("127.0.0.1:0", []string{"127.0.0.1:9000", "unix:/run/a.sock"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Routes) != 1 || c.Routes[0].Path != "/" || c.Routes[0].Proxy == nil || len(c.Routes[0].Proxy.To) != 2 {
		t.Fatalf("routes %+v", c.Routes)
	}
	if got := c.Summary(); got[1] != "route   */  proxy 127.0.0.1:9000 unix:/run/a.sock (round-robin)" {
		t.Errorf("summary %q", got)
	}
	_, err = ForProxy("nowhere", []string{"x", "127.0.0.1:1", "127.0.0.1:1"})
	list, _ := err.(ErrorList)
	if len(list) != 3 || list[0].Key != "listen" || list[1].Key != "to" || !strings.Contains(list[2].Msg, "twice") {
		t.Errorf("errors %v", err)
	}
	if _, err := ForProxy(":0", nil); err == nil {
		t.Error("no upstream accepted")
	}
	c, err = ForProxy("127.0.0.1:0", []string{"https://app.internal"})
	if err != nil {
		t.Fatal(err)
	}
	if px := c.Routes[0].Proxy; !px.To[0].TLS || px.To[0].Address != "app.internal:443" || px.TLS == nil || px.TLS.ID != DefaultUpstreamTLS().ID {
		t.Errorf("https upstream: %+v tls %+v", px.To, px.TLS)
	}
}

// TestShippedProxyExample keeps examples/proxy.yaml valid.
func TestShippedProxyExample(t *testing.T) {
	c, err := Load(filepath.Join("..", "examples", "proxy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Routes[0].Proxy
	if p == nil || len(p.To) != 1 || !p.StripPrefix || p.HealthCheck.Path != "/hello" {
		t.Errorf("proxy route %+v", c.Routes[0])
	}
}

func TestParseDiscoveredUpstream(t *testing.T) {
	cases := []struct {
		raw, discover, name, port, host string
		err                             string
	}{
		{"dns+a://App.Internal:8080", "a", "app.internal.", "8080", "app.internal:8080", ""},
		{"dns+a://app.internal.:80", "a", "app.internal.", "80", "app.internal:80", ""},
		{"dns+srv://_http._tcp.App.Internal", "srv", "_http._tcp.app.internal.", "", "app.internal", ""},
		{"dns+a://app.internal", "", "", "", "", "name and a port"},
		{"dns+a://127.0.0.1:80", "", "", "", "", "needs no lookup"},
		{"dns+a://app:0", "", "", "", "", "from 1 to 65535"},
		{"dns+a://app:80/x", "", "", "", "", "name and a port"},
		{"dns+srv://app.internal", "", "", "", "", "service name"},
		{"dns+srv://_http._tcp.app:80", "", "", "", "", "service name"},
	}
	for _, c := range cases {
		u, msg := parseUpstream(c.raw, "/etc/gale")
		if c.err != "" {
			if msg == "" || !strings.Contains(msg, c.err) {
				t.Errorf("parseUpstream(%q) = %+v %q, want an error with %q", c.raw, u, msg, c.err)
			}
			continue
		}
		if msg != "" || u.Discover != c.discover || u.Name != c.name || u.Port != c.port || u.Host != c.host || u.Address != "" {
			t.Errorf("parseUpstream(%q) = %+v %q", c.raw, u, msg)
		}
	}
}

func TestProxyHashAndResolveKeys(t *testing.T) {
	route := func(proxy string) string {
		return "listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /\n    proxy: " + proxy + "\n"
	}
	c, err := Parse([]byte(route(`{to: ["dns+a://app.internal:80", "127.0.0.1:9000"], load_balancing: header-hash, hash_header: x-user, resolve: {min_ttl: 2s, max_ttl: 10s, resolver: "127.0.0.1:5353"}}`)), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := c.Routes[0].Proxy
	if p.HashHeader != "X-User" || p.Resolve.MinTTL.String() != "2s" || p.Resolve.MaxTTL.String() != "10s" || p.Resolve.Resolver != "127.0.0.1:5353" || p.To[0].Discover != "a" {
		t.Errorf("decoded %+v", p)
	}
	for _, c := range []struct{ proxy, want string }{
		{`{to: "127.0.0.1:9000", load_balancing: header-hash}`, `c.yaml:4:51: routes[0].proxy.load_balancing: header-hash needs hash_header`},
		{`{to: "127.0.0.1:9000", load_balancing: cookie-hash}`, `c.yaml:4:51: routes[0].proxy.load_balancing: cookie-hash needs hash_cookie`},
		{`{to: "127.0.0.1:9000", hash_cookie: sid}`, `c.yaml:4:48: routes[0].proxy.hash_cookie: hash_cookie is used only with load_balancing: cookie-hash`},
		{`{to: "127.0.0.1:9000", load_balancing: cookie-hash, hash_cookie: "a b"}`, `routes[0].proxy.hash_cookie: expected a cookie name`},
		{`{to: "127.0.0.1:9000", resolve: {resolver: "localhost:53"}}`, `c.yaml:4:55: routes[0].proxy.resolve.resolver: expected a DNS server`},
		{`{to: "127.0.0.1:9000", resolve: {min_ttl: 5s, max_ttl: 1s}}`, `routes[0].proxy.resolve.max_ttl: max_ttl (1s) is below min_ttl (5s)`},
		{`{to: ["dns+a://app:80", "dns+a://APP:80"]}`, `routes[0].proxy.to[1]: upstream "dns+a://APP:80" is listed twice`},
	} {
		_, err := Parse([]byte(route(c.proxy)), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.proxy, err, c.want)
		}
	}
}

func TestFastCGIRefusesDiscovery(t *testing.T) {
	_, err := Parse([]byte("listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /\n    fastcgi: {to: \"dns+a://php:9000\", root: /tmp}\n"), "c.yaml")
	if err == nil || !strings.Contains(err.Error(), "routes[0].fastcgi.to: expected a FastCGI server") {
		t.Errorf("got %v", err)
	}
}
