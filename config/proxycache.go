package config

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// ProxyCache is a route's cache section: a shared HTTP cache (RFC 9111)
// in front of the route's upstreams (proxy, fastcgi and php routes).
type ProxyCache struct {
	MaxBytes      int64         // default 64 MiB: the route's store, counted beside the file cache's budget; the least recently useful entries are evicted past it
	MaxEntryBytes int64         // default 1 MiB: a response body longer than this is not stored
	LockTimeout   time.Duration // default 5s: how long a request waits for another request's fetch of the same key before it goes upstream itself
	StoreCookies  bool          // default false: store responses carrying Set-Cookie (the field is stored too)
}

// Default values of a route's cache section.
const (
	defaultProxyCacheBytes      = 64 << 20
	defaultProxyCacheEntryBytes = 1 << 20
	defaultProxyCacheLock       = 5 * time.Second
	maxProxyCacheBytes          = 1 << 40
)

var proxyCacheKeys = sectionKey("cache", "A shared HTTP cache (RFC 9111) in front of a proxy, fastcgi or php route: GET and HEAD responses the upstream allows to be stored are kept in memory and served from it while fresh, revalidated when stale, and one request per key goes upstream at a time. See the README's Proxy cache section for what is and is not stored.",
	sizeKey("max_bytes", 1, maxProxyCacheBytes, "64MiB", "The route's cache budget (bodies, fields and keys); least useful entries are evicted past it. Counted beside cache.max_bytes, not in it."),
	sizeKey("max_entry_bytes", 1, maxProxyCacheBytes, "1MiB", "A response body longer than this is passed on and not stored."),
	durationKey("lock_timeout", "5s", "How long a request waits for another request's fetch of the same key (collapsing) before it goes upstream itself."),
	boolKey("store_cookies", "false", "Store responses that carry Set-Cookie (which then go to every client); by default they are passed on and not stored."),
)

// proxyCache decodes a route's cache section.
func (d *decoder) proxyCache(n *yaml.Node, path string) *ProxyCache {
	s := d.section(n, path, proxyCacheKeys.names()...)
	if s == nil {
		return nil
	}
	pc := &ProxyCache{MaxBytes: defaultProxyCacheBytes, MaxEntryBytes: defaultProxyCacheEntryBytes, LockTimeout: defaultProxyCacheLock}
	d.setSizeIn(s, "max_bytes", &pc.MaxBytes, 1, maxProxyCacheBytes)
	if d.setSizeIn(s, "max_entry_bytes", &pc.MaxEntryBytes, 1, maxProxyCacheBytes) && pc.MaxEntryBytes > pc.MaxBytes {
		d.errorf(s.get("max_entry_bytes"), join(path, "max_entry_bytes"), "must not exceed the route cache's max_bytes (%s)", formatSize(pc.MaxBytes))
	}
	d.setDuration(s, "lock_timeout", &pc.LockTimeout)
	d.setBool(s, "store_cookies", &pc.StoreCookies)
	return pc
}

// setSizeIn sets *dst from size key name of s when present and within
// lo..hi, and reports whether it did.
func (d *decoder) setSizeIn(s *section, name string, dst *int64, lo, hi int64) bool {
	if v := s.get(name); v != nil {
		if n, ok := d.size(v, join(s.path, name), lo, hi); ok {
			*dst = n
			return true
		}
	}
	return false
}
