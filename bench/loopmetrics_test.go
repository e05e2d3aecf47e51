package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	"gale/metrics"
)

// galeScrape renders per-loop counters the way gale's metrics listener
// does (the same writer, the same families around them): requests and
// accepted connections for loops "0", "1", ...
func galeScrape(requests, accepted []uint64) string {
	var w metrics.Writer
	w.Family("gale_connections_accepted_total", metrics.Counter, "Client connections accepted, by event loop.")
	for i, v := range accepted {
		w.Uint("gale_connections_accepted_total", v, "loop", fmt.Sprint(i))
	}
	w.Family("gale_connections_open", metrics.Gauge, "Client connections open, by event loop.")
	for i := range accepted {
		w.Int("gale_connections_open", 3, "loop", fmt.Sprint(i))
	}
	w.Family("gale_requests_total", metrics.Counter, "Requests answered (errors included), every protocol, by event loop.")
	for i, v := range requests {
		w.Uint("gale_requests_total", v, "loop", fmt.Sprint(i))
	}
	w.Family("gale_http2_requests_total", metrics.Counter, "HTTP/2 streams answered (included in gale_requests_total).")
	for i := range requests {
		w.Uint("gale_http2_requests_total", 999, "loop", fmt.Sprint(i))
	}
	w.Family("gale_responses_total", metrics.Counter, "Responses by status class, by event loop.")
	for i, v := range requests {
		w.Uint("gale_responses_total", v, "loop", fmt.Sprint(i), "class", "2xx")
	}
	w.Family("gale_event_loops", metrics.Gauge, "Event loops that have taken a connection.")
	w.Int("gale_event_loops", int64(len(requests)))
	w.Family("gale_cache_compressions_total", metrics.Counter, "Bodies compressed on the fly, by encoding.")
	w.Uint("gale_cache_compressions_total", 7, "encoding", "gzip")
	return string(w.Bytes())
}

func TestParseLoopMetrics(t *testing.T) {
	got, err := parseLoopMetrics(strings.NewReader(galeScrape([]uint64{1200, 800}, []uint64{40, 24})))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]loopSample{"0": {Requests: 1200, Accepted: 40}, "1": {Requests: 800, Accepted: 24}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// The format's other spellings: spaces, a trailing comma, a
	// timestamp, escapes in other labels, a float value, other families
	// with similar names, label order.
	text := "# HELP gale_requests_total Requests.\n" +
		"# TYPE gale_requests_total counter\n" +
		"gale_requests_total{ loop = \"0\" , } 10 1700000000000\n" +
		"gale_requests_total{note=\"a \\\"q\\\" \\\\ \\n}\",loop=\"1\"} 2.5e1\n" +
		"gale_requests_total_other{loop=\"0\"} 5\n" +
		"gale_http2_requests_total{loop=\"0\"} 5\n" +
		"gale_connections_accepted_total{loop=\"1\"} 4\n" +
		"\n" +
		"process_open_fds 12\n"
	got, err = parseLoopMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]loopSample{"0": {Requests: 10}, "1": {Requests: 25, Accepted: 4}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// Before any connection a loop family is declared with no sample.
	got, err = parseLoopMetrics(strings.NewReader("# TYPE gale_requests_total counter\n# TYPE gale_event_loops gauge\ngale_event_loops 0\n"))
	if err != nil || len(got) != 0 {
		t.Fatalf("empty families: %v %v", got, err)
	}
	for name, bad := range map[string]string{
		"not gale":         "# TYPE http_requests_total counter\nhttp_requests_total 4\n",
		"empty":            "",
		"no loop label":    "gale_requests_total 4\n",
		"no value":         "gale_requests_total{loop=\"0\"}\n",
		"bad value":        "gale_requests_total{loop=\"0\"} many\n",
		"unquoted label":   "gale_requests_total{loop=0} 1\n",
		"open label value": "gale_requests_total{loop=\"0} 1\n",
		"extra fields":     "gale_requests_total{loop=\"0\"} 1 2 3\n",
	} {
		if got, err := parseLoopMetrics(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: accepted %q as %+v", name, bad, got)
		}
	}
}

func TestLoopDeltas(t *testing.T) {
	before := map[string]loopSample{"0": {Requests: 100, Accepted: 5}, "1": {Requests: 7, Accepted: 1}}
	after := map[string]loopSample{
		"0": {Requests: 700, Accepted: 37},  // +600, +32
		"1": {Requests: 907, Accepted: 33},  // +900, +32
		"2": {Requests: 300, Accepted: 2},   // new during the run: from zero
		"3": {Requests: 5, Accepted: 1},     // reset: from zero
		"4": {Requests: 600, Accepted: 200}, // ties loop 0 on requests
	}
	before["3"] = loopSample{Requests: 50, Accepted: 9}
	got := loopDeltas(before, after)
	want := []loopRun{
		{Loop: "1", Requests: 900, Accepted: 32},
		{Loop: "0", Requests: 600, Accepted: 32},
		{Loop: "4", Requests: 600, Accepted: 200},
		{Loop: "2", Requests: 300, Accepted: 2},
		{Loop: "3", Requests: 5, Accepted: 1},
	}
	for i := range want {
		want[i].Share = float64(want[i].Requests) / 2405
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if n := loopRequests(got); n != 2405 {
		t.Errorf("sum %d", n)
	}
	// Labels order numerically: "10" after "9".
	got = loopDeltas(nil, map[string]loopSample{"10": {}, "9": {}})
	if got[0].Loop != "9" || got[1].Loop != "10" || got[0].Share != 0 {
		t.Errorf("idle loops: %+v", got)
	}
}

func TestScrapeLoops(t *testing.T) {
	body := galeScrape([]uint64{3, 4}, []uint64{1, 1})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/m" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	defer srv.Close()
	got, err := scrapeLoops(srv.URL + "/m")
	if err != nil || len(got) != 2 || got["1"].Requests != 4 {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := scrapeLoops(srv.URL + "/metrics"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404 was accepted: %v", err)
	}
	runs, why := loopsAfter(srv.URL+"/m", map[string]loopSample{"0": {Requests: 1}}, nil)
	if why != "" || len(runs) != 2 || loopRequests(runs) != 6 {
		t.Errorf("loopsAfter: %+v %q", runs, why)
	}
	if runs, why := loopsAfter("", nil, nil); runs != nil || why != "" {
		t.Errorf("no metrics: %+v %q", runs, why)
	}
}

func TestGaleConfigMetrics(t *testing.T) {
	e := testEnv(t)
	e.MetricsPort = 19180
	w, _ := findWorkload("static-128")
	text := galeConfig(e, w)
	if !strings.Contains(text, "listen: [\"127.0.0.1:18080\"]\nmetrics: {listen: \"127.0.0.1:19180\"}\nserver:\n") {
		t.Fatalf("no metrics listener:\n%s", text)
	}
	if p := metricsPath(text); p != "/metrics" {
		t.Errorf("path %q", p)
	}
	spec := serverSpec{Name: "gale", Bin: "/bin/gale"}
	l, err := spec.prepareGale(e, w)
	if err != nil || l.MetricsURL != "http://127.0.0.1:19180/metrics" {
		t.Errorf("launch %+v %v", l, err)
	}
}

func TestGaleUserConfigMetrics(t *testing.T) {
	path, _ := userConfigFixture(t)
	e := testEnv(t)
	e.UserConfig, e.Port, e.MetricsPort = path, 4321, 4322
	text, err := galeUserConfig(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "metrics:\n    listen: \"127.0.0.1:4322\"\n") {
		t.Errorf("metrics not added:\n%s", text)
	}
	// A config with its own metrics block keeps its path; only the
	// address is the bench's.
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src = []byte(strings.Replace(string(src), "routes:", "metrics:\n  listen: \"0.0.0.0:9180\"\n  path: /_stats\nroutes:", 1))
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	text, err = galeUserConfig(e)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "9180") || !strings.Contains(text, "listen: \"127.0.0.1:4322\"") || metricsPath(text) != "/_stats" {
		t.Errorf("metrics not overridden:\n%s", text)
	}
	spec := serverSpec{Name: "gale", Bin: "/bin/gale"}
	if l, err := spec.prepareGale(e, workload{}); err != nil || l.MetricsURL != "http://127.0.0.1:4322/_stats" {
		t.Errorf("launch %+v %v", l, err)
	}
}
