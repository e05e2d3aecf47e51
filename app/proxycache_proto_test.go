package app

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A cached proxy route answers alike over HTTP/1.1 (plain and TLS),
// HTTP/2 and HTTP/3: the first request of each client is stored, the
// second is a hit with the stored Date, and a stale entry is revalidated
// with a 304 whose fields reach the client with the stored body.
func TestProxyCacheProtocols(t *testing.T) {
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if strings.HasPrefix(r.URL.Path, "/reval") {
			w.Header().Set("Cache-Control", "no-cache")
			w.Header().Set("ETag", `"e1"`)
			w.Header().Set("X-Seen", fmt.Sprint(n))
			if r.Header.Get("If-None-Match") == `"e1"` {
				w.WriteHeader(304)
				return
			}
		} else {
			w.Header().Set("Cache-Control", "max-age=60")
		}
		fmt.Fprintf(w, "%s %d", r.URL.Path, n)
	})
	ts := startTLSServer(t, `listen:
  - {address: "127.0.0.1:0", http3: true, tls: {certificates: [$CERT]}}
  - "127.0.0.1:0"
routes:
  - path: /
    cache: {}
    proxy: {to: ["`+up.Listener.Addr().String()+`"]}
`, nil, nil)
	plain := "http://" + ts.srv.Addrs()[1]
	secure := "https://" + ts.tlsAddr
	h1tls := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableCompression: true,
		TLSClientConfig: ts.clientConfig("localhost"), TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}}
	t.Cleanup(h1tls.CloseIdleConnections)
	h2 := h2Clients(t, ts)
	clients := []struct {
		name, base, proto string
		c                 *http.Client
	}{
		{"h1", plain, "HTTP/1.1", boundClient(t, "h1", "127.0.0.1")},
		{"h1tls", secure, "HTTP/1.1", h1tls},
		{"h2", secure, "HTTP/2.0", h2["tls"].c},
		{"h2c", plain, "HTTP/2.0", h2["h2c"].c},
		{"h3", secure, "HTTP/3.0", h3Client(t, ts)},
	}
	get := func(c *http.Client, url, proto string) (*http.Response, string) {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.Proto != proto {
			t.Fatalf("GET %s: %s, %v", url, resp.Proto, err)
		}
		return resp, string(b)
	}
	for _, cl := range clients {
		path := "/fresh/" + cl.name
		r1, b1 := get(cl.c, cl.base+path, cl.proto)
		r2, b2 := get(cl.c, cl.base+path, cl.proto)
		if b1 != path+" 1" || b2 != b1 || r2.Header.Get("Cache-Status") != "gale; hit" || r2.Header.Get("Age") == "" {
			t.Errorf("%s: %q then %q (Cache-Status %q, Age %q)", cl.name, b1, b2, r2.Header.Get("Cache-Status"), r2.Header.Get("Age"))
		}
		if d1, d2 := r1.Header.Values("Date"), r2.Header.Values("Date"); len(d2) != 1 || d2[0] != d1[0] {
			t.Errorf("%s: Date %q on the hit; want the stored %q", cl.name, d2, d1)
		}
		path = "/reval/" + cl.name
		get(cl.c, cl.base+path, cl.proto)
		r3, b3 := get(cl.c, cl.base+path, cl.proto)
		if b3 != path+" 1" || r3.StatusCode != 200 || r3.Header.Get("X-Seen") != "2" {
			t.Errorf("%s: revalidated %d %q X-Seen %q", cl.name, r3.StatusCode, b3, r3.Header.Get("X-Seen"))
		}
	}
}

// Concurrent misses over HTTP/2 streams of one connection collapse like
// those of separate HTTP/1.1 connections: the upstream answers once.
func TestProxyCacheCollapseH2(t *testing.T) {
	release := make(chan struct{})
	var arrived atomic.Int32
	up := newCountingUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		arrived.Add(1)
		<-release
		w.Header().Set("Cache-Control", "max-age=60")
		fmt.Fprint(w, "once")
	})
	ts := cachedProxy(t, up.Listener.Addr().String())
	c := boundClient(t, "h2c", "127.0.0.1")
	const streams = 50
	var wg sync.WaitGroup
	bodies := make(chan string, streams)
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Get("http://" + ts.addr + "/c2")
			if err != nil {
				bodies <- err.Error()
				return
			}
			bodies <- readAll(resp)
			resp.Body.Close()
		}()
	}
	waitCollapsed(t, ts, &arrived, streams-1)
	close(release)
	wg.Wait()
	close(bodies)
	for b := range bodies {
		if b != "once" {
			t.Errorf("body %q", b)
		}
	}
	if n := up.count("/c2"); n != 1 {
		t.Fatalf("upstream saw %d requests; want 1", n)
	}
}
