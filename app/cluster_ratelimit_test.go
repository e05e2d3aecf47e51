package app

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gale/internal/redistest"
	"gale/metrics"
)

// clusterNode is one gale instance of a cluster test, with its log.
type clusterNode struct {
	ts  *testServer
	log *syncBuffer
}

// startCluster runs n gale instances sharing the Redis at addr, each with
// top (top-level YAML) and routes (YAML list items), and a cluster section
// naming it gale-I with extra keys. Each has a directory site/ of its own,
// holding files.
func startCluster(t *testing.T, n int, addr, extra, top, routes string, files map[string]string) []*clusterNode {
	t.Helper()
	nodes := make([]*clusterNode, n)
	for i := range nodes {
		dir := t.TempDir()
		for name, body := range files {
			p := filepath.Join(dir, "site", name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			writeSettled(t, p, []byte(body))
		}
		y := fmt.Sprintf("%s%scluster: {redis: {address: %q, prefix: %q}, instance: gale-%d%s}\nroutes:\n%s",
			baseListen, top, addr, t.Name()+":", i, extra, routes)
		cfg := writeConfig(t, dir, y)
		buf := &syncBuffer{}
		srv, err := New(cfg, slog.New(slog.NewTextHandler(buf, nil)))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		ts := &testServer{t: t, srv: srv, addr: srv.Addrs()[0], dir: dir, done: boot(t, srv)}
		t.Cleanup(ts.stop)
		nodes[i] = &clusterNode{ts: ts, log: buf}
	}
	return nodes
}

// driveRoundRobin sends GET path to the nodes in turn, one at a time on
// kept-alive connections, until d has passed or max requests were sent,
// and counts the 200s per node.
func driveRoundRobin(t *testing.T, nodes []*clusterNode, path string, d time.Duration, max int) []int {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer c.CloseIdleConnections()
	ok := make([]int, len(nodes))
	end := time.Now().Add(d)
	for i := 0; i < max && time.Now().Before(end); i++ {
		k := i % len(nodes)
		resp, err := c.Get(nodes[k].ts.url(path))
		if err != nil {
			t.Fatalf("request %d to gale-%d: %v", i, k, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case 200:
			ok[k]++
		case 429:
		default:
			t.Fatalf("request %d to gale-%d: status %d", i, k, resp.StatusCode)
		}
	}
	return ok
}

func sumInts(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

const clusterLimitRoute = "  - {path: /limited, rate_limit: {rate: 50/s, burst: 50, scope: cluster}, respond: {body: \"ok\\n\"}}\n"

// TestClusterRateLimit drives a cluster-scoped limit of 50/s with a
// burst of 50 on three instances round-robin for 10 s: together they
// admit what one limiter would, 51 at once and 50 a second, 551 within
// 10%.
func TestClusterRateLimit(t *testing.T) {
	rs := redistest.Start(t)
	nodes := startCluster(t, 3, rs.Addr, "", "", clusterLimitRoute, nil)
	ok := driveRoundRobin(t, nodes, "/limited", 10*time.Second, 400_000)
	total := sumInts(ok)
	t.Logf("admitted %d (per instance %v)", total, ok)
	if total < 495 || total > 605 {
		t.Fatalf("admitted %d over 10 s on three instances, want 550 within 10%%", total)
	}
	for i, n := range ok {
		if n == 0 {
			t.Errorf("gale-%d admitted nothing", i)
		}
	}
}

// waitLog waits until every node's log holds want, up to d.
func waitLog(t *testing.T, nodes []*clusterNode, want string, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for i, n := range nodes {
		for !strings.Contains(n.log.String(), want) {
			if time.Now().After(end) {
				t.Fatalf("gale-%d did not log %q within %v; its log:\n%s", i, want, d, n.log.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestClusterRateLimitStoreFailure stops Redis while three instances
// share a cluster limit: each falls back to its share (50/3 a second),
// says so once, and returns to the shared limit within 5 s of Redis
// coming back.
func TestClusterRateLimitStoreFailure(t *testing.T) {
	rs := redistest.Start(t)
	nodes := startCluster(t, 3, rs.Addr, ", instances: 3", "", clusterLimitRoute, nil)
	if ok := driveRoundRobin(t, nodes, "/limited", time.Second, 100_000); sumInts(ok) > 51+50+10 {
		t.Fatalf("admitted %d in the first second with Redis up, want at most about 101", sumInts(ok))
	}
	rs.Stop()
	const down = "cluster store unreachable"
	// The heartbeat notices within a second; requests keep being answered
	// meanwhile (from the leases held, then the share).
	end := time.Now().Add(5 * time.Second)
	for !allLogged(nodes, down) {
		if time.Now().After(end) {
			t.Fatalf("not every instance logged %q within 5 s", down)
		}
		driveRoundRobin(t, nodes, "/limited", 50*time.Millisecond, 100)
	}
	ok := driveRoundRobin(t, nodes, "/limited", 3*time.Second, 100_000)
	// Each instance: its share's burst (about 17) and 50/3 a second.
	for i, n := range ok {
		if n < 40 || n > 90 {
			t.Errorf("gale-%d admitted %d in 3 s on its share, want about 17+50", i, n)
		}
	}
	for i, n := range nodes {
		if c := strings.Count(n.log.String(), down); c != 1 {
			t.Errorf("gale-%d logged %q %d times, want once", i, down, c)
		}
	}
	rs.Restart()
	waitLog(t, nodes, "cluster store reachable again", 5*time.Second)
	for i, n := range nodes {
		if m := scrapeMetrics(t, n.ts.srv); !strings.Contains(m, "gale_cluster_store_up 1") || !strings.Contains(m, "gale_ratelimit_store_fallbacks_total 1") {
			t.Errorf("gale-%d metrics after recovery:\n%s", i, grepLines(m, "gale_cluster_", "gale_ratelimit_"))
		}
	}
	// The restarted Redis starts empty: a full burst, then the shared rate.
	ok = driveRoundRobin(t, nodes, "/limited", 2*time.Second, 100_000)
	if total := sumInts(ok); total < 100 || total > 170 {
		t.Fatalf("admitted %d in 2 s after recovery, want the cluster's 51+100 within 10%%", total)
	}
}

func allLogged(nodes []*clusterNode, s string) bool {
	for _, n := range nodes {
		if !strings.Contains(n.log.String(), s) {
			return false
		}
	}
	return true
}

// grepLines returns the lines of s that start with one of prefixes.
func grepLines(s string, prefixes ...string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				b.WriteString(l + "\n")
			}
		}
	}
	return b.String()
}

// scrapeMetrics returns srv's metrics text.
func scrapeMetrics(t *testing.T, srv *Server) string {
	t.Helper()
	var w metrics.Writer
	srv.WriteMetrics(&w)
	return string(w.Bytes())
}
