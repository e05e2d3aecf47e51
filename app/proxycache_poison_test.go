package app

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Fields the cache key leaves out must not change what is stored: an
// application that builds links from X-Forwarded-Host or routes by
// X-Original-URL or X-HTTP-Method-Override would otherwise store an
// attacker's answer for everyone. Each case fails on a cache that keys
// only the URL and forwards the fields as they came.
func TestProxyCachePoisonUnkeyedFields(t *testing.T) {
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Cache-Control", "max-age=60")
		fmt.Fprintf(w, "host=%s original=%s rewrite=%s override=%s method=%s",
			r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-Original-URL"), r.Header.Get("X-Rewrite-URL"),
			r.Header.Get("X-HTTP-Method-Override"), r.Method)
	})
	ts := cachedProxy(t, up.Listener.Addr().String())
	for _, proto := range accessProtocols {
		c := boundClient(t, proto, "127.0.0.1")
		url := "http://" + ts.addr + "/home?" + proto
		_, poisoned := accessGet(t, c, proto, url,
			"X-Forwarded-Host", "evil.example", "X-Original-URL", "/admin", "X-Rewrite-URL", "/admin",
			"X-HTTP-Method-Override", "DELETE")
		_, victim := accessGet(t, c, proto, url)
		if strings.Contains(poisoned, "evil") || strings.Contains(poisoned, "/admin") || strings.Contains(poisoned, "DELETE") {
			t.Errorf("%s: the upstream saw the attacker's fields: %q", proto, poisoned)
		}
		if victim != poisoned {
			t.Errorf("%s: stored %q, then served %q", proto, poisoned, victim)
		}
	}
}

// A response to a request with credentials (Authorization, Cookie) is
// not served to another client unless the response says a shared cache
// may keep it; the private page of one user never reaches the next.
func TestProxyCachePoisonCredentials(t *testing.T) {
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Cache-Control", "max-age=60")
		if r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != "" {
			fmt.Fprint(w, "private page of alice")
			return
		}
		fmt.Fprint(w, "public page")
	})
	ts := cachedProxy(t, up.Listener.Addr().String())
	c := boundClient(t, "h1", "127.0.0.1")
	for _, cred := range [][]string{{"Authorization", "Bearer alice"}, {"Cookie", "session=alice"}} {
		url := "http://" + ts.addr + "/me-" + cred[0]
		accessGet(t, c, "h1", url, cred...)
		if _, b := accessGet(t, c, "h1", url); b != "public page" {
			t.Errorf("%s: a client without credentials got %q", cred[0], b)
		}
	}
}

// An error from the upstream while a stored response is revalidated
// reaches the client but does not displace the stored response: once
// the upstream is back, a 304 revalidates the same entry.
func TestProxyCacheErrorKeepsEntry(t *testing.T) {
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("ETag", `"good"`)
		switch {
		case n == 2:
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(503)
			fmt.Fprint(w, "down")
		case r.Header.Get("If-None-Match") == `"good"`:
			w.Header().Set("Cache-Control", "no-cache")
			w.WriteHeader(304)
		default:
			w.Header().Set("Cache-Control", "no-cache")
			fmt.Fprint(w, "good body")
		}
	})
	ts := cachedProxy(t, up.Listener.Addr().String())
	c := boundClient(t, "h1", "127.0.0.1")
	url := "http://" + ts.addr + "/e"
	accessGet(t, c, "h1", url)
	if r, b := accessGet(t, c, "h1", url); r.StatusCode != 503 || b != "down" {
		t.Fatalf("during the outage: %d %q", r.StatusCode, b)
	}
	r, b := accessGet(t, c, "h1", url)
	if r.StatusCode != 200 || b != "good body" || !strings.Contains(r.Header.Get("Cache-Status"), "fwd-status=304") {
		t.Fatalf("after the outage: %d %q (Cache-Status %q); want the stored body revalidated", r.StatusCode, b, r.Header.Get("Cache-Status"))
	}
}

// stale-if-error (RFC 5861): within its window a stored response stands
// in for an upstream error while it is revalidated.
func TestProxyCacheStaleIfError(t *testing.T) {
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n > 1 {
			w.WriteHeader(500)
			fmt.Fprint(w, "broken")
			return
		}
		w.Header().Set("Cache-Control", "max-age=0, stale-if-error=600")
		w.Header().Set("ETag", `"s"`)
		fmt.Fprint(w, "kept")
	})
	ts := cachedProxy(t, up.Listener.Addr().String())
	c := boundClient(t, "h1", "127.0.0.1")
	url := "http://" + ts.addr + "/sie"
	accessGet(t, c, "h1", url)
	r, b := accessGet(t, c, "h1", url)
	if r.StatusCode != 200 || b != "kept" || !strings.Contains(r.Header.Get("Cache-Status"), "stale-if-error") {
		t.Fatalf("%d %q (Cache-Status %q); want the stored response", r.StatusCode, b, r.Header.Get("Cache-Status"))
	}
	if n := up.count("/sie"); n != 2 {
		t.Fatalf("upstream saw %d requests; want 2 (the error was asked for)", n)
	}
	up.Close() // no upstream at all: the proxy's own 502
	if r, b := accessGet(t, c, "h1", url); r.StatusCode != 200 || b != "kept" {
		t.Fatalf("upstream gone: %d %q; want the stored response", r.StatusCode, b)
	}
}
