package app

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricsConfig serves a site, a fixed response and a proxy route to an
// address nothing listens on, with metrics on a listener of their own.
func metricsConfig(dead string) string {
	return baseListen + `
server: {event_loops: 2}
metrics: {listen: "127.0.0.1:0"}
routes:
  - path: /
    static: {root: ./site}
  - path: /hello
    respond: {status: 200, body: "hello\n"}
  - path: /api/
    proxy: {to: ["http://` + dead + `"], retries: 0}
`
}

// deadAddr returns an address of 127.0.0.1 that refuses connections.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}

// scrape fetches and parses the server's metrics.
func scrape(t *testing.T, ts *testServer) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + ts.srv.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	return fams
}

// sum adds a family's samples whose labels include want (name, value
// pairs); a family without samples (no loop has taken a connection yet)
// sums to 0.
func sum(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	total := 0.0
	for _, m := range f.Metric {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		}
	}
	return total
}

func hasLabels(m *dto.Metric, want []string) bool {
	for i := 0; i < len(want); i += 2 {
		found := false
		for _, l := range m.Label {
			if l.GetName() == want[i] && l.GetValue() == want[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// The counters move by exactly what a known mix of requests did: eight
// connections with one request each (five static hits after a miss, two
// 404s, one proxied request to an upstream that refuses, answered 502),
// a successful reload and a rejected one; the per-loop samples add up to
// the server's totals.
func TestMetricsCounts(t *testing.T) {
	ts := startServer(t, metricsConfig(deadAddr(t)), map[string]string{"a.txt": "file a\n"})
	before := scrape(t, ts)
	get := func(path string, status int) {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.url(path), nil)
		req.Close = true // one connection per request
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Fatalf("%s: status %d, want %d", path, resp.StatusCode, status)
		}
	}
	for range 5 {
		get("/a.txt", 200)
	}
	get("/missing", 404)
	get("/nothere", 404)
	get("/api/x", 502)
	if _, err := ts.srv.Reload(ts.srv.sh.Set.Load().Cfg); err != nil {
		t.Fatal(err)
	}
	ts.srv.ReloadRejected()

	// The proxied response is counted once it ended, which may come a
	// moment after the client read it: wait for the count.
	var after map[string]*dto.MetricFamily
	waitUntil(5*time.Second, func() bool {
		after = scrape(t, ts)
		return sum(after, "gale_requests_total")-sum(before, "gale_requests_total") >= 8
	})
	delta := func(name string, labels ...string) float64 {
		return sum(after, name, labels...) - sum(before, name, labels...)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"gale_requests_total", nil, 8},
		{"gale_connections_accepted_total", nil, 8},
		{"gale_responses_total", []string{"class", "2xx"}, 5},
		{"gale_responses_total", []string{"class", "4xx"}, 2},
		{"gale_responses_total", []string{"class", "5xx"}, 1},
		{"gale_upstream_requests_total", nil, 1},
		{"gale_upstream_errors_total", nil, 1},
		{"gale_upstream_dial_failures_total", nil, 1},
		{"gale_cache_loads_total", nil, 2}, // a.txt, and the negative result for /missing (/nothere is another)
		{"gale_config_reloads_total", []string{"result", "success"}, 1},
		{"gale_config_reloads_total", []string{"result", "failure"}, 1},
	} {
		if got := delta(c.name, c.labels...); got != c.want && !(c.name == "gale_cache_loads_total" && got >= c.want) {
			t.Errorf("%s%v moved by %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	st := ts.srv.Stats()
	if got := sum(after, "gale_requests_total"); got != float64(st.Requests) {
		t.Errorf("requests over loops %v, Stats %d", got, st.Requests)
	}
	if got := sum(after, "gale_connections_accepted_total"); got != float64(st.Accepted) {
		t.Errorf("accepted over loops %v, Stats %d", got, st.Accepted)
	}
	if n := len(after["gale_requests_total"].Metric); float64(n) != sum(after, "gale_event_loops") || n < 1 || n > 2 {
		t.Errorf("%d loop samples, gale_event_loops %v", n, sum(after, "gale_event_loops"))
	}
	if sum(after, "gale_config_last_reload_success_timestamp_seconds") <= 0 || sum(after, "process_open_fds") <= 0 || sum(after, "go_goroutines") <= 0 {
		t.Errorf("reload time %v, open fds %v, goroutines %v", sum(after, "gale_config_last_reload_success_timestamp_seconds"),
			sum(after, "process_open_fds"), sum(after, "go_goroutines"))
	}
}

// A metrics.path with pattern syntax in it ("{", which a ServeMux would
// read as a wildcard and panic on) is served as the plain path it is.
func TestMetricsPathIsLiteral(t *testing.T) {
	cfg := strings.Replace(metricsConfig(deadAddr(t)), `metrics: {listen: "127.0.0.1:0"}`, `metrics: {listen: "127.0.0.1:0", path: "/m{"}`, 1)
	ts := startServer(t, cfg, map[string]string{"a.txt": "a"})
	for path, want := range map[string]int{"/m%7B": 200, "/m": 404, "/mx": 404} {
		resp, err := http.Get("http://" + ts.srv.MetricsAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// Only the configured path is served on the metrics listener, and the
// server's own listeners do not serve metrics.
func TestMetricsPaths(t *testing.T) {
	ts := startServer(t, metricsConfig(deadAddr(t)), map[string]string{"a.txt": "a"})
	for _, c := range []struct {
		url    string
		status int
	}{
		{"http://" + ts.srv.MetricsAddr() + "/metrics", 200},
		{"http://" + ts.srv.MetricsAddr() + "/metrics/x", 404},
		{"http://" + ts.srv.MetricsAddr() + "/", 404},
		{ts.url("/metrics"), 404},
	} {
		resp, err := http.Get(c.url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d, want %d", c.url, resp.StatusCode, c.status)
		}
	}
}

// promtool, Prometheus's own checker, finds nothing to say about the
// output (names, units, help, types).
func TestMetricsPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	ts := startServer(t, metricsConfig(deadAddr(t)), map[string]string{"a.txt": "a"})
	for _, p := range []string{"/a.txt", "/missing", "/api/x"} { // samples in every loop family
		if resp, err := http.Get(ts.url(p)); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	resp, err := http.Get("http://" + ts.srv.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte(`gale_requests_total{loop="0"}`)) {
		t.Fatalf("no loop samples:\n%s", body)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
