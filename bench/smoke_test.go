package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMain lets the test binary act as the proxy upstream when the harness
// starts it with the hidden subcommand (os.Executable is the test binary).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == upstreamCmd {
		os.Exit(upstreamMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == openLoopCmd {
		os.Exit(openLoopMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// runHarness runs the harness in-process and decodes its results.json.
func runHarness(t *testing.T, args ...string) (string, *results) {
	t.Helper()
	out := t.TempDir()
	args = append(args, "-out", out, "-pin-harness=false")
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"results.md", "chart.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Fatal(err)
		}
	}
	return stdout.String(), &res
}

func needWrk(t *testing.T) {
	t.Helper()
	if findBinary("wrk") == "" {
		t.Skipf("wrk not installed: %s", installHint)
	}
	if findBinary("taskset") == "" {
		t.Skip("taskset not installed (util-linux)")
	}
	if onlineCPUs() < 2 {
		t.Skip("needs two CPUs (server on 0, client on 1)")
	}
}

// TestSmokeGale runs the harness end to end against gale alone.
func TestSmokeGale(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run skipped in -short mode")
	}
	needWrk(t)
	modRoot := findModuleRoot()
	bin, err := buildGale(modRoot, t.TempDir())
	if err != nil {
		t.Skipf("gale cannot be built yet: %v", err)
	}
	md, res := runHarness(t, "-servers", "gale", "-workloads", "respond,static-128", "-rounds", "1", "-seconds", "1", "-warmup", "0", "-gale-bin", bin)
	if len(res.Measurements) != 2 {
		t.Fatalf("%d measurements, want 2", len(res.Measurements))
	}
	ok := 0
	var reasons []string
	for _, m := range res.Measurements {
		if m.Status == "ok" {
			ok++
			if m.Wrk.Requests == 0 || m.CPUSeconds <= 0 || m.PeakRSSKiB == 0 || !m.CheckBefore.OK || !m.CheckAfter.OK {
				t.Errorf("implausible measurement %+v", m)
			}
			// gale's own count of the run's requests: every one wrk
			// completed, plus at most one in flight per connection when
			// wrk stopped.
			if n := loopRequests(m.Loops); len(m.Loops) == 0 || n < uint64(m.Wrk.Requests) || n > uint64(m.Wrk.Requests)+64 {
				t.Errorf("%s: gale counted %d requests on %+v (%s), wrk %d", m.Workload, n, m.Loops, m.LoopsError, m.Wrk.Requests)
			}
		} else {
			reasons = append(reasons, m.Workload+": "+m.Reason)
		}
	}
	for _, want := range []string{"## respond", "## static-128", "| gale |"} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	if ok == 0 {
		t.Skipf("gale cannot serve yet (the harness reported it): %s", strings.Join(reasons, "; "))
	}
}

// TestSmokeNginx runs the harness against nginx, with a proxy workload so
// the upstream subprocess is exercised too.
func TestSmokeNginx(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run skipped in -short mode")
	}
	needWrk(t)
	if findBinary("nginx") == "" {
		t.Skipf("nginx not installed: %s", installHint)
	}
	md, res := runHarness(t, "-servers", "nginx", "-workloads", "gzip-js,proxy-128", "-rounds", "1", "-seconds", "1", "-warmup", "0")
	for _, m := range res.Measurements {
		if m.Status != "ok" {
			t.Errorf("%s: %s: %s", m.Workload, m.Status, m.Reason)
			continue
		}
		if m.Workload == "proxy-128" && (m.Upstream == nil || m.Upstream.Requests == 0) {
			t.Errorf("proxy-128: upstream saw no requests: %+v", m.Upstream)
		}
		if m.Workload == "gzip-js" && m.CheckAfter.ContentEncoding != "gzip" {
			t.Errorf("gzip-js: %+v", m.CheckAfter)
		}
	}
	if !strings.Contains(md, "| nginx | ") || res.Servers[0].Version == "" || len(res.Upstream) == 0 {
		t.Errorf("report:\n%s", md)
	}
}

// TestSmokeH2Nginx runs one small HTTP/2 round against nginx over TLS 1.3
// and checks that h2load's figures reached the measurement.
func TestSmokeH2Nginx(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run skipped in -short mode")
	}
	if findBinary("h2load") == "" {
		t.Skip("h2load not installed: apt-get install nghttp2-client")
	}
	if findBinary("nginx") == "" {
		t.Skipf("nginx not installed: %s", installHint)
	}
	if findBinary("taskset") == "" || onlineCPUs() < 2 {
		t.Skip("needs taskset (util-linux) and two CPUs (server on 0, client on 1)")
	}
	const n = 5000
	md, res := runHarness(t, "-servers", "nginx", "-workloads", "h2-respond", "-rounds", "1", "-seconds", "1", "-warmup", "0",
		"-h2-requests", strconv.Itoa(n))
	if len(res.Measurements) != 1 {
		t.Fatalf("%d measurements, want 1", len(res.Measurements))
	}
	m := res.Measurements[0]
	if m.Status != "ok" {
		t.Fatalf("%s: %s", m.Status, m.Reason)
	}
	h := m.H2load
	if h == nil || h.Protocol != "h2" || h.TLSVersion != "TLSv1.3" || h.Status[0] != n || h.LoggedCount != n || h.LatencyUs["99"] <= 0 {
		t.Errorf("h2load result %+v", h)
	}
	if m.Wrk.Requests != n || m.CPUSeconds <= 0 || m.PeakRSSKiB == 0 || m.CheckBefore.Proto != "HTTP/2.0" || !m.CheckAfter.OK {
		t.Errorf("implausible measurement %+v", m)
	}
	if res.Cert == nil || res.Cert.KeyType != "ECDSA P-256" || res.H2loadVer == "" {
		t.Errorf("run lacks its certificate or h2load version: %+v %q", res.Cert, res.H2loadVer)
	}
	if !strings.Contains(md, "## h2-respond") || !strings.Contains(md, "| nginx | ") || !strings.Contains(md, "h2load") {
		t.Errorf("report:\n%s", md)
	}
}

// TestSmokeSweepOpenLoop runs a two-second open-loop sweep end to end:
// gale from a user's config with relative paths, a weighted mix of two of
// its URLs, the baseline and its A/A copy at 1,000 requests/s.
func TestSmokeSweepOpenLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run skipped in -short mode")
	}
	if findBinary("taskset") == "" || onlineCPUs() < 2 {
		t.Skip("needs taskset and two CPUs")
	}
	bin, err := buildGale(findModuleRoot(), t.TempDir())
	if err != nil {
		t.Skipf("gale cannot be built yet: %v", err)
	}
	cfg, _ := userConfigFixture(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"sweep", "-config", cfg, "-url", "/index.html=3", "-url", "/app.js", "-vary", "event_loops=2",
		"-rates", "1000", "-rounds", "1", "-seconds", "1", "-warmup", "0", "-gale-bin", bin, "-out", out, "-pin-harness=false"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stderr.String(), stdout.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Measurements) != 3 || res.Custom == nil || len(res.Custom.Mix) != 2 {
		t.Fatalf("%d measurements, custom %+v", len(res.Measurements), res.Custom)
	}
	for _, m := range res.Measurements {
		ol := m.OpenLoop
		if m.Status != "ok" || ol == nil || ol.Due != 1000 || ol.Completed+ol.Errors+ol.Unfinished != ol.Due || ol.Completed == 0 || !m.CheckBefore.OK {
			t.Fatalf("%s: %s %s %+v", m.Label, m.Status, m.Reason, ol)
		}
		if m.Rate != 1000 || m.CPUSeconds <= 0 || len(m.Threads) == 0 || ol.Non2xx != 0 {
			t.Errorf("%s: rate %v cpu %v threads %d non-2xx %d", m.Label, m.Rate, m.CPUSeconds, len(m.Threads), ol.Non2xx)
		}
		checkLoopCounts(t, m)
	}
	md := stdout.String()
	for _, want := range []string{"**Warning: 1 round(s) cannot measure the noise floor", "| baseline (A/A) | 1,000 |", "/index.html=3,/app.js=1", "sustained rate",
		"### Per-loop balance", "| event_loops=2 | 2 | kernel (SO_REUSEPORT) |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "chart-latency.svg")); err != nil {
		t.Error(err)
	}
	if log, err := os.ReadFile(filepath.Join(out, "runs", "r1-custom-baseline-1000rps", "access.log")); err != nil || !strings.Contains(string(log), "GET /app.js") {
		t.Errorf("the site's access log was not moved into the run directory: %v", err)
	}
}

// checkLoopCounts checks an open-loop run's per-loop counts from gale's
// metrics: one loop per event loop of the variant (the user's config has
// one), each with requests, adding up to the run's: every request the
// generator completed and at most those it sent.
func checkLoopCounts(t *testing.T, m measurement) {
	t.Helper()
	want := 1
	if settingOf(m.Settings, "event_loops") == "2" {
		want = 2
	}
	ol := m.OpenLoop
	n := loopRequests(m.Loops)
	if len(m.Loops) != want || n < uint64(ol.Completed) || n > uint64(ol.Sent) {
		t.Fatalf("%s: %d loop(s) %+v (%s), %d requests; the generator completed %d of %d sent", m.Label, len(m.Loops), m.Loops, m.LoopsError, n, ol.Completed, ol.Sent)
	}
	var share float64
	for _, l := range m.Loops {
		if l.Requests == 0 || l.Accepted == 0 {
			t.Errorf("%s: loop %s took %d requests on %d connections", m.Label, l.Loop, l.Requests, l.Accepted)
		}
		share += l.Share
	}
	if share < 0.999 || share > 1.001 {
		t.Errorf("%s: shares add up to %v", m.Label, share)
	}
}

// TestSmokeGaleFixedRate runs the comparison at a fixed offered rate: the
// open-loop generator replaces wrk, and CPU per request is measured at
// that load.
func TestSmokeGaleFixedRate(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run skipped in -short mode")
	}
	needWrk(t)
	bin, err := buildGale(findModuleRoot(), t.TempDir())
	if err != nil {
		t.Skipf("gale cannot be built yet: %v", err)
	}
	md, res := runHarness(t, "-servers", "gale", "-workloads", "respond", "-rate", "1500", "-rounds", "1", "-seconds", "1", "-warmup", "0", "-gale-bin", bin)
	if len(res.Measurements) != 1 || len(res.Options.Rates) != 1 {
		t.Fatalf("%d measurements, rates %v", len(res.Measurements), res.Options.Rates)
	}
	m := res.Measurements[0]
	if m.Status != "ok" || m.Rate != 1500 || m.OpenLoop == nil || m.OpenLoop.Due != 1500 || m.Wrk.Requests != m.OpenLoop.Completed || m.CPUUsPerReq <= 0 {
		t.Fatalf("%s %s rate %v open loop %+v", m.Status, m.Reason, m.Rate, m.OpenLoop)
	}
	if len(m.WrkCommand) < 5 || m.WrkCommand[4] != openLoopCmd {
		t.Errorf("load command %v", m.WrkCommand)
	}
	if !strings.Contains(md, "**Open loop**") {
		t.Errorf("report does not say it was open loop:\n%s", md)
	}
}
