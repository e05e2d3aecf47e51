package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// baselineLabel names the sweep variant without overrides.
const baselineLabel = "baseline"

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

var reSettingKey = regexp.MustCompile(`^[a-z][a-z_]*$`)

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
	out := []variant{{Label: baselineLabel}}
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
	fs := flag.NewFlagSet("bench sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	wl := fs.String("workload", "static-128", "workload held fixed: "+workloadIDs())
	grid := fs.Bool("grid", false, "measure every combination of the varied settings instead of one at a time")
	maxVariants := fs.Int("max-variants", 64, "refuse to run more variants than this")
	var varies []string
	fs.Func("vary", "a gale server: setting and its values, key=v1,v2 (repeatable); default: event_loops, load_balancing (with reuse_port false), read_buffer, write_buffer, edge_triggered, lock_os_thread, tcp_no_delay", func(s string) error {
		varies = append(varies, s)
		return nil
	})
	check := commonFlags(fs, &o)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: go run ./bench sweep [flags]

The reactor-tuning lab: holds one workload fixed and measures gale with
different server: settings, one at a time from a baseline (default) or as a
grid (-grid). Same metrics, table and chart as the comparison.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := check(); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	w, ok := findWorkload(*wl)
	if !ok {
		fmt.Fprintf(stderr, "unknown workload %q (known: %s)\n", *wl, workloadIDs())
		return 2
	}
	o.Servers = []string{"gale"}
	o.Workloads = []string{w.ID}
	ctx, stop := withInterrupt()
	defer stop()
	r, err := newRunner(ctx, o, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	defer stopAllProcs()
	dims := defaultDimensions(r.opts.Workers)
	if len(varies) > 0 {
		defaults := dims
		dims = nil
		for _, v := range varies {
			d, err := parseVary(v, defaults)
			if err != nil {
				fmt.Fprintln(stderr, err)
				return 2
			}
			dims = append(dims, d)
		}
	}
	variants := sweepVariants(dims, *grid)
	if len(variants) > *maxVariants {
		fmt.Fprintf(stderr, "bench sweep: %d variants exceed -max-variants %d; narrow them with -vary\n", len(variants), *maxVariants)
		return 2
	}
	r.resolveServers([]string{"gale"})
	if len(r.specs) == 0 {
		fmt.Fprintln(stderr, "bench sweep: gale is not available")
		return 1
	}
	r.pinSelf()
	res := r.start("sweep", args, []workload{w})
	res.Sweep = &sweepInfo{Workload: w.ID, Grid: *grid, Variants: variants}
	if w.Proxy {
		if err := r.startUpstream(); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		res.Upstream = r.upArgv
		defer r.upstream.stop(2 * time.Second)
	}
	spec := r.specs[0]
	total := r.opts.Rounds * len(variants)
	done := 0
	for round := 1; round <= r.opts.Rounds; round++ {
		for i, v := range rotate(variants, round-1) {
			if ctx.Err() != nil {
				break
			}
			m := r.measure(job{round: round, order: i + 1, spec: spec, label: v.Label, w: w, settings: v.Settings})
			if ctx.Err() != nil {
				break // cut short by the interrupt: not a result
			}
			done++
			r.progress(m, total, done)
			res.Measurements = append(res.Measurements, m)
		}
	}
	return r.finish(res, total, done)
}
