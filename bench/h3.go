package main

// The HTTP/3 comparison (go run ./bench h3): gale and Caddy, each with
// HTTP/3 on, pinned to the server CPU with one worker, loaded in turn by
// an in-process HTTP/3 load generator (quic-go's http3 client, a fixed
// number of QUIC connections with a fixed number of requests in flight
// on each) that runs on the CPUs the bench itself is pinned to. Two
// workloads, a 128-byte static file and a 128-byte fixed response; rounds
// interleave the servers in a rotating order; what is reported is each
// server's CPU time per request (schedstat, every thread) and its rate.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// h3Options are the flags of the HTTP/3 comparison.
type h3Options struct {
	duration  time.Duration
	warmup    time.Duration
	rounds    int
	conns     int
	streams   int
	serverCPU string
	out       string
	galeBin   string
	caddyBin  string
}

// h3Body is the body of both workloads: 128 bytes.
var h3Body = strings.Repeat("0123456789abcdef", 7) + "0123456789abcde\n"

// h3Result is one measurement of one server on one workload.
type h3Result struct {
	Server      string  `json:"server"`
	Workload    string  `json:"workload"`
	Round       int     `json:"round"`
	Requests    int64   `json:"requests"`
	Errors      int64   `json:"errors"`
	Seconds     float64 `json:"seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	RPS         float64 `json:"rps"`
	CPUPerReqUS float64 `json:"cpu_per_request_us"`
}

// runH3 runs the comparison and returns the exit code.
func runH3(args []string, stdout, stderr io.Writer) int {
	var o h3Options
	fs := flag.NewFlagSet("h3", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured time per server, workload and round")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured load before each measurement")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds; the servers' order rotates between rounds")
	fs.IntVar(&o.conns, "conns", 4, "QUIC connections per measurement")
	fs.IntVar(&o.streams, "streams", 16, "requests in flight on each connection")
	fs.StringVar(&o.serverCPU, "server-cpu", "0", "CPU list the servers are pinned to (taskset -c)")
	fs.StringVar(&o.out, "out", "", "directory for the results (default: bench/results of the module)")
	fs.StringVar(&o.galeBin, "gale-bin", "", "prebuilt gale binary (default: go build ./cmd/gale)")
	fs.StringVar(&o.caddyBin, "caddy-bin", findBinary("caddy"), "caddy binary")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := h3Compare(o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "bench h3:", err)
		return 1
	}
	return 0
}

// h3Server is one running server under test.
type h3Server struct {
	name string
	base string
	proc *proc
}

// h3Compare prepares the servers, runs the rounds and writes the report.
func h3Compare(o h3Options, stdout, stderr io.Writer) error {
	if o.caddyBin == "" {
		return fmt.Errorf("caddy not found (%s)", installHint)
	}
	dir, err := os.MkdirTemp("", "gale-bench-h3-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cert, err := writeBenchCert(filepath.Join(dir, "cert"))
	if err != nil {
		return err
	}
	site := filepath.Join(dir, "site")
	if err := os.MkdirAll(site, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(site, "static.txt"), []byte(h3Body), 0o644); err != nil {
		return err
	}
	if o.galeBin == "" {
		if o.galeBin, err = buildGale(findModuleRoot(), dir); err != nil {
			return err
		}
	}
	servers, err := h3Start(o, dir, site, cert)
	defer func() {
		for _, s := range servers {
			s.proc.stop(5 * time.Second)
		}
	}()
	if err != nil {
		return err
	}
	results, err := h3Rounds(o, servers, cert, stderr)
	if err != nil {
		return err
	}
	return h3Report(o, results, stdout)
}

// h3Start launches gale and Caddy on free ports and waits until each
// answers over HTTP/3.
func h3Start(o h3Options, dir, site string, cert *benchCert) ([]*h3Server, error) {
	galePort, err := freePort()
	if err != nil {
		return nil, err
	}
	caddyPort, err := freePort()
	if err != nil {
		return nil, err
	}
	galeYAML := fmt.Sprintf(`listen:
  - {address: "127.0.0.1:%d", http3: true, tls: {certificates: [{cert: %q, key: %q}]}}
server: {event_loops: 1}
log: {level: warn}
routes:
  - path: /respond
    respond: {status: 200, body: %q, content_type: "text/plain; charset=utf-8"}
  - path: /
    static: {root: %q, compress: {encodings: []}}
`, galePort, cert.CertFile, cert.KeyFile, h3Body, site)
	galeCfg := filepath.Join(dir, "gale.yaml")
	if err := os.WriteFile(galeCfg, []byte(galeYAML), 0o644); err != nil {
		return nil, err
	}
	caddyCfg := filepath.Join(dir, "caddy.json")
	if err := os.WriteFile(caddyCfg, h3CaddyConfig(caddyPort, site, cert), 0o644); err != nil {
		return nil, err
	}
	env := []string{"GOMAXPROCS=1", "HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, "xdg"), "XDG_DATA_HOME=" + filepath.Join(dir, "xdg")}
	var out []*h3Server
	for _, l := range []struct {
		name string
		argv []string
		port int
	}{
		{"gale", []string{o.galeBin, "serve", "-c", galeCfg}, galePort},
		{"caddy", []string{o.caddyBin, "run", "--config", caddyCfg}, caddyPort},
	} {
		p, err := startProc(l.argv, env, o.serverCPU, filepath.Join(dir, l.name+".log"))
		if err != nil {
			return out, err
		}
		s := &h3Server{name: l.name, base: fmt.Sprintf("https://127.0.0.1:%d", l.port), proc: p}
		out = append(out, s)
		if err := h3Ready(s, cert); err != nil {
			return out, err
		}
	}
	return out, nil
}

// h3CaddyConfig renders Caddy's JSON config: HTTP/1.1, HTTP/2 and HTTP/3
// on one TLS listener with the bench certificate, the fixed response and
// the file server; no logs but errors.
func h3CaddyConfig(port int, site string, cert *benchCert) []byte {
	type obj = map[string]any
	server := obj{
		"listen":                  []string{fmt.Sprintf("127.0.0.1:%d", port)},
		"protocols":               []string{"h1", "h2", "h3"},
		"automatic_https":         obj{"disable": true},
		"tls_connection_policies": []obj{{"certificate_selection": obj{"any_tag": []string{"bench"}}}},
		"routes": []obj{
			{
				"match":    []obj{{"path": []string{"/respond"}}},
				"handle":   []obj{{"handler": "static_response", "status_code": 200, "body": h3Body, "headers": obj{"Content-Type": []string{"text/plain; charset=utf-8"}}}},
				"terminal": true,
			},
			{"handle": []obj{{"handler": "file_server", "root": site}}},
		},
	}
	cfg := obj{
		"admin":   obj{"disabled": true, "config": obj{"persist": false}},
		"logging": obj{"logs": obj{"default": obj{"level": "ERROR"}}},
		"apps": obj{
			"http": obj{"servers": obj{"bench": server}},
			"tls":  obj{"certificates": obj{"load_files": []obj{{"certificate": cert.CertFile, "key": cert.KeyFile, "tags": []string{"bench"}}}}},
		},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	return b
}

// h3Ready waits until s answers both workloads over HTTP/3 with the
// expected body.
func h3Ready(s *h3Server, cert *benchCert) error {
	tr := h3Transport(cert)
	defer tr.Close()
	c := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := h3Check(c, s.base)
		if err == nil {
			return nil
		}
		if s.proc.exited() || time.Now().After(deadline) {
			return fmt.Errorf("%s not ready over HTTP/3: %v (log: %s)", s.name, err, s.proc.logTail(300))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// h3Check fetches both workloads once and checks protocol and body.
func h3Check(c *http.Client, base string) error {
	for _, path := range []string{"/static.txt", "/respond"} {
		resp, err := c.Get(base + path)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.ProtoMajor != 3 || resp.StatusCode != 200 || string(b) != h3Body {
			return fmt.Errorf("%s: %s %d, %d bytes, %v", path, resp.Proto, resp.StatusCode, len(b), err)
		}
	}
	return nil
}

// h3Transport is an HTTP/3 client transport trusting the bench
// certificate: one QUIC connection per transport.
func h3Transport(cert *benchCert) *http3.Transport {
	tc := cert.clientConfig()
	tc.NextProtos = nil
	return &http3.Transport{TLSClientConfig: tc, DisableCompression: true}
}

// h3Rounds measures every server on every workload, rounds interleaved
// with the servers' order rotating.
func h3Rounds(o h3Options, servers []*h3Server, cert *benchCert, stderr io.Writer) ([]h3Result, error) {
	var out []h3Result
	for r := 0; r < o.rounds; r++ {
		for i := range servers {
			s := servers[(i+r)%len(servers)]
			for _, wl := range []string{"static", "respond"} {
				res, err := h3Measure(o, s, wl, cert)
				if err != nil {
					return out, err
				}
				res.Round = r + 1
				fmt.Fprintf(stderr, "round %d %-5s %-7s %8.0f req/s %7.1f µs CPU/req (%d errors)\n", res.Round, s.name, wl, res.RPS, res.CPUPerReqUS, res.Errors)
				out = append(out, res)
			}
		}
	}
	return out, nil
}

// h3Measure loads s with workload wl: a warm-up, then the measured
// stretch between two readings of the server's CPU time.
func h3Measure(o h3Options, s *h3Server, wl string, cert *benchCert) (h3Result, error) {
	path := "/static.txt"
	if wl == "respond" {
		path = "/respond"
	}
	load := newH3Load(o.conns, o.streams, s.base+path, cert)
	defer load.close()
	load.run(o.warmup)
	before, err := sampleTree(s.proc.pid())
	if err != nil {
		return h3Result{}, err
	}
	start := time.Now()
	reqs, errs := load.run(o.duration)
	secs := time.Since(start).Seconds()
	after, err := sampleTree(s.proc.pid())
	if err != nil {
		return h3Result{}, err
	}
	cpu := float64(after.CPUNanos-before.CPUNanos) / 1e9
	if before.CPUNanos == 0 || after.CPUNanos == 0 {
		cpu = float64(after.CPUTicks-before.CPUTicks) / float64(clockTicks())
	}
	res := h3Result{Server: s.name, Workload: wl, Requests: reqs, Errors: errs, Seconds: secs, CPUSeconds: cpu}
	if reqs > 0 {
		res.RPS = float64(reqs) / secs
		res.CPUPerReqUS = cpu / float64(reqs) * 1e6
	}
	if reqs == 0 || errs > reqs/100 {
		return res, fmt.Errorf("%s %s: %d requests, %d errors", s.name, wl, reqs, errs)
	}
	return res, nil
}

// h3Load is the load generator: conns QUIC connections (one transport
// each), streams requests in flight on each, every body read through and
// its length checked.
type h3Load struct {
	url     string
	streams int
	trs     []*http3.Transport
	clients []*http.Client
}

func newH3Load(conns, streams int, url string, cert *benchCert) *h3Load {
	l := &h3Load{url: url, streams: streams}
	for range conns {
		tr := h3Transport(cert)
		l.trs = append(l.trs, tr)
		l.clients = append(l.clients, &http.Client{Transport: tr, Timeout: 10 * time.Second})
	}
	return l
}

// run loads for d and returns the requests answered and the errors.
func (l *h3Load) run(d time.Duration) (reqs, errs int64) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var nreq, nerr atomic.Int64
	var wg sync.WaitGroup
	for _, c := range l.clients {
		for range l.streams {
			wg.Go(func() {
				for ctx.Err() == nil {
					if l.once(c) {
						nreq.Add(1)
					} else if ctx.Err() == nil {
						nerr.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	return nreq.Load(), nerr.Load()
}

// once makes one request and reports whether it was answered in full.
func (l *h3Load) once(c *http.Client) bool {
	resp, err := c.Get(l.url)
	if err != nil {
		return false
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return err == nil && resp.StatusCode == 200 && n == int64(len(h3Body))
}

func (l *h3Load) close() {
	for _, tr := range l.trs {
		_ = tr.Close()
	}
}

// h3Report prints the Markdown summary and writes it with the raw
// results under the results directory, named by date and time.
func h3Report(o h3Options, results []h3Result, stdout io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# HTTP/3: gale and Caddy, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "`taskset -c 1 go run ./bench h3 -duration %s -rounds %d -conns %d -streams %d -server-cpu %s`: each server pinned to CPU %s with one worker (gale `event_loops: 1`, both `GOMAXPROCS=1`), the load generator (quic-go's http3 client, %d connections x %d requests in flight) on the bench's own CPUs; bodies of 128 bytes; %d rounds interleaved, servers rotating; medians.\n\n",
		o.duration, o.rounds, o.conns, o.streams, o.serverCPU, o.serverCPU, o.conns, o.streams, o.rounds)
	b.WriteString("| workload | server | req/s | server CPU µs/req | CPU/req vs Caddy |\n|---|---|---|---|---|\n")
	for _, wl := range []string{"static", "respond"} {
		caddyCPU := medianOf(results, "caddy", wl, func(r h3Result) float64 { return r.CPUPerReqUS })
		for _, srv := range []string{"gale", "caddy"} {
			cpu := medianOf(results, srv, wl, func(r h3Result) float64 { return r.CPUPerReqUS })
			rps := medianOf(results, srv, wl, func(r h3Result) float64 { return r.RPS })
			fmt.Fprintf(&b, "| %s | %s | %.0f | %.1f | %.2fx |\n", wl, srv, rps, cpu, ratio(cpu, caddyCPU))
		}
	}
	fmt.Fprint(stdout, b.String())
	dir := o.out
	if dir == "" {
		dir = filepath.Join(findModuleRoot(), "bench", "results")
	}
	name := filepath.Join(dir, time.Now().UTC().Format("2006-01-02-1504")+"-h3")
	if err := os.WriteFile(name+".md", []byte(b.String()), 0o644); err != nil {
		return err
	}
	raw, _ := json.MarshalIndent(results, "", "  ")
	return os.WriteFile(name+".json", raw, 0o644)
}

// medianOf is the median of f over the results of srv on wl.
func medianOf(rs []h3Result, srv, wl string, f func(h3Result) float64) float64 {
	var xs []float64
	for _, r := range rs {
		if r.Server == srv && r.Workload == wl {
			xs = append(xs, f(r))
		}
	}
	sort.Float64s(xs)
	return median(xs)
}
