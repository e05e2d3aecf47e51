package app

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingUpstream is a test origin that counts the requests each path
// gets and answers with handle.
type countingUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newCountingUpstream(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, n int)) *countingUpstream {
	t.Helper()
	u := &countingUpstream{hits: map[string]int{}}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.hits[r.URL.RequestURI()]++
		n := u.hits[r.URL.RequestURI()]
		u.mu.Unlock()
		handle(w, r, n)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *countingUpstream) count(uri string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.hits[uri]
}

func cachedProxy(t *testing.T, up string) *testServer {
	return startServer(t, fmt.Sprintf("routes:\n  - path: /\n    cache: {max_bytes: 1MiB, max_entry_bytes: 64KiB}\n    proxy: {to: [%q]}\n", up), nil)
}

// A fresh response is stored and served again without the upstream, with
// Age and Cache-Status, over HTTP/1.1 and h2c alike; HEAD is answered
// from the stored GET.
func TestProxyCacheHit(t *testing.T) {
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("X-Count", fmt.Sprint(n))
		fmt.Fprintf(w, "body %d", n)
	})
	ts := cachedProxy(t, up.Listener.Addr().String())
	for _, proto := range accessProtocols {
		c := boundClient(t, proto, "127.0.0.1")
		url := "http://" + ts.addr + "/a?" + proto
		r1, b1 := accessGet(t, c, proto, url)
		r2, b2 := accessGet(t, c, proto, url)
		if b1 != "body 1" || b2 != "body 1" {
			t.Fatalf("%s: bodies %q, %q; want the first twice", proto, b1, b2)
		}
		if got := r1.Header.Get("Cache-Status"); got != "gale; fwd=miss; stored" {
			t.Errorf("%s: first Cache-Status %q", proto, got)
		}
		if got := r2.Header.Get("Cache-Status"); got != "gale; hit" || r2.Header.Get("Age") == "" || r2.Header.Get("X-Count") != "1" {
			t.Errorf("%s: second response Cache-Status %q Age %q X-Count %q", proto, got, r2.Header.Get("Age"), r2.Header.Get("X-Count"))
		}
		req, _ := http.NewRequest("HEAD", url, nil)
		hr, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		hr.Body.Close()
		if hr.Header.Get("Cache-Status") != "gale; hit" || hr.ContentLength != 6 {
			t.Errorf("%s: HEAD Cache-Status %q length %d", proto, hr.Header.Get("Cache-Status"), hr.ContentLength)
		}
		if n := up.count("/a?" + proto); n != 1 {
			t.Errorf("%s: upstream saw %d requests; want 1", proto, n)
		}
	}
}

// What must not be stored is not: no-store, private, Set-Cookie, a
// response to a request with Authorization or Cookie (unless the
// response says a shared cache may keep it), and a response with no
// freshness and no validator (a dynamic page under a static-looking
// path, web cache deception).
func TestProxyCacheNotStored(t *testing.T) {
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.URL.Path {
		case "/nostore":
			w.Header().Set("Cache-Control", "max-age=60, no-store")
		case "/private":
			w.Header().Set("Cache-Control", "private, max-age=60")
		case "/cookie":
			w.Header().Set("Cache-Control", "max-age=60")
			w.Header().Set("Set-Cookie", "s=1")
		case "/auth", "/withcookie":
			w.Header().Set("Cache-Control", "max-age=60")
		case "/authpublic":
			w.Header().Set("Cache-Control", "public, max-age=60")
		case "/account.php/x.css":
			w.Header().Set("Content-Type", "text/html")
		}
		fmt.Fprintf(w, "%d", n)
	})
	ts := cachedProxy(t, up.Listener.Addr().String())
	c := boundClient(t, "h1", "127.0.0.1")
	cases := []struct {
		path    string
		headers []string
		stored  bool
	}{
		{"/nostore", nil, false},
		{"/private", nil, false},
		{"/cookie", nil, false},
		{"/auth", []string{"Authorization", "Bearer x"}, false},
		{"/withcookie", []string{"Cookie", "s=1"}, false},
		{"/authpublic", []string{"Authorization", "Bearer x"}, true},
		{"/account.php/x.css", nil, false},
	}
	for _, tc := range cases {
		accessGet(t, c, "h1", "http://"+ts.addr+tc.path, tc.headers...)
		_, b := accessGet(t, c, "h1", "http://"+ts.addr+tc.path, tc.headers...)
		if got := b == "1"; got != tc.stored {
			t.Errorf("%s: second body %q; stored = %v, want %v", tc.path, b, got, tc.stored)
		}
	}
}

// A stale entry with a validator is revalidated with If-None-Match; a
// 304 refreshes it and the client gets the stored body with the 304's
// fields merged.
func TestProxyCacheRevalidate(t *testing.T) {
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("X-Seen", fmt.Sprint(n))
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(304)
			return
		}
		fmt.Fprint(w, "stored body")
	})
	ts := cachedProxy(t, up.Listener.Addr().String())
	c := boundClient(t, "h1", "127.0.0.1")
	url := "http://" + ts.addr + "/r"
	accessGet(t, c, "h1", url)
	r2, b2 := accessGet(t, c, "h1", url)
	if b2 != "stored body" || r2.StatusCode != 200 || r2.Header.Get("X-Seen") != "2" || !strings.Contains(r2.Header.Get("Cache-Status"), "fwd-status=304") {
		t.Fatalf("revalidated: %d %q X-Seen %q Cache-Status %q", r2.StatusCode, b2, r2.Header.Get("X-Seen"), r2.Header.Get("Cache-Status"))
	}
	if n := up.count("/r"); n != 2 {
		t.Fatalf("upstream saw %d requests; want 2", n)
	}
}

// An unsafe method's success removes the stored response of its target
// (RFC 9111 section 4.4).
func TestProxyCacheInvalidate(t *testing.T) {
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Cache-Control", "max-age=60")
		fmt.Fprintf(w, "%d", n)
	})
	ts := cachedProxy(t, up.Listener.Addr().String())
	c := boundClient(t, "h1", "127.0.0.1")
	url := "http://" + ts.addr + "/i"
	accessGet(t, c, "h1", url)
	if _, b := accessGet(t, c, "h1", url); b != "1" {
		t.Fatalf("not stored: %q", b)
	}
	resp, err := c.Post(url, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, b := accessGet(t, c, "h1", url); b != "3" {
		t.Fatalf("after POST: %q; want the upstream's third answer", b)
	}
}

// Vary selects among stored variants; Accept-Encoding is compared after
// normalising case and white space.
func TestProxyCacheVary(t *testing.T) {
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Vary", "Accept-Encoding")
		fmt.Fprintf(w, "%s", r.Header.Get("Accept-Encoding"))
	})
	ts := cachedProxy(t, up.Listener.Addr().String())
	c := boundClient(t, "h1", "127.0.0.1")
	url := "http://" + ts.addr + "/v"
	accessGet(t, c, "h1", url, "Accept-Encoding", "gzip, br")
	accessGet(t, c, "h1", url, "Accept-Encoding", "identity")
	if _, b := accessGet(t, c, "h1", url, "Accept-Encoding", "GZIP,br"); b != "gzip, br" {
		t.Fatalf("variant: %q", b)
	}
	if n := up.count("/v"); n != 2 {
		t.Fatalf("upstream saw %d requests; want 2", n)
	}
}

// Concurrent misses for one key reach the upstream once.
func TestProxyCacheCollapse(t *testing.T) {
	release := make(chan struct{})
	var arrived atomic.Int32
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		arrived.Add(1)
		<-release
		w.Header().Set("Cache-Control", "max-age=60")
		fmt.Fprint(w, "once")
	})
	ts := cachedProxy(t, up.Listener.Addr().String())
	const clients = 200
	tr := &http.Transport{MaxConnsPerHost: clients, MaxIdleConnsPerHost: clients}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Get("http://" + ts.addr + "/c")
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			var b strings.Builder
			if _, err := fmt.Fprint(&b, readAll(resp)); err != nil || b.String() != "once" {
				errs <- fmt.Errorf("body %q", b.String())
			}
		}()
	}
	waitCollapsed(t, ts, &arrived, clients-1)
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := up.count("/c"); n != 1 {
		t.Fatalf("upstream saw %d requests; want 1", n)
	}
}

// waitCollapsed waits until one request reached the upstream and n others
// wait for it in the route's cache.
func waitCollapsed(t *testing.T, ts *testServer, arrived *atomic.Int32, n int) {
	t.Helper()
	store := ts.srv.sh.Set.Load().Router.Routes()[0].CacheStore()
	eventually(t, 10*time.Second, "the misses to wait for the first", func() bool {
		return arrived.Load() == 1 && store.Waiting() == n
	})
}

func readAll(resp *http.Response) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// The route cache's counters reach the metrics: a miss, a hit, a
// revalidation and a bypass, the bytes and keys it holds.
func TestProxyCacheMetrics(t *testing.T) {
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Cache-Control", "max-age=60")
		if r.URL.Path == "/reval" {
			w.Header().Set("Cache-Control", "no-cache")
			w.Header().Set("ETag", `"m"`)
		}
		fmt.Fprint(w, "metered")
	})
	ts := startServer(t, fmt.Sprintf(baseListen+"metrics: {listen: \"127.0.0.1:0\"}\nroutes:\n  - name: api\n    path: /\n    cache: {}\n    proxy: {to: [%q]}\n", up.Listener.Addr().String()), nil)
	c := boundClient(t, "h1", "127.0.0.1")
	for _, p := range []string{"/a", "/a", "/reval", "/reval"} {
		accessGet(t, c, "h1", "http://"+ts.addr+p)
	}
	resp, err := c.Post("http://"+ts.addr+"/a", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	fams := scrape(t, ts)
	for _, tc := range []struct {
		outcome string
		want    float64
	}{{"miss", 2}, {"hit", 1}, {"revalidated", 1}, {"bypass", 1}} {
		if got := sum(fams, "gale_proxy_cache_requests_total", "route", "api", "outcome", tc.outcome); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.outcome, got, tc.want)
		}
	}
	if got := sum(fams, "gale_proxy_cache_entries", "route", "api"); got != 1 { // /a was invalidated by the POST
		t.Errorf("entries %v, want 1", got)
	}
	if sum(fams, "gale_proxy_cache_bytes", "route", "api") == 0 || sum(fams, "gale_proxy_cache_stored_total", "route", "api") != 3 {
		t.Errorf("bytes %v, stored %v (want 3: /a, /reval, its refresh)", sum(fams, "gale_proxy_cache_bytes", "route", "api"), sum(fams, "gale_proxy_cache_stored_total", "route", "api"))
	}
}

// The admin purge drops stored responses by path and by prefix.
func TestProxyCachePurge(t *testing.T) {
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Cache-Control", "max-age=60")
		fmt.Fprintf(w, "%d", n)
	})
	ts := cachedProxy(t, up.Listener.Addr().String())
	c := boundClient(t, "h1", "127.0.0.1")
	for _, p := range []string{"/a?x=1", "/img/1", "/img/2", "/keep"} {
		accessGet(t, c, "h1", "http://"+ts.addr+p)
	}
	if n := ts.srv.PurgeCache("/a"); n != 1 {
		t.Fatalf("purged %d for /a, want 1", n)
	}
	if n := ts.srv.PurgeCache("/img/"); n != 2 {
		t.Fatalf("purged %d for /img/, want 2", n)
	}
	for p, want := range map[string]string{"/a?x=1": "2", "/img/1": "2", "/keep": "1"} {
		if _, b := accessGet(t, c, "h1", "http://"+ts.addr+p); b != want {
			t.Errorf("%s after the purge: %q, want %q", p, b, want)
		}
	}
}

// Requests waiting for a fetch whose head shows it will not be stored
// go upstream at once, without waiting for its body.
func TestProxyCacheCollapseUnstorable(t *testing.T) {
	release, headSent := make(chan struct{}), make(chan struct{})
	var arrived atomic.Int32
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n > 1 {
			fmt.Fprint(w, "other")
			return
		}
		arrived.Add(1)
		<-release // until the others wait
		w.Header().Set("Cache-Control", "private")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		close(headSent)
		<-release
		fmt.Fprint(w, "first")
	})
	// A lock_timeout beyond the client's: waiting for the body would fail.
	ts := startServer(t, fmt.Sprintf("routes:\n  - path: /\n    cache: {lock_timeout: 1m}\n    proxy: {to: [%q]}\n", up.Listener.Addr().String()), nil)
	const waiters = 20
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: waiters + 1}, Timeout: 10 * time.Second}
	first := make(chan string, 1)
	go func() {
		resp, err := c.Get("http://" + ts.addr + "/u")
		if err != nil {
			first <- err.Error()
			return
		}
		defer resp.Body.Close()
		first <- readAll(resp)
	}()
	eventually(t, 10*time.Second, "the first request upstream", func() bool { return arrived.Load() == 1 })
	others := make(chan string, waiters)
	for range waiters {
		go func() {
			resp, err := c.Get("http://" + ts.addr + "/u")
			if err != nil {
				others <- err.Error()
				return
			}
			defer resp.Body.Close()
			others <- readAll(resp)
		}()
	}
	waitCollapsed(t, ts, &arrived, waiters)
	release <- struct{}{} // the head goes out; the body waits
	<-headSent
	for range waiters {
		if b := <-others; b != "other" {
			t.Errorf("a waiting request got %q", b)
		}
	}
	close(release)
	if b := <-first; b != "first" {
		t.Errorf("the first request got %q", b)
	}
}

// A byte range of a stored response is cut from it: 206 with
// Content-Range, 416 past the end, the whole body when If-Range names
// another version.
func TestProxyCacheRange(t *testing.T) {
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("ETag", `"r1"`)
		w.Header().Set("Accept-Ranges", "bytes")
		if r.Header.Get("Range") != "" {
			t.Errorf("a range request reached the upstream")
		}
		fmt.Fprint(w, "0123456789")
	})
	ts := cachedProxy(t, up.Listener.Addr().String())
	c := boundClient(t, "h1", "127.0.0.1")
	url := "http://" + ts.addr + "/r"
	accessGet(t, c, "h1", url)
	for _, tc := range []struct {
		hdr    []string
		status int
		body   string
		cr     string
	}{
		{[]string{"Range", "bytes=2-4"}, 206, "234", "bytes 2-4/10"},
		{[]string{"Range", "bytes=-3"}, 206, "789", "bytes 7-9/10"},
		{[]string{"Range", "bytes=20-"}, 416, "", "bytes */10"},
		{[]string{"Range", "bytes=0-1,4-5"}, 200, "0123456789", ""},
		{[]string{"Range", "bytes=2-4", "If-Range", `"r0"`}, 200, "0123456789", ""},
		{[]string{"Range", "bytes=2-4", "If-Range", `"r1"`}, 206, "234", "bytes 2-4/10"},
	} {
		r, b := accessGet(t, c, "h1", url, tc.hdr...)
		if r.StatusCode != tc.status || b != tc.body || r.Header.Get("Content-Range") != tc.cr {
			t.Errorf("%v: %d %q Content-Range %q", tc.hdr, r.StatusCode, b, r.Header.Get("Content-Range"))
		}
	}
	if n := up.count("/r"); n != 1 {
		t.Fatalf("upstream saw %d requests; want 1", n)
	}
}
