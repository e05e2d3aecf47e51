package handlers

import (
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gale/config"
)

// memStore is a LimitStore in memory: GCRA per key as the Redis script
// computes it, answered on a goroutine of its own, as the real store's
// worker does.
type memStore struct {
	mu    sync.Mutex
	tat   map[uint64]int64
	epoch time.Time
	q     chan LeaseRequest
	down  atomic.Bool
	calls atomic.Int64
	n     int
}

func newMemStore(t testing.TB, n int) *memStore {
	s := &memStore{tat: map[uint64]int64{}, epoch: time.Now(), q: make(chan LeaseRequest, 1024), n: n}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for req := range s.q {
			g, wait := s.grant(&req)
			s.calls.Add(1)
			req.Sink.Leased(&req, g, wait, nil)
		}
	}()
	t.Cleanup(func() { close(s.q); <-done })
	return s
}

func (s *memStore) grant(req *LeaseRequest) (int, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := int64(time.Since(s.epoch))
	k := req.Key
	tat := max(s.tat[k], now)
	room := max((now+req.Tau-tat)/req.Interval+1, 0)
	g := min(int64(req.Want), room)
	tat += g * req.Interval
	s.tat[k] = tat
	if g < int64(req.Want) {
		return int(g), time.Duration(max(tat-req.Tau-now, 0))
	}
	return int(g), 0
}

func (s *memStore) Lease(req LeaseRequest) bool {
	select {
	case s.q <- req:
		return true
	default:
		return false
	}
}
func (s *memStore) Up() bool       { return !s.down.Load() }
func (s *memStore) Instances() int { return s.n }

func clusterRouter(t testing.TB, store LimitStore, rl string) *Router {
	t.Helper()
	file := filepath.Join(t.TempDir(), "gale.yaml")
	y := "listen: [\"127.0.0.1:0\"]\ncluster: {redis: {address: \"127.0.0.1:6379\"}}\nroutes:\n  - path: /\n    rate_limit: " + rl + "\n    respond: {body: ok}\n"
	if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return mustBuild(t, cfg, WithLimitStore(store))
}

// TestClusterLimitInstancesShare runs three routers (three instances) on
// one store: driven in turn for 2 s, they admit what one limiter would
// (burst+1, then the rate), within the stated bound.
func TestClusterLimitInstancesShare(t *testing.T) {
	store := newMemStore(t, 3)
	var rts []*Router
	for range 3 {
		rts = append(rts, clusterRouter(t, store, "{rate: 100/s, burst: 20, scope: cluster}"))
	}
	ok := 0
	start := time.Now()
	for i := 0; time.Since(start) < 2*time.Second && i < 2_000_000; i++ {
		c := newCtx(request("GET", "example.com", "/x"))
		c.Remote = netip.MustParseAddrPort("127.0.0.2:1")
		rts[i%3].Serve(c)
		if c.Resp.Status == 200 {
			ok++
		}
		if i%64 == 0 {
			time.Sleep(100 * time.Microsecond) // let the store's goroutine run on a busy machine
		}
	}
	el := time.Since(start)
	want := 21 + int(el/(10*time.Millisecond))
	// Leases of 10 (a tenth of a second) stranded on 3 instances.
	if ok > want+3 || ok < want-3*10-3 {
		t.Fatalf("admitted %d in %v, want %d (-30)", ok, el, want)
	}
}

// TestClusterLimitFallback: while the store is down, on_store_failure
// decides.
func TestClusterLimitFallback(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want int // of 100 requests at once
	}{{"local", 11}, {"allow", 100}, {"deny", 0}} {
		store := newMemStore(t, 2)
		store.down.Store(true)
		rt := clusterRouter(t, store, "{rate: 10/s, burst: 20, scope: cluster, on_store_failure: "+tc.mode+"}")
		ok := 0
		for range 100 {
			c := newCtx(request("GET", "example.com", "/x"))
			c.Remote = netip.MustParseAddrPort("127.0.0.2:1")
			rt.Serve(c)
			if c.Resp.Status == 200 {
				ok++
			}
		}
		// local: rate/2 with tau unchanged: 20*100ms/200ms + 1.
		if ok != tc.want {
			t.Errorf("on_store_failure %s: admitted %d of 100, want %d", tc.mode, ok, tc.want)
		}
	}
}

// BenchmarkRateLimitScope compares a request under a local limit with one
// under a cluster-scoped limit spent from its lease (the store in memory:
// what is measured is the hot path, not Redis).
func BenchmarkRateLimitScope(b *testing.B) {
	for _, scope := range []string{"local", "cluster"} {
		b.Run(scope, func(b *testing.B) {
			rt := clusterRouter(b, newMemStore(b, 3), "{rate: 1000000/s, burst: 1000000, scope: "+scope+"}")
			req := request("GET", "example.com", "/x")
			c := newCtx(req)
			c.Remote = netip.MustParseAddrPort("127.0.0.2:1")
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				c.Scratch = c.Scratch[:0]
				rt.Serve(c)
			}
			if c.Resp.Status != 200 {
				b.Fatalf("status %d", c.Resp.Status)
			}
		})
	}
}
