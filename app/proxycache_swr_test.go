package app

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// A stale response within its stale-while-revalidate window (RFC 5861
// section 3) is served at once: the first stale request gets it, the
// next one revalidates upstream while every other is served the stale
// copy, and the upstream sees that one revalidation; its answer is then
// served fresh. The first response says it is already 2 s old, so it is
// stale as soon as it is stored.
func TestProxyCacheStaleWhileRevalidate(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Cache-Control", "max-age=1, stale-while-revalidate=30")
		w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, n))
		if n == 1 {
			w.Header().Set("Age", "2")
		} else {
			<-release
		}
		fmt.Fprintf(w, "body %d", n)
	})
	ts := cachedProxy(t, up.Listener.Addr().String())
	const clients = 8
	tr := &http.Transport{MaxConnsPerHost: clients, MaxIdleConnsPerHost: clients}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	url := "http://" + ts.addr + "/swr"
	get := func() (string, string) {
		resp, err := c.Get(url)
		if err != nil {
			t.Error(err)
			return "", ""
		}
		defer resp.Body.Close()
		return readAll(resp), resp.Header.Get("Cache-Status")
	}
	if b, cs := get(); b != "body 1" || cs != "gale; fwd=miss; stored" {
		t.Fatalf("first: %q, Cache-Status %q", b, cs)
	}
	if b, cs := get(); b != "body 1" || cs != "gale; hit; detail=stale-while-revalidate" {
		t.Fatalf("first stale request: %q, Cache-Status %q; want the stale body at once", b, cs)
	}
	type answer struct{ body, status string }
	answers := make(chan answer, clients)
	for i := 0; i < clients; i++ {
		go func() {
			b, cs := get()
			answers <- answer{b, cs}
		}()
	}
	eventually(t, 10*time.Second, "the revalidation to reach the upstream", func() bool { return up.count("/swr") == 2 })
	for i := 0; i < clients-1; i++ {
		if a := <-answers; a.body != "body 1" || a.status != "gale; hit; detail=stale-while-revalidate" {
			t.Errorf("during the revalidation: %q, Cache-Status %q; want the stale copy", a.body, a.status)
		}
	}
	once.Do(func() { close(release) })
	if a := <-answers; a.body != "body 2" || a.status != "gale; fwd=stale; stored" {
		t.Errorf("the revalidating request: %q, Cache-Status %q", a.body, a.status)
	}
	if b, cs := get(); b != "body 2" || cs != "gale; hit" {
		t.Errorf("after the revalidation: %q, Cache-Status %q; want the new body fresh", b, cs)
	}
	if n := up.count("/swr"); n != 2 {
		t.Errorf("upstream saw %d requests; want 2 (one fill, one revalidation)", n)
	}
}

// A revalidation that fails leaves the stale response stored and hands
// the turn on: the request that made it is served the stale copy, and
// the next one revalidates again.
func TestProxyCacheStaleWhileRevalidateError(t *testing.T) {
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Cache-Control", "max-age=1, stale-while-revalidate=30")
		w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, n))
		switch n {
		case 1:
			w.Header().Set("Age", "2")
		case 2:
			w.WriteHeader(http.StatusBadGateway)
		}
		fmt.Fprintf(w, "body %d", n)
	})
	ts := cachedProxy(t, up.Listener.Addr().String())
	c := &http.Client{Timeout: 20 * time.Second}
	url := "http://" + ts.addr + "/swr-err"
	want := []struct{ body, status string }{
		{"body 1", "gale; fwd=miss; stored"},
		{"body 1", "gale; hit; detail=stale-while-revalidate"}, // served stale, a revalidation due
		{"body 1", "gale; hit; detail=stale-if-error"},         // the revalidation got 502
		{"body 3", "gale; fwd=stale; stored"},                  // the turn was handed on
		{"body 3", "gale; hit"},
	}
	for i, w := range want {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b := readAll(resp)
		resp.Body.Close()
		if cs := resp.Header.Get("Cache-Status"); b != w.body || cs != w.status || resp.StatusCode != 200 {
			t.Errorf("request %d: %d %q, Cache-Status %q; want %q, %q", i+1, resp.StatusCode, b, cs, w.body, w.status)
		}
	}
	if n := up.count("/swr-err"); n != 3 {
		t.Errorf("upstream saw %d requests; want 3", n)
	}
}
