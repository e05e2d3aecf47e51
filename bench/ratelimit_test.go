package main

import (
	"errors"
	"strings"
	"testing"

	"gale/config"
)

// TestRateLimitConfig: the ratelimit workloads put the limit on the
// static route, with the cluster block only for scope cluster; gale's
// own parser accepts both configs; every peer is not supported; "all"
// leaves them out.
func TestRateLimitConfig(t *testing.T) {
	e := testEnv(t)
	e.Redis = "127.0.0.1:6399"
	for _, scope := range []string{"local", "cluster"} {
		w, ok := findWorkload("ratelimit-" + scope + "-128")
		if !ok || w.RateLimit != scope {
			t.Fatalf("ratelimit-%s-128: %+v", scope, w)
		}
		got := galeConfig(e, w)
		line := "  - path: /\n    rate_limit: {rate: 200000/s, burst: 200000, scope: " + scope + "}\n    static:\n"
		if !strings.Contains(got, line) {
			t.Errorf("%s: no %q in\n%s", w.ID, line, got)
		}
		if hasCluster := strings.Contains(got, "cluster:\n  redis: {address: \"127.0.0.1:6399\""); hasCluster != (scope == "cluster") {
			t.Errorf("%s: cluster block %v:\n%s", w.ID, hasCluster, got)
		}
		if _, err := config.Parse([]byte(got), "gale.yaml"); err != nil {
			t.Errorf("%s: %v\n%s", w.ID, err, got)
		}
		for _, name := range []string{"nginx", "caddy", "lighttpd", "h2o"} {
			s := &serverSpec{Name: name}
			if _, err := s.prepare(e, w); !errors.Is(err, errUnsupported) {
				t.Errorf("%s on %s: %v, want not supported", w.ID, name, err)
			}
		}
	}
	all, _ := parseWorkloads("all")
	if needsRedis(all) {
		t.Error("all includes a workload that needs Redis")
	}
	if ws, _ := parseWorkloads("ratelimit-local-128,ratelimit-cluster-128"); !needsRedis(ws) {
		t.Error("ratelimit-cluster-128 does not need Redis")
	}
}
