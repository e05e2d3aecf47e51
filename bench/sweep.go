package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// baselineLabel names the sweep variant without overrides, and aaLabel
// its second copy: measured in every round like any variant, its ratio to
// the baseline is the noise floor (an A/A test) the verdicts are held to.
const (
	baselineLabel = "baseline"
	aaLabel       = "baseline (A/A)"
)

// sweepInfo describes a sweep in results.json.
type sweepInfo struct {
	Workload string    `json:"workload"`
	Grid     bool      `json:"grid"`
	Variants []variant `json:"variants"`
}

// variant is one set of gale server: settings.
type variant struct {
	Label    string    `json:"label"`
	Settings []setting `json:"settings"`
}

// dimension is one varied gale server: key with its values; Default is
// the value the baseline has ("" when it varies by run, as event_loops).
type dimension struct {
	Key     string
	Values  []string
	Default string
}

// defaultDimensions are varied when no -vary flag is given.
func defaultDimensions(workers int) []dimension {
	return []dimension{
		{"event_loops", []string{"1", "2", "4"}, strconv.Itoa(workers)},
		{"load_balancing", []string{"round-robin", "least-connections", "source-addr-hash"}, ""},
		{"read_buffer", []string{"16KiB", "64KiB", "256KiB"}, "64KiB"},
		{"write_buffer", []string{"16KiB", "64KiB", "256KiB"}, "64KiB"},
		{"edge_triggered", []string{"false", "true"}, "false"},
		{"lock_os_thread", []string{"false", "true"}, "false"},
		{"tcp_no_delay", []string{"true", "false"}, "true"},
	}
}

var reSettingKey = regexp.MustCompile(`^([a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*|GOMAXPROCS)$`)

// parseVary parses one -vary value, "key=v1,v2,...".
func parseVary(s string, defaults []dimension) (dimension, error) {
	k, vs, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || !reSettingKey.MatchString(k) || strings.TrimSpace(vs) == "" {
		return dimension{}, fmt.Errorf("%w: -vary %q: want key=value[,value...]", errUsage, s)
	}
	d := dimension{Key: k}
	for _, def := range defaults {
		if def.Key == k {
			d.Default = def.Default
		}
	}
	for _, v := range strings.Split(vs, ",") {
		if v = strings.TrimSpace(v); v != "" {
			d.Values = append(d.Values, v)
		}
	}
	return d, nil
}

// variantLabel names a variant by its settings.
func variantLabel(settings []setting) string {
	if len(settings) == 0 {
		return baselineLabel
	}
	var parts []string
	for _, s := range settings {
		if s.Key == "load_balancing" {
			parts = append(parts, "reuse_port=false")
		}
		parts = append(parts, s.Key+"="+s.Value)
	}
	return strings.Join(parts, " ")
}

// isDefault reports whether every setting equals its dimension's default
// (load_balancing has none: it implies reuse_port false).
func isDefault(settings []setting, dims []dimension) bool {
	for _, s := range settings {
		for _, d := range dims {
			if d.Key == s.Key && (d.Default == "" || d.Default != s.Value) {
				return false
			}
		}
	}
	return true
}

// sweepVariants returns the baseline followed by either one variant per
// non-default value of each dimension (one at a time) or every
// combination (grid).
func sweepVariants(dims []dimension, grid bool) []variant {
	out := []variant{{Label: baselineLabel}, {Label: aaLabel}}
	add := func(settings []setting) {
		if isDefault(settings, dims) {
			return
		}
		out = append(out, variant{Label: variantLabel(settings), Settings: settings})
	}
	if !grid {
		for _, d := range dims {
			for _, v := range d.Values {
				add([]setting{{d.Key, v}})
			}
		}
		return out
	}
	combos := [][]setting{nil}
	for _, d := range dims {
		var next [][]setting
		for _, c := range combos {
			for _, v := range d.Values {
				next = append(next, append(append([]setting{}, c...), setting{d.Key, v}))
			}
		}
		combos = next
	}
	for _, c := range combos {
		add(c)
	}
	return out
}

// runSweep is `bench sweep`: gale alone, one workload, varying reactor
// settings.
func runSweep(args []string, stdout, stderr io.Writer) int {
	a, code, ok := parseSweep(args, stderr)
	if !ok {
		return code
	}
	ctx, stop := withInterrupt()
	defer stop()
	r, err := newRunner(ctx, a.o, stdout, stderr)
	if err != nil {
		return failed(stderr, err)
	}
	defer stopAllProcs()
	dims, err := sweepDimensions(r.opts.Workers, a.varies)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	variants := sweepVariants(dims, a.grid)
	if len(variants) > a.maxVariants {
		fmt.Fprintf(stderr, "bench sweep: %d variants exceed -max-variants %d; narrow them with -vary\n", len(variants), a.maxVariants)
		return 2
	}
	r.noteVariantCPUs(variants)
	r.resolveServers([]string{"gale"})
	if len(r.specs) == 0 {
		fmt.Fprintln(stderr, "bench sweep: gale is not available")
		return 1
	}
	r.pinSelf()
	w := a.w
	res := r.start("sweep", args, []workload{w})
	res.Sweep = &sweepInfo{Workload: w.ID, Grid: a.grid, Variants: variants}
	if w.Custom {
		res.Custom = &w
	}
	if w.Proxy {
		if err := r.startUpstream(); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		res.Upstream = r.upArgv
		defer r.upstream.stop(2 * time.Second)
	}
	steps := r.opts.Rates
	if len(steps) == 0 {
		steps = []float64{0}
	}
	total := r.opts.Rounds * len(variants) * len(steps)
	done := r.sweepRounds(res, w, variants, steps, total)
	return r.finish(res, total, done)
}

// sweepArgs is what the sweep command's flags ask for.
type sweepArgs struct {
	o           options
	w           workload // held fixed
	varies      []string // each -vary, unparsed
	grid        bool
	maxVariants int
}

// parseSweep parses the sweep command's flags. When it reports false the
// command is over and exits with code.
func parseSweep(args []string, stderr io.Writer) (a sweepArgs, code int, ok bool) {
	fs := flag.NewFlagSet("bench sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	wl := fs.String("workload", "static-128", "workload held fixed: "+workloadIDs())
	grid := fs.Bool("grid", false, "measure every combination of the varied settings instead of one at a time")
	maxVariants := fs.Int("max-variants", 64, "refuse to run more variants than this")
	var urls []string
	rates := fs.String("rates", "", "open loop: offered rates in requests/s, comma-separated (e.g. 10000,20000,40000); each variant is measured at each rate with latency from the intended send time; default: closed loop with wrk")
	p99 := fs.Duration("p99-target", time.Millisecond, "open loop: the p99 latency a rate must hold to count as sustained")
	fs.StringVar(&a.o.UserConfig, "config", "", "your gale config: its routes and settings are measured (listen is replaced by the bench's address, relative paths made absolute, the access log moved into the run directory)")
	fs.Func("url", "a path of your site to request, /path or /path=weight (repeatable; with -config; default /)", func(s string) error {
		urls = append(urls, s)
		return nil
	})
	fs.StringVar(&a.o.AccessLog, "access-log", "", "replay the 50 most requested GET paths of this access log (combined or common format) as a weighted mix")
	fs.StringVar(&a.o.Host, "host", "", "Host header of every request (for a config that routes by host)")
	fs.Func("vary", "a gale server: setting (dotted keys such as http2.max_concurrent_streams too) or one of the harness's connections, h2_streams, server_cpus, GOMAXPROCS, metrics (on, off: gale's metrics listener), with its values, key=v1,v2 (repeatable); default: event_loops, load_balancing (with reuse_port false), read_buffer, write_buffer, edge_triggered, lock_os_thread, tcp_no_delay", func(s string) error {
		a.varies = append(a.varies, s)
		return nil
	})
	check := commonFlags(fs, &a.o)
	if f := fs.Lookup("connections"); f != nil {
		f.Usage = "client connections (wrk -c, or the open-loop generator's keep-alive connections)"
	}
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: go run ./bench sweep [flags]

The reactor-tuning lab: holds one workload fixed (built in, or your own
-config with -url/-access-log) and measures gale with different server:
settings, one at a time from a baseline (default) or as a grid (-grid).
The baseline runs twice per round (baseline and its A/A copy): their
difference is the noise floor, and each variant is judged better, worse
or within noise against it. -rates switches to an open-loop, fixed-rate
load with latency from each request's intended send time. See
bench/TUNING.md.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return a, 0, false
		}
		return a, 2, false
	}
	if err := check(); err != nil {
		fmt.Fprintln(stderr, err)
		return a, 2, false
	}
	w, err := sweepWorkload(*wl, &a.o, urls)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return a, 2, false
	}
	if a.o.Rates, err = parseRates(*rates); err != nil {
		fmt.Fprintln(stderr, err)
		return a, 2, false
	}
	if len(a.o.Rates) > 0 && w.h2() {
		fmt.Fprintln(stderr, "bench sweep: -rates drives HTTP/1.1 only (h2load has no fixed request rate); use an HTTP/1.1 workload")
		return a, 2, false
	}
	a.o.P99Target = float64(p99.Microseconds())
	if a.o.Host != "" && !w.Custom {
		fmt.Fprintln(stderr, "bench sweep: -host needs -config")
		return a, 2, false
	}
	a.o.Servers = []string{"gale"}
	a.o.Workloads = []string{w.ID}
	a.w, a.grid, a.maxVariants = w, *grid, *maxVariants
	return a, 0, true
}

// sweepDimensions returns the settings a sweep varies: those of each
// -vary in varies, or the default ones for gale with workers workers.
func sweepDimensions(workers int, varies []string) ([]dimension, error) {
	dims := defaultDimensions(workers)
	if len(varies) == 0 {
		return dims, nil
	}
	defaults := dims
	dims = nil
	for _, v := range varies {
		d, err := parseVary(v, defaults)
		if err != nil {
			return nil, err
		}
		dims = append(dims, d)
	}
	return dims, nil
}

// sweepRounds measures gale on w with each variant at each rate of steps
// in each round, rotating the variants from round to round, and appends
// the measurements to res. It stops at an interrupt, and returns how many
// measurements of total it made.
func (r *runner) sweepRounds(res *results, w workload, variants []variant, steps []float64, total int) int {
	spec := r.specs[0]
	done := 0
	for round := 1; round <= r.opts.Rounds; round++ {
		for i, v := range rotate(variants, round-1) {
			for _, rate := range steps {
				if r.ctx.Err() != nil {
					break
				}
				j := job{round: round, order: i + 1, spec: spec, label: v.Label, w: w, settings: v.Settings, rate: rate}
				r.announce(j, total, done)
				m := r.measure(j)
				if r.ctx.Err() != nil {
					break // cut short by the interrupt: not a result
				}
				done++
				r.progress(m, total, done)
				res.Measurements = append(res.Measurements, m)
			}
		}
	}
	return done
}

// sweepWorkload returns the workload a sweep holds fixed: the built-in one
// named by -workload, or, with -config, -url or -access-log, the user's
// own request mix (recorded in o.Paths).
func sweepWorkload(id string, o *options, urls []string) (workload, error) {
	if o.UserConfig == "" && (len(urls) > 0 || o.AccessLog != "") {
		return workload{}, fmt.Errorf("%w: -url and -access-log need -config (your site's gale config)", errUsage)
	}
	if o.UserConfig == "" {
		w, ok := findWorkload(id)
		if !ok {
			return workload{}, fmt.Errorf("%w: unknown workload %q (known: %s)", errUsage, id, workloadIDs())
		}
		if w.PHP || needsRedis([]workload{w}) {
			return workload{}, fmt.Errorf("%w: workload %q needs a helper only the compare command starts (PHP-FPM or redis-server): go run ./bench -servers gale -workloads %s", errUsage, id, id)
		}
		return w, nil
	}
	if _, err := os.Stat(o.UserConfig); err != nil {
		return workload{}, fmt.Errorf("%w: -config: %v", errUsage, err)
	}
	var mix []weightedPath
	for _, u := range urls {
		p, err := parseWeightedPath(u)
		if err != nil {
			return workload{}, err
		}
		mix = append(mix, p)
	}
	if o.AccessLog != "" {
		f, err := os.Open(o.AccessLog)
		if err != nil {
			return workload{}, fmt.Errorf("%w: -access-log: %v", errUsage, err)
		}
		defer f.Close()
		logged, err := parseAccessLog(f, 50)
		if err != nil {
			return workload{}, err
		}
		mix = append(mix, logged...)
	}
	if len(mix) == 0 {
		mix = []weightedPath{{Path: "/", Weight: 1}}
	}
	o.Paths = mix
	return customWorkload(mix), nil
}

// parseRates parses -rates: positive requests/s, ascending once parsed.
func parseRates(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.ToLower(f), "k"), 64)
		if strings.HasSuffix(strings.ToLower(f), "k") {
			v *= 1000
		}
		if err != nil || v <= 0 || v > 5e6 {
			return nil, fmt.Errorf("%w: -rates: %q is not a rate in requests/s", errUsage, f)
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// noteVariantCPUs adds a note for every server_cpus value of a variant
// that shares a CPU with the load generator.
func (r *runner) noteVariantCPUs(variants []variant) {
	seen := map[string]bool{}
	for _, v := range variants {
		cpus := settingOf(v.Settings, "server_cpus")
		if cpus == "" || seen[cpus] {
			continue
		}
		seen[cpus] = true
		list, err := parseCPUList(cpus)
		if err != nil {
			continue
		}
		for _, c := range list {
			if slices.Contains(r.clientCPUs, c) {
				r.skip(fmt.Sprintf("variant server_cpus=%s shares CPU %d with the load generator: its figures include that competition", cpus, c))
				break
			}
		}
	}
}
