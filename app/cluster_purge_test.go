package app

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gale/internal/redistest"
)

// TestClusterPurge: a purge accepted by one instance reaches the static
// caches of all three within a second. The cache revalidates once an
// hour, so only a purge makes an instance see a changed file.
func TestClusterPurge(t *testing.T) {
	rs := redistest.Start(t)
	nodes := startCluster(t, 3, rs.Addr, "", "cache: {revalidate: 1h}\n",
		"  - {path: /, static: {root: ./site}}\n", map[string]string{"a.txt": "one\n"})
	get := func(n *clusterNode) string {
		resp, err := http.Get(n.ts.url("/a.txt"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for i, n := range nodes {
		if b := get(n); b != "one\n" {
			t.Fatalf("gale-%d: %q", i, b)
		}
		writeSettled(t, filepath.Join(n.ts.dir, "site", "a.txt"), []byte("two\n"))
		if b := get(n); b != "one\n" {
			t.Fatalf("gale-%d served the changed file before any purge: %q", i, b)
		}
	}
	start := time.Now()
	if n := nodes[1].ts.srv.PurgeCache("/a.txt"); n != 1 {
		t.Fatalf("purged %d entries on gale-1, want 1", n)
	}
	for i, n := range nodes {
		for get(n) != "two\n" {
			if time.Since(start) > time.Second {
				t.Fatalf("gale-%d still serves the purged entry after 1 s", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	t.Logf("all three served the new file %v after the purge", time.Since(start))
	for i, want := range []string{"1", "0", "1"} {
		if m := scrapeMetrics(t, nodes[i].ts.srv); !strings.Contains(m, "gale_cluster_purges_received_total "+want+"\n") {
			t.Errorf("gale-%d: %s", i, grepLines(m, "gale_cluster_purges"))
		}
	}
}
