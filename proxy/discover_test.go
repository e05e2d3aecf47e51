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

	"github.com/miekg/dns"

	"gale/config"
)

// dnsServer is an authoritative DNS server on 127.0.0.1 (UDP) whose
// records a test changes while gale asks it.
type dnsServer struct {
	addr    string
	mu      sync.Mutex
	records map[string][]dns.RR // by lower-case name and type: "name./A"
	fail    bool                // answer SERVFAIL to everything
	queries atomic.Int64
}

func newDNSServer(t *testing.T) *dnsServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &dnsServer{addr: pc.LocalAddr().String(), records: map[string][]dns.RR{}}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: d, NotifyStartedFunc: func() { close(started) }}
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return d
}

// set replaces the records of name and type with rrs, each written as
// in a zone file ("app.test. 1 IN A 127.0.0.2").
func (d *dnsServer) set(t *testing.T, name string, qtype uint16, rrs ...string) {
	t.Helper()
	var list []dns.RR
	for _, s := range rrs {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, rr)
	}
	d.mu.Lock()
	d.records[strings.ToLower(name)+"/"+dns.TypeToString[qtype]] = list
	d.mu.Unlock()
}

func (d *dnsServer) setFailing(v bool) {
	d.mu.Lock()
	d.fail = v
	d.mu.Unlock()
}

func (d *dnsServer) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	d.queries.Add(1)
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	d.mu.Lock()
	if d.fail {
		m.Rcode = dns.RcodeServerFailure
	} else if len(r.Question) == 1 {
		q := r.Question[0]
		m.Answer = append(m.Answer, d.records[strings.ToLower(q.Name)+"/"+dns.TypeToString[q.Qtype]]...)
		if len(m.Answer) == 0 {
			m.Rcode = dns.RcodeNameError
		}
	}
	d.mu.Unlock()
	_ = w.WriteMsg(m)
}

// ipUpstream is an HTTP server on one 127.x address that answers with its
// name; /slow waits until release is closed. It counts requests and the
// connections open now.
type ipUpstream struct {
	name    string
	addr    string
	srv     *http.Server
	reqs    atomic.Int64 // requests other than /slow and /healthz
	sick    atomic.Bool  // /healthz answers 503
	open    atomic.Int64
	slowIn  chan struct{} // a /slow request arrived
	release chan struct{}
}

func newIPUpstream(t *testing.T, name, addr string) *ipUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	u := &ipUpstream{name: name, addr: ln.Addr().String(), slowIn: make(chan struct{}, 16), release: make(chan struct{})}
	u.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				u.slowIn <- struct{}{}
				<-u.release
				io.WriteString(w, "slow-"+name)
				return
			}
			if r.URL.Path == "/healthz" {
				if u.sick.Load() {
					w.WriteHeader(503)
				}
				return
			}
			u.reqs.Add(1)
			io.WriteString(w, name)
		}),
		ConnState: func(c net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				u.open.Add(1)
			case http.StateClosed, http.StateHijacked:
				u.open.Add(-1)
			}
		},
	}
	go func() { _ = u.srv.Serve(ln) }()
	t.Cleanup(func() {
		select {
		case <-u.release:
		default:
			close(u.release)
		}
		_ = u.srv.Close()
	})
	return u
}

// samePortUpstreams starts one upstream per address 127.0.0.(2+i), all
// on one port (dns+a gives addresses, the port is the entry's).
func samePortUpstreams(t *testing.T, names ...string) (int, []*ipUpstream) {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.2:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		var ups []*ipUpstream
		ok := true
		for i, name := range names {
			addr := fmt.Sprintf("127.0.0.%d:%d", 2+i, port)
			probe, err := net.Listen("tcp", addr)
			if err != nil {
				ok = false
				break
			}
			probe.Close()
			ups = append(ups, newIPUpstream(t, name, addr))
		}
		if ok {
			return port, ups
		}
	}
	t.Fatal("no port free on every address")
	return 0, nil
}

// loadRun sends GET / from workers until stop is closed (or each sent
// max requests), counting answers by body and failures.
type loadRun struct {
	mu       sync.Mutex
	by       map[string]int
	failures []string
	stop     chan struct{}
	wg       sync.WaitGroup
}

func startLoad(g *gale, workers, max int) *loadRun {
	l := &loadRun{by: map[string]int{}, stop: make(chan struct{})}
	for range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			cl := newClient()
			defer cl.CloseIdleConnections()
			for range max {
				select {
				case <-l.stop:
					return
				default:
				}
				resp, err := cl.Get(g.url("/"))
				var body []byte
				if err == nil {
					body, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				l.mu.Lock()
				switch {
				case err != nil:
					l.failures = append(l.failures, err.Error())
				case resp.StatusCode != 200:
					l.failures = append(l.failures, fmt.Sprintf("status %d: %s", resp.StatusCode, body))
				default:
					l.by[string(body)]++
				}
				l.mu.Unlock()
			}
		}()
	}
	return l
}

func (l *loadRun) count(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.by[name]
}

func (l *loadRun) end(t *testing.T) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	if len(l.failures) > 0 {
		t.Errorf("%d requests failed during the change, first: %s", len(l.failures), l.failures[0])
	}
}

// TestDiscoverA changes the A records of a dns+a:// upstream under load:
// traffic follows within max_ttl, no request fails, the removed
// address's slow request in flight finishes and its connections close,
// and a failing DNS server leaves the last addresses in use.
func TestDiscoverA(t *testing.T) {
	t.Parallel()
	d := newDNSServer(t)
	port, ups := samePortUpstreams(t, "a", "b", "c")
	a, b := ups[0], ups[1] // and c at 127.0.0.4
	d.set(t, "app.test.", dns.TypeA, "app.test. 1 IN A 127.0.0.2", "app.test. 1 IN A 127.0.0.3")
	const maxTTL = 300 * time.Millisecond
	g := startGale(t, fmt.Sprintf(`routes:
  - path: /
    proxy:
      to: "dns+a://app.test:%d"
      resolve: {min_ttl: 50ms, max_ttl: %s, resolver: %q}
`, port, maxTTL, d.addr))
	cl := newClient()
	defer cl.CloseIdleConnections()
	seen := map[string]bool{}
	for range 4 {
		_, body := g.get(cl, "/")
		seen[body] = true
	}
	if !seen["a"] || !seen["b"] || seen["c"] {
		t.Fatalf("before the change, answers came from %v; want a and b", seen)
	}

	// A slow request held by a, which the change removes.
	slow := make(chan string, 1)
	go func() {
		slowCl := newClient()
		defer slowCl.CloseIdleConnections()
		for range 10 {
			resp, err := slowCl.Get(g.url("/slow"))
			if err != nil {
				slow <- err.Error()
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) == "slow-a" {
				slow <- fmt.Sprintf("%d %s", resp.StatusCode, body)
				return
			}
		}
		slow <- "no slow request reached a"
	}()
	close(b.release) // b answers /slow at once (slowIn has room for every try)
	select {
	case <-a.slowIn:
	case res := <-slow:
		t.Fatalf("slow request: %s", res)
	case <-time.After(10 * time.Second):
		t.Fatal("no slow request reached a")
	}

	load := startLoad(g, 4, 5000)
	eventually(t, 5*time.Second, "load on a and b", func() bool { return load.count("a") > 0 && load.count("b") > 0 })
	changed := time.Now()
	d.set(t, "app.test.", dns.TypeA, "app.test. 1 IN A 127.0.0.3", "app.test. 1 IN A 127.0.0.4")
	eventually(t, maxTTL+5*time.Second, "traffic on c", func() bool { return load.count("c") > 0 })
	if took := time.Since(changed); took > maxTTL+2*time.Second {
		t.Errorf("traffic reached c %v after the change; max_ttl is %v", took, maxTTL)
	}
	eventually(t, 5*time.Second, "the removal logged", func() bool { return strings.Contains(g.logs.String(), "upstream removed; draining") })
	load.end(t)

	aBefore := a.reqs.Load()
	seen = map[string]bool{}
	for range 20 {
		code, body := g.get(cl, "/")
		if code != 200 {
			t.Fatalf("status %d after the change", code)
		}
		seen[body] = true
	}
	if a.reqs.Load() != aBefore || seen["a"] || !seen["b"] || !seen["c"] {
		t.Errorf("after the change, answers came from %v (a got %d more)", seen, a.reqs.Load()-aBefore)
	}

	// The request in flight on a finishes; then a's connections close.
	close(a.release)
	select {
	case res := <-slow:
		if res != "200 slow-a" {
			t.Errorf("slow request on the removed address: %s", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("slow request on the removed address did not finish")
	}
	eventually(t, 5*time.Second, "a's connections closed", func() bool { return a.open.Load() == 0 })

	// A failing DNS server: the last addresses stay in use, logged once.
	d.setFailing(true)
	eventually(t, 5*time.Second, "the failure logged", func() bool {
		return strings.Contains(g.logs.String(), "upstream discovery failed; keeping the last addresses")
	})
	q := d.queries.Load()
	eventually(t, 5*time.Second, "more failed queries", func() bool { return d.queries.Load() >= q+3 })
	seen = map[string]bool{}
	for range 10 {
		code, body := g.get(cl, "/")
		if code != 200 {
			t.Fatalf("status %d while DNS fails", code)
		}
		seen[body] = true
	}
	if !seen["b"] || !seen["c"] || seen["a"] {
		t.Errorf("while DNS fails, answers came from %v; want b and c", seen)
	}
	if n := strings.Count(g.logs.String(), "upstream discovery failed"); n != 1 {
		t.Errorf("the failure was logged %d times, want once", n)
	}
	d.setFailing(false)
	eventually(t, 5*time.Second, "the recovery logged", func() bool {
		return strings.Contains(g.logs.String(), "upstream discovery recovered")
	})

	// The admin view lists what was found, and through which entry.
	var listed []string
	for _, st := range g.srv.Upstreams() {
		listed = append(listed, st.Address+" from "+st.From)
	}
	entry := fmt.Sprintf("dns+a://app.test:%d", port)
	if want := []string{fmt.Sprintf("127.0.0.3:%d from %s", port, entry), fmt.Sprintf("127.0.0.4:%d from %s", port, entry)}; strings.Join(listed, ", ") != strings.Join(want, ", ") {
		t.Errorf("upstreams listed: %v, want %v", listed, want)
	}
}

// TestDiscoverSRV changes the SRV records of a dns+srv:// upstream under
// load: traffic follows (each target at its own port, only the lowest
// priority used) and no request fails.
func TestDiscoverSRV(t *testing.T) {
	t.Parallel()
	d := newDNSServer(t)
	x := newIPUpstream(t, "x", "127.0.0.1:0")
	y := newIPUpstream(t, "y", "127.0.0.1:0")
	z := newIPUpstream(t, "z", "127.0.0.1:0")
	backup := newIPUpstream(t, "backup", "127.0.0.1:0")
	port := func(u *ipUpstream) string { _, p, _ := net.SplitHostPort(u.addr); return p }
	srv := func(prio int, target string, u *ipUpstream) string {
		return fmt.Sprintf("_http._tcp.svc.test. 1 IN SRV %d 0 %s %s", prio, port(u), target)
	}
	d.set(t, "_http._tcp.svc.test.", dns.TypeSRV, srv(0, "x.test.", x), srv(0, "y.test.", y), srv(10, "backup.test.", backup))
	for _, n := range []string{"x.test.", "y.test.", "z.test.", "backup.test."} {
		d.set(t, n, dns.TypeA, n+" 1 IN A 127.0.0.1")
	}
	const maxTTL = 300 * time.Millisecond
	g := startGale(t, fmt.Sprintf(`routes:
  - path: /
    proxy:
      to: "dns+srv://_http._tcp.svc.test"
      load_balancing: least-connections
      resolve: {min_ttl: 50ms, max_ttl: %s, resolver: %q}
`, maxTTL, d.addr))
	load := startLoad(g, 4, 5000)
	eventually(t, 5*time.Second, "load on x and y", func() bool { return load.count("x") > 0 && load.count("y") > 0 })
	d.set(t, "_http._tcp.svc.test.", dns.TypeSRV, srv(0, "y.test.", y), srv(0, "z.test.", z), srv(10, "backup.test.", backup))
	eventually(t, maxTTL+5*time.Second, "traffic on z", func() bool { return load.count("z") > 0 })
	eventually(t, 5*time.Second, "the removal logged", func() bool { return strings.Contains(g.logs.String(), "upstream removed; draining") })
	load.end(t)
	xBefore := x.reqs.Load()
	cl := newClient()
	defer cl.CloseIdleConnections()
	for range 20 {
		if code, body := g.get(cl, "/"); code != 200 || body == "x" {
			t.Fatalf("after the change: %d %s", code, body)
		}
	}
	if x.reqs.Load() != xBefore || backup.reqs.Load() != 0 {
		t.Errorf("x got %d requests after the change; backup (priority 10) got %d", x.reqs.Load()-xBefore, backup.reqs.Load())
	}
	eventually(t, 5*time.Second, "x's connections closed", func() bool { return x.open.Load() == 0 })
}

// TestDiscoverReload: a reload resolves the new route's entries before it
// takes requests, so the first request after it already goes to what the
// new records give.
func TestDiscoverReload(t *testing.T) {
	t.Parallel()
	d := newDNSServer(t)
	x := newIPUpstream(t, "x", "127.0.0.1:0")
	y := newIPUpstream(t, "y", "127.0.0.1:0")
	_, px, _ := net.SplitHostPort(x.addr)
	_, py, _ := net.SplitHostPort(y.addr)
	d.set(t, "x.test.", dns.TypeA, "x.test. 60 IN A 127.0.0.1")
	d.set(t, "y.test.", dns.TypeA, "y.test. 60 IN A 127.0.0.1")
	route := func(name, port string) string {
		return fmt.Sprintf("routes:\n  - path: /\n    proxy: {to: \"dns+a://%s:%s\", resolve: {resolver: %q}}\n", name, port, d.addr)
	}
	g := startGale(t, route("x.test", px))
	cl := newClient()
	defer cl.CloseIdleConnections()
	if _, body := g.get(cl, "/"); body != "x" {
		t.Fatalf("before the reload: %q", body)
	}
	cfg, err := config.Parse([]byte("listen: [\""+g.addr+"\"]\nserver: {event_loops: 1}\n"+route("y.test", py)), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if _, body := g.get(cl, "/"); body != "y" {
		t.Errorf("after the reload: %q", body)
	}
}

// TestDiscoverHealth: discovered upstreams get active health checks as
// fixed ones do; one that fails them is skipped.
func TestDiscoverHealth(t *testing.T) {
	t.Parallel()
	d := newDNSServer(t)
	x := newIPUpstream(t, "x", "127.0.0.1:0")
	y := newIPUpstream(t, "y", "127.0.0.1:0")
	y.sick.Store(true)
	port := func(u *ipUpstream) string { _, p, _ := net.SplitHostPort(u.addr); return p }
	d.set(t, "_http._tcp.svc.test.", dns.TypeSRV,
		"_http._tcp.svc.test. 60 IN SRV 0 0 "+port(x)+" h.test.", "_http._tcp.svc.test. 60 IN SRV 0 0 "+port(y)+" h.test.")
	d.set(t, "h.test.", dns.TypeA, "h.test. 60 IN A 127.0.0.1")
	g := startGale(t, fmt.Sprintf(`routes:
  - path: /
    proxy:
      to: "dns+srv://_http._tcp.svc.test"
      health_check: {path: /healthz, interval: 50ms, timeout: 1s, fails: 1, passes: 1}
      resolve: {resolver: %q}
`, d.addr))
	eventually(t, 5*time.Second, "y out of service", func() bool {
		return strings.Contains(g.logs.String(), "upstream out of service")
	})
	cl := newClient()
	defer cl.CloseIdleConnections()
	for range 10 {
		if _, body := g.get(cl, "/"); body != "x" {
			t.Fatalf("a request went to %q while y fails its checks", body)
		}
	}
	y.sick.Store(false)
	eventually(t, 5*time.Second, "requests on y again", func() bool {
		_, body := g.get(cl, "/")
		return body == "y"
	})
}
