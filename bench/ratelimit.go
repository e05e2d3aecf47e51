package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The ratelimit workloads: the 128-byte static file behind gale's
// rate_limit, once with scope local and once with scope cluster, so that
// the limiter's own cost per request can be compared. The limit is far
// above what wrk reaches on one client CPU, so no request is refused and
// every response is the file. For scope cluster gale talks to a
// redis-server the harness starts once per run on the client CPUs
// (beside wrk, like the proxy upstream and PHP-FPM): its CPU time is
// recorded apart (redis_cpu_us_per_req), not counted as gale's. The
// workloads are gale's alone: the peers are reported not supported.

// Rate and burst of the ratelimit workloads' limit. A cluster lease
// holds a tenth of a second of the rate (at most burst+1), here 20,000
// requests: at the few tens of thousands of requests a second of this
// machine, gale asks Redis for a lease a few times a second.
const (
	benchRate  = "200000/s"
	benchBurst = 200000
)

// rateLimitWorkloads are measured only when named (-workloads
// ratelimit-local-128,ratelimit-cluster-128).
var rateLimitWorkloads = []workload{
	{ID: "ratelimit-local-128", Path: "/s128.bin", Fixture: "s128.bin", RateLimit: "local",
		Desc: "static 128 B under rate_limit scope local (never reached); gale only"},
	{ID: "ratelimit-cluster-128", Path: "/s128.bin", Fixture: "s128.bin", RateLimit: "cluster",
		Desc: "static 128 B under rate_limit scope cluster through the harness's redis-server (never reached); gale only"},
}

// namedOnlyWorkloads are the workloads "all" leaves out.
func namedOnlyWorkloads() []workload {
	return append(phpWorkloads[:len(phpWorkloads):len(phpWorkloads)], rateLimitWorkloads...)
}

// knownWorkloads is every workload, "all" and the named-only ones.
func knownWorkloads() []workload {
	return append(allWorkloads[:len(allWorkloads):len(allWorkloads)], namedOnlyWorkloads()...)
}

// needsRedis reports whether any workload limits with scope cluster.
func needsRedis(ws []workload) bool {
	for _, w := range ws {
		if w.RateLimit == "cluster" {
			return true
		}
	}
	return false
}

// galeRateLimit is the rate_limit line of the static route for w, and
// the top-level cluster block it needs ("" for either when none).
func galeRateLimit(e serverEnv, w workload) (route, top string) {
	if w.RateLimit == "" {
		return "", ""
	}
	route = fmt.Sprintf("    rate_limit: {rate: %s, burst: %d, scope: %s}\n", benchRate, benchBurst, w.RateLimit)
	if w.RateLimit == "cluster" {
		top = fmt.Sprintf("cluster:\n  redis: {address: %q, prefix: %q}\n", e.Redis, "bench:"+filepath.Base(e.Dir)+":")
	}
	return route, top
}

// startRedis starts redis-server on a free 127.0.0.1 port, pinned to the
// client CPUs, persistence off, its files in the output directory.
func (r *runner) startRedis() error {
	bin := findBinary("redis-server")
	if bin == "" {
		return fmt.Errorf("redis-server not found (apt-get install redis-server)")
	}
	dir := filepath.Join(r.out, "redis")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	r.redisAddr = fmt.Sprintf("127.0.0.1:%d", port)
	r.redisArgv = []string{bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--protected-mode", "no"}
	p, err := startProc(r.redisArgv, nil, r.opts.ClientCPUs, filepath.Join(dir, "stderr.log"))
	if err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for !redisPing(r.redisAddr) {
		if time.Now().After(deadline) || p.exited() {
			p.stop(2 * time.Second)
			return fmt.Errorf("redis-server did not answer PING on %s: %s", r.redisAddr, p.logTail(400))
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.redis = p
	r.redisVersion = commandOutput(bin, "--version")
	return nil
}

// redisPing reports whether a Redis server at addr answers PING.
func redisPing(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

// redisSample reads the Redis server's process tree, or a zero sample
// without one.
func (r *runner) redisSample() treeSample {
	if r.redis == nil {
		return treeSample{}
	}
	s, _ := sampleTree(r.redis.pid())
	return s
}

// redisCPU records in m what the Redis server spent between s0 and s1.
func (r *runner) redisCPU(m *measurement, s0, s1 treeSample) {
	m.RedisCPUSeconds = r.treeCPUSeconds(s0, s1)
	if m.Wrk != nil && m.Wrk.Requests > 0 {
		m.RedisCPUUsPerReq = m.RedisCPUSeconds * 1e6 / float64(m.Wrk.Requests)
	}
}
