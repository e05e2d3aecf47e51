package proxy_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func counts(names []string) map[string]int {
	m := map[string]int{}
	for _, n := range names {
		m[n]++
	}
	return m
}

func TestRoundRobin(t *testing.T) {
	t.Parallel()
	a, b, c := named(t, "a"), named(t, "b"), named(t, "c")
	g := startGale(t, proxyRoute(a.hostport(), b.hostport(), c.hostport()))
	cl := newClient()
	var got []string
	for range 30 {
		_, body := g.get(cl, "/")
		got = append(got, body)
	}
	if m := counts(got); m["a"] != 10 || m["b"] != 10 || m["c"] != 10 {
		t.Errorf("round-robin: %v", m)
	}
	for i := 3; i < len(got); i++ {
		if got[i] != got[i-3] {
			t.Fatalf("not a rotation: %v", got)
		}
	}
}

// TestLeastConnections holds a request on one upstream: the next ones go
// to the other until it is released.
func TestLeastConnections(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hold := func(name string) *upstream {
		return newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/hold" {
				<-release
			}
			io.WriteString(w, name)
		})
	}
	a, b := hold("a"), hold("b")
	g := startGale(t, proxyRoute(a.hostport(), b.hostport())+"      load_balancing: least-connections\n")
	held := make(chan string, 1)
	go func() {
		resp, err := newClient().Get(g.url("/hold"))
		if err != nil {
			held <- err.Error()
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		held <- string(body)
	}()
	eventually(t, 3*time.Second, "the held request to arrive", func() bool { return a.reqs.Load()+b.reqs.Load() == 1 })
	busy := "a"
	if b.reqs.Load() == 1 {
		busy = "b"
	}
	cl := newClient()
	for range 10 {
		if _, body := g.get(cl, "/x"); body == busy {
			t.Fatalf("request went to %s, which holds a request", busy)
		}
	}
	close(release)
	if got := <-held; got != busy {
		t.Errorf("held request answered by %q, want %q", got, busy)
	}
	// Idle again: both are used.
	var got []string
	for range 10 {
		_, body := g.get(cl, "/x")
		got = append(got, body)
	}
	if m := counts(got); m["a"] == 0 || m["b"] == 0 {
		t.Errorf("after release: %v", m)
	}
}

func TestRandomTwo(t *testing.T) {
	t.Parallel()
	a, b, c := named(t, "a"), named(t, "b"), named(t, "c")
	g := startGale(t, proxyRoute(a.hostport(), b.hostport(), c.hostport())+"      load_balancing: random-two\n")
	cl := newClient()
	var got []string
	for range 300 {
		_, body := g.get(cl, "/")
		got = append(got, body)
	}
	m := counts(got)
	for _, n := range []string{"a", "b", "c"} {
		if m[n] < 50 {
			t.Errorf("random-two: %v", m)
			break
		}
	}
}

// TestClientIPHash sends from several loopback addresses: each always
// lands on the same upstream, and they spread over more than one.
func TestClientIPHash(t *testing.T) {
	t.Parallel()
	a, b, c := named(t, "a"), named(t, "b"), named(t, "c")
	g := startGale(t, proxyRoute(a.hostport(), b.hostport(), c.hostport())+"      load_balancing: client-ip-hash\n")
	used := map[string]bool{}
	for i := 1; i <= 8; i++ {
		src := fmt.Sprintf("127.0.0.%d", i)
		cl := &http.Client{Transport: &http.Transport{
			DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}).DialContext,
			// a new connection per request: the hash is per address, not per connection
			DisableKeepAlives: true,
		}, Timeout: 5 * time.Second}
		first := ""
		for range 5 {
			_, body := g.get(cl, "/")
			if first == "" {
				first = body
			} else if body != first {
				t.Fatalf("%s went to %s then %s", src, first, body)
			}
		}
		used[first] = true
	}
	if len(used) < 2 {
		t.Errorf("8 addresses all went to %v", used)
	}
}

// TestActiveHealth takes an upstream out when its checks fail, and back
// when they pass.
func TestActiveHealth(t *testing.T) {
	t.Parallel()
	var sick atomic.Bool
	a := named(t, "a")
	b := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			if sick.Load() {
				w.WriteHeader(503)
			}
			return
		}
		io.WriteString(w, "b")
	})
	g := startGale(t, proxyRoute(a.hostport(), b.hostport())+
		"      health_check: {path: /healthz, interval: 50ms, timeout: 1s, fails: 2, passes: 2}\n")
	cl := newClient()
	spread := func() map[string]int {
		var got []string
		for range 10 {
			_, body := g.get(cl, "/")
			got = append(got, body)
		}
		return counts(got)
	}
	if m := spread(); m["a"] != 5 || m["b"] != 5 {
		t.Fatalf("healthy: %v", m)
	}
	sick.Store(true)
	eventually(t, 3*time.Second, "b to be taken out", func() bool { return strings.Contains(g.logs.String(), "upstream out of service") })
	if m := spread(); m["b"] != 0 {
		t.Errorf("b is out but served %d", m["b"])
	}
	sick.Store(false)
	eventually(t, 3*time.Second, "b to come back", func() bool { return strings.Contains(g.logs.String(), "upstream back in service") })
	if m := spread(); m["b"] != 5 {
		t.Errorf("b is back but served %d of 10", m["b"])
	}
	if !strings.Contains(g.logs.String(), "active checks failed") {
		t.Errorf("logs do not say why:\n%s", g.logs.String())
	}
}

// deadAddr returns an address where nothing listens.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestPassiveHealth takes an upstream that refuses connections out after
// a failure (the request is retried on the other), and back after the
// cooldown.
func TestPassiveHealth(t *testing.T) {
	t.Parallel()
	a := named(t, "a")
	dead := deadAddr(t)
	g := startGale(t, proxyRoute(dead, a.hostport())+
		"      retries: 1\n      health_check: {passive: {fails: 1, window: 10s, cooldown: 1s}}\n")
	cl := newClient()
	for i := range 10 {
		if code, body := g.get(cl, "/"); code != 200 || body != "a" {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
	}
	if s := g.srv.ProxyStats(); s.DialFails != 1 || s.Retries != 1 {
		t.Errorf("dial failures %d retries %d, want 1 and 1 (the dead upstream is out after one failure)", s.DialFails, s.Retries)
	}
	if !strings.Contains(g.logs.String(), "upstream out of service") {
		t.Errorf("no log of the upstream going out:\n%s", g.logs.String())
	}
	// Requests until the cooldown has passed and the dead upstream was
	// tried once more (each answered by a, after a retry for that one)...
	eventually(t, 10*time.Second, "the dead upstream to be tried again", func() bool {
		if code, body := g.get(cl, "/"); code != 200 || body != "a" {
			t.Fatalf("during the cooldown: %d %q", code, body)
		}
		return g.srv.ProxyStats().DialFails >= 2
	})
	// ...then it is out again.
	for range 4 {
		g.get(cl, "/")
	}
	if s := g.srv.ProxyStats(); s.DialFails != 2 {
		t.Errorf("after the cooldown: %d dial failures, want 2 (tried once more, then out again)", s.DialFails)
	}
	if !strings.Contains(g.logs.String(), "upstream back in service") {
		t.Errorf("no log of the upstream coming back:\n%s", g.logs.String())
	}
}

// TestAllUpstreamsDown still tries an upstream when every one is out of
// service, rather than failing without trying.
func TestAllUpstreamsDown(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var sick = true
	a := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		s := sick
		mu.Unlock()
		if r.URL.Path == "/healthz" && s {
			w.WriteHeader(500)
			return
		}
		io.WriteString(w, "a")
	})
	g := startGale(t, proxyRoute(a.hostport())+"      health_check: {path: /healthz, interval: 50ms, fails: 1}\n")
	eventually(t, 3*time.Second, "a to be taken out", func() bool { return strings.Contains(g.logs.String(), "upstream out of service") })
	if code, body := g.get(newClient(), "/"); code != 200 || body != "a" {
		t.Errorf("only upstream out of service: %d %q", code, body)
	}
}

// TestClientIPHashBehindProxy hashes the client address a trusted proxy
// reports, not the proxy's own.
func TestClientIPHashBehindProxy(t *testing.T) {
	t.Parallel()
	a, b, c := named(t, "a"), named(t, "b"), named(t, "c")
	g := startGale(t, proxyRoute(a.hostport(), b.hostport(), c.hostport())+
		"      load_balancing: client-ip-hash\n      trusted_proxies: [127.0.0.0/8, 10.0.0.0/8]\n")
	rc := g.dial()
	used := map[string]bool{}
	for i := 1; i <= 8; i++ {
		first := ""
		for j := range 4 {
			// The client, then a trusted hop in front of us; the list may
			// come in one field or two.
			xff := fmt.Sprintf("X-Forwarded-For: 203.0.113.%d, 10.1.1.%d\r\n", i, j)
			if j%2 == 1 {
				xff = fmt.Sprintf("X-Forwarded-For: 203.0.113.%d\r\nX-Forwarded-For: 10.1.1.%d\r\n", i, j)
			}
			rc.send("GET / HTTP/1.1\r\nHost: a\r\n" + xff + "\r\n")
			_, body := rc.response("GET")
			if first == "" {
				first = body
			} else if body != first {
				t.Fatalf("client 203.0.113.%d went to %s then %s", i, first, body)
			}
		}
		used[first] = true
	}
	if len(used) < 2 {
		t.Errorf("8 clients behind a trusted proxy all went to %v", used)
	}
}
