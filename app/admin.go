package app

import (
	"os"
	"strings"
	"time"

	"gale/config"
	"gale/gateway"
	"gale/handlers"
	"gale/httpcache"
	"gale/proxy"
)

// What the admin API reads of a running server (package admin serves it).

// Config returns the config the server runs now. Safe for concurrent use;
// the Config must not be modified.
func (s *Server) Config() *config.Config { return s.sh.Set.Load().Cfg }

// UpstreamStatus is one upstream of a proxy route of the running config:
// whether it is in service, its counters since the route was built (a
// reload starts them anew) and its connections.
type UpstreamStatus struct {
	Route    string            `json:"route"`          // the route's label (name, or index in the file)
	Kind     string            `json:"kind"`           // "proxy", or "fastcgi" (a fastcgi or php route's server: passive health only, no per-server counters)
	Address  string            `json:"address"`        // as configured, or as discovered
	From     string            `json:"from,omitempty"` // the dns+a:// or dns+srv:// entry that found the address
	Healthy  bool              `json:"healthy"`        // in service: no failed active check, no passive cooldown
	Attempts uint64            `json:"attempts"`       // requests sent (or dialed for), retries included
	Retries  uint64            `json:"retries"`        // attempts followed by another
	Failures map[string]uint64 `json:"failures"`       // failed attempts by kind: connect, timeout, reset, bad_response
	Open     int64             `json:"open"`           // connections to the address open or dialing, every loop and route
	Idle     int64             `json:"idle"`           // of them, idle in the keep-alive pools
	Busy     int64             `json:"busy"`           // open minus idle: carrying an exchange (or dialing)
}

// Upstreams returns every upstream of the running config's proxy routes
// and every server of its FastCGI routes, in route order. Safe for
// concurrent use.
func (s *Server) Upstreams() []UpstreamStatus {
	var out []UpstreamStatus
	now := time.Now().UnixNano()
	for _, rt := range s.sh.Set.Load().Router.Routes() {
		switch h := scriptsOf(rt.Handler).(type) {
		case *proxy.Handler:
			for _, u := range h.Upstreams() {
				out = append(out, proxyStatus(rt.Label(), u, now))
			}
		case *gateway.Handler:
			for _, v := range h.Servers(now) {
				out = append(out, UpstreamStatus{Route: rt.Label(), Kind: "fastcgi", Address: v.Address, Healthy: v.Healthy,
					Failures: map[string]uint64{}, Open: v.Open, Idle: v.Idle, Busy: max(v.Open-v.Idle, 0)})
			}
		}
	}
	return out
}

// proxyStatus is the status of upstream u of the proxy route labelled
// route.
func proxyStatus(route string, u *proxy.Upstream, now int64) UpstreamStatus {
	var snap proxy.UpstreamSnapshot
	u.Stats(&snap)
	st := UpstreamStatus{Route: route, Kind: "proxy", Address: u.String(), From: u.From(), Healthy: u.Healthy(now), Attempts: snap.Attempts, Retries: snap.Retries,
		Failures: map[string]uint64{}, Open: snap.Open, Idle: snap.Idle, Busy: max(snap.Open-snap.Idle, 0)}
	for k, n := range snap.Failures {
		st.Failures[proxy.FailKindNames[k]] = n
	}
	return st
}

// scriptsOf returns the handler that talks to upstreams behind h: a php
// route's FastCGI handler, else h.
func scriptsOf(h handlers.Handler) handlers.Handler {
	if sh, ok := h.(interface{ Scripts() handlers.ScriptHandler }); ok && sh.Scripts() != nil {
		return sh.Scripts()
	}
	return h
}

// PurgeCache drops cached files from the static file cache: every one
// when path is "", else the one of that URL path under every static
// route, or every one under it when path ends in "/". Responses in
// flight keep what they hold. It returns how many entries were dropped.
// Safe for concurrent use.
func (s *Server) PurgeCache(path string) int {
	n := s.purgeLocal(path)
	if s.cluster != nil {
		if err := s.cluster.PublishPurge(path); err != nil {
			s.log.Warn("purge applied on this instance only: the cluster store did not take it", "path", path, "error", err.Error())
		}
	}
	return n
}

// purgeLocal is PurgeCache on this instance alone: a purge another
// instance published.
func (s *Server) purgeLocal(path string) int {
	n := s.purgeRouteCaches(path)
	if path == "" {
		return n + s.files.PurgeIf(func(string) bool { return true })
	}
	return n + s.files.PurgeIf(func(key string) bool {
		_, p, ok := cutKeyPrefix(key)
		if !ok {
			return false
		}
		if path[len(path)-1] == '/' {
			return len(p) >= len(path) && p[:len(path)] == path || p+"/" == path
		}
		return p == path
	})
}

// purgeRouteCaches drops responses from the route caches (proxy,
// fastcgi and php routes' cache): every one when path is "", else those
// stored for that request path (any host, any query), or for any path
// under it when path ends in "/".
func (s *Server) purgeRouteCaches(path string) int {
	router := s.sh.Set.Load().Router
	if router == nil {
		return 0
	}
	n := 0
	for _, rt := range router.Routes() {
		st := rt.CacheStore()
		if st == nil {
			continue
		}
		n += st.PurgeIf(func(key string) bool {
			p := httpcache.KeyPath(key)
			switch {
			case path == "":
				return true
			case path[len(path)-1] == '/':
				return strings.HasPrefix(p, path) || p+"/" == path
			}
			return p == path
		})
	}
	return n
}

// cutKeyPrefix splits a static route's cache key ("GEN.N:/path", see
// handlers.keyPrefixFor) into its route prefix and URL path.
func cutKeyPrefix(key string) (prefix, path string, ok bool) {
	for i := 0; i < len(key); i++ {
		if key[i] == ':' {
			return key[:i+1], key[i+1:], len(key) > i+1 && key[i+1] == '/'
		}
	}
	return "", "", false
}

// Status is a running server's summary for the admin API's GET /status.
type Status struct {
	PID         int       `json:"pid"`
	Started     time.Time `json:"started"`
	Uptime      string    `json:"uptime"`
	ConfigFile  string    `json:"config_file"`         // "" when started without one
	Listen      []string  `json:"listen"`              // the addresses bound
	Routes      int       `json:"routes"`              // in the running config
	Connections int64     `json:"connections"`         // client connections open now
	Requests    uint64    `json:"requests"`            // requests answered since start
	Reloads     uint64    `json:"reloads"`             // reloads applied
	ReloadFails uint64    `json:"reload_failures"`     // reloads refused (the running config kept)
	Draining    bool      `json:"draining,omitempty"`  // a graceful stop began
	CacheFiles  int       `json:"cache_entries"`       // entries in the static file cache
	CacheBytes  int64     `json:"cache_bytes"`         // bytes the static file cache holds
	Upstreams   int       `json:"upstreams"`           // upstreams of the proxy routes
	Unhealthy   int       `json:"upstreams_unhealthy"` // of them, out of service
	Version     string    `json:"version,omitempty"`   // filled by the caller that knows it
}

// Status returns the server's summary (Version left for the caller).
// Safe for concurrent use.
func (s *Server) Status() Status {
	cfg := s.Config()
	st := s.Stats()
	cs := s.files.Stats()
	out := Status{
		PID:         os.Getpid(),
		Started:     s.ops.started,
		Uptime:      time.Since(s.ops.started).Round(time.Second).String(),
		ConfigFile:  cfg.File,
		Listen:      s.Addrs(),
		Routes:      len(cfg.Routes),
		Connections: st.Open,
		Requests:    st.Requests,
		Reloads:     s.ops.reloadsOK.Load(),
		ReloadFails: s.ops.reloadsFailed.Load(),
		Draining:    s.stopping.Load(),
		CacheFiles:  cs.Entries,
		CacheBytes:  cs.Bytes,
	}
	for _, u := range s.Upstreams() {
		out.Upstreams++
		if !u.Healthy {
			out.Unhealthy++
		}
	}
	return out
}

// adminNotes reports admin and pid_file settings a reload cannot change
// (the admin token can: it is read from the running config).
func adminNotes(old, cfg *config.Config) []string {
	if old.Admin.Listen != cfg.Admin.Listen || old.PIDFile != cfg.PIDFile {
		return []string{"admin.listen or pid_file changed: restart gale to apply them"}
	}
	return nil
}
