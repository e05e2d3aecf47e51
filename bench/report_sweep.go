package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// sweptWorkload returns the workload a sweep held fixed.
func sweptWorkload(res *results) workload {
	if res.Custom != nil {
		return *res.Custom
	}
	w, _ := findWorkload(res.Workloads[0])
	return w
}

// fmtRates formats offered rates as a list.
func fmtRates(rates []float64) string {
	parts := make([]string, len(rates))
	for i, r := range rates {
		parts[i] = fmtInt(r)
	}
	return strings.Join(parts, ", ")
}

// baselineWords describes what the baseline of a sweep is.
func baselineWords(res *results) string {
	if res.Options.UserConfig != "" {
		return "the baseline is your config as written (only `listen` replaced)"
	}
	return "the baseline uses event_loops = workers, reuse_port true and gale's defaults"
}

// renderClosedLoopSweep writes the closed-loop table: every variant's
// figures, its per-round ratio to the baseline and the verdict on it.
func renderClosedLoopSweep(b *strings.Builder, res *results, labs []string, wid string) {
	ms := res.Measurements
	rpsAA := judgeVariant(ms, wid, aaLabel, 0, metricRPS)
	cpuAA := judgeVariant(ms, wid, aaLabel, 0, metricCPU)
	fmt.Fprintf(b, "Each row is one set of gale `server:` settings; %s. `%s` is the baseline measured a second time in every round: its ratio to the baseline is the noise floor (req/s %s, CPU/req %s over %d round(s)). "+
		"Ratios are variant ÷ baseline within each round: median (min–max) over rounds. A verdict is **better** or **worse** only when every round's ratio lies beyond the noise floor on the same side, otherwise **within noise**.\n\n",
		baselineWords(res), aaLabel, bandPct(rpsAA.Band), bandPct(cpuAA.Band), res.Options.Rounds)
	b.WriteString("| variant" + rowColumns + " ÷ baseline req/s | req/s verdict | ÷ baseline CPU/req | CPU/req verdict |\n")
	b.WriteString("|---" + rowAlign + "---:|---|---:|---|\n")
	stats := map[string]seriesStats{}
	for _, l := range labs {
		stats[l] = aggregateAt(ms, wid, l, 0)
	}
	for _, l := range labs {
		s := stats[l]
		if s.Total == 0 {
			continue
		}
		writeRow(b, l, s)
		jr, jc := judgeVariant(ms, wid, l, 0, metricRPS), judgeVariant(ms, wid, l, 0, metricCPU)
		fmt.Fprintf(b, " %s | %s | %s | %s |\n", fmtJudged(jr), verdictCell(jr.Verdict), fmtJudged(jc), verdictCell(jc.Verdict))
	}
	writeSeriesNotes(b, labs, stats)
	b.WriteString("\n")
}

// verdictCell emphasises findings in a table.
func verdictCell(v string) string {
	if v == verdictBetter || v == verdictWorse {
		return "**" + v + "**"
	}
	return v
}

// rateHolds reports whether s, measured at rate, held it: the median
// achieved rate within 3 % of the offer, the median p99 within target,
// and no request failed or left unsent in any round.
func rateHolds(s seriesStats, rate, targetUs float64) bool {
	if s.OK == 0 || s.OK < s.Total || s.SockErrs > 0 || s.Non2xx > 0 {
		return false
	}
	return s.RPS.Median >= 0.97*rate && s.P99.Median <= targetUs
}

// sustainedRate returns the highest offered rate label held, stepping up
// from the lowest, and whether every step held (the true limit is then
// higher than the steps reached). 0 when the lowest did not hold.
func sustainedRate(res *results, wid, label string) (float64, bool) {
	best := 0.0
	for _, rate := range res.Options.Rates {
		if !rateHolds(aggregateAt(res.Measurements, wid, label, rate), rate, res.Options.P99Target) {
			return best, false
		}
		best = rate
	}
	return best, true
}

// renderOpenLoopSweep writes the open-loop tables: latency and CPU per
// variant and rate with verdicts, then each variant's sustained rate.
func renderOpenLoopSweep(b *strings.Builder, res *results, labs []string, wid string) {
	ms := res.Measurements
	fmt.Fprintf(b, "Open loop: each variant is offered each rate in turn (%s req/s); latency runs from each request's intended send time. %s; `%s` is the baseline again in every round, and its ratio to the baseline at the same rate is the noise floor each verdict is held to (every round beyond it, on the same side). "+
		"CPU µs/req is gale's CPU time over the requests at that fixed rate: the same offered work for every variant, so it compares their efficiency without the closed-loop bias.\n\n",
		fmtRates(res.Options.Rates), capitalise(baselineWords(res)), aaLabel)
	b.WriteString("| variant | offered | achieved | p50 | p99 ms | p99.9 | CPU µs/req | server busy | client CPUs busy | errors | n | ÷ baseline p99 | p99 verdict | ÷ baseline CPU/req | CPU/req verdict |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|\n")
	saturated := clientSaturatedFrom(res, wid, labs)
	for _, rate := range res.Options.Rates {
		for _, l := range labs {
			s := aggregateAt(ms, wid, l, rate)
			if s.Total == 0 {
				continue
			}
			if s.OK == 0 {
				fmt.Fprintf(b, "| %s | %s | %s: %s | | | | | | | | 0/%d | | | | |\n", l, fmtInt(rate), s.Status, mdEscape(shorten(s.Reason, 120)), s.Total)
				continue
			}
			jp, jc := judgeVariant(ms, wid, l, rate, metricP99), judgeVariant(ms, wid, l, rate, metricCPU)
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d / %d | %d/%d | %s | %s | %s | %s |\n", l, fmtInt(rate),
				fmtRange(s.RPS, fmtInt), fmtMs(s.P50.Median), fmtRange(s.P99, fmtMsShort), fmtMs(s.P999.Median), fmtRange(s.CPU, cpuPrec),
				fmtPct(s.Busy.Median), fmtPct(s.Client.Median), s.SockErrs, s.Non2xx, s.OK, s.Total, fmtJudged(jp), verdictCell(jp.Verdict), fmtJudged(jc), verdictCell(jc.Verdict))
		}
	}
	b.WriteString("\nErrors are requests that failed on the connection or were never sent in time (the generator's queue outran every connection) / responses of 400 or more. " +
		"Client CPUs busy is the load side's share of its CPUs (the generator, interrupts and anything else running there): near 100 % the generator itself falls behind, and its own queueing shows up as latency.\n\n")
	if saturated > 0 {
		fmt.Fprintf(b, "**From %s req/s on, the client CPUs were %.0f%% busy or more in some round: latency at those steps is partly the load generator's, not gale's.**\n\n", fmtInt(saturated), clientSaturated)
	}
	fmt.Fprintf(b, "Highest offered rate each variant held: median achieved rate within 3%% of the offer, median p99 at most %s, no failed or unsent request in any round.\n\n", fmtMs(res.Options.P99Target))
	b.WriteString("| variant | sustained rate | p99 there |\n|---|---:|---:|\n")
	for _, l := range labs {
		rate, all := sustainedRate(res, wid, l)
		if rate == 0 {
			fmt.Fprintf(b, "| %s | below %s | — |\n", l, fmtInt(res.Options.Rates[0]))
			continue
		}
		more := ""
		if all {
			more = " or more (every step held)"
		}
		s := aggregateAt(ms, wid, l, rate)
		fmt.Fprintf(b, "| %s | %s%s | %s |\n", l, fmtInt(rate), more, fmtMs(s.P99.Median))
	}
	b.WriteString("\n")
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// clientSaturated is the client CPUs' busy percentage from which an
// open-loop step is flagged as limited by the load side.
const clientSaturated = 90.0

// fmtMsShort formats µs as ms with three decimals.
func fmtMsShort(us float64) string {
	if math.IsNaN(us) {
		return "—"
	}
	return fmt.Sprintf("%.3f", us/1000)
}

// settingOf returns a variant's value of key ("" when it has none).
func settingOf(ss []setting, key string) string {
	for _, s := range ss {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// variantSettings returns a label's settings from the sweep's variants.
func variantSettings(res *results, label string) []setting {
	for _, v := range res.Sweep.Variants {
		if v.Label == label {
			return v.Settings
		}
	}
	return nil
}

// scalingRows returns the variants that vary only scaling keys, with the
// baseline, in order of CPUs then loops.
func scalingRows(res *results) []variant {
	var rows []variant
	for _, v := range res.Sweep.Variants {
		ok := v.Label != aaLabel
		for _, s := range v.Settings {
			ok = ok && (s.Key == "event_loops" || s.Key == "server_cpus" || s.Key == "GOMAXPROCS")
		}
		if ok {
			rows = append(rows, v)
		}
	}
	cpus := func(v variant) int {
		c := settingOf(v.Settings, "server_cpus")
		if c == "" {
			c = res.Options.ServerCPUs
		}
		l, _ := parseCPUList(c)
		return len(l)
	}
	loops := func(v variant) int {
		n, err := strconv.Atoi(settingOf(v.Settings, "event_loops"))
		if err != nil {
			return res.Options.Workers
		}
		return n
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if cpus(rows[i]) != cpus(rows[j]) {
			return cpus(rows[i]) < cpus(rows[j])
		}
		return loops(rows[i]) < loops(rows[j])
	})
	return rows
}

// hasScaling reports whether the sweep has a scaling view: besides the
// baseline, a variant that changes nothing but loops, CPUs or GOMAXPROCS.
func hasScaling(res *results) bool {
	return len(scalingRows(res)) >= 2
}

// scalingRate is the rate the scaling view reads: closed loop, or the
// highest offered rate.
func scalingRate(res *results) float64 {
	if n := len(res.Options.Rates); n > 0 {
		return res.Options.Rates[n-1]
	}
	return 0
}

// renderScaling writes requests/s and CPU per request against the loops
// and CPUs, when the sweep varied them.
func renderScaling(b *strings.Builder, res *results, labs []string, wid string) {
	if !hasScaling(res) {
		return
	}
	rate := scalingRate(res)
	b.WriteString("### Scaling: loops and CPUs\n\n")
	if rate > 0 {
		fmt.Fprintf(b, "At the highest offered rate, %s req/s.\n\n", fmtInt(rate))
	}
	b.WriteString("| event_loops | server CPUs | GOMAXPROCS | req/s | CPU µs/req | server busy | req/s verdict | CPU/req verdict |\n|---:|---|---:|---:|---:|---:|---|---|\n")
	for _, v := range scalingRows(res) {
		s := aggregateAt(res.Measurements, wid, v.Label, rate)
		if s.OK == 0 {
			continue
		}
		loops := settingOf(v.Settings, "event_loops")
		if loops == "" {
			loops = strconv.Itoa(res.Options.Workers) + " (baseline)"
		}
		cpus := settingOf(v.Settings, "server_cpus")
		if cpus == "" {
			cpus = res.Options.ServerCPUs
		}
		gmp := settingOf(v.Settings, "GOMAXPROCS")
		if gmp == "" {
			gmp = "default"
		}
		jr, jc := judgeVariant(res.Measurements, wid, v.Label, rate, metricRPS), judgeVariant(res.Measurements, wid, v.Label, rate, metricCPU)
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", loops, cpus, gmp, fmtRange(s.RPS, fmtInt), fmtRange(s.CPU, cpuPrec), fmtPct(s.Busy.Median), jr.Verdict, jc.Verdict)
	}
	b.WriteString("\n")
}

// balanceShares returns the median over rounds, rank by rank, of the
// busiest threads' shares of the server's CPU time.
func balanceShares(ms []measurement, wid, label string, rate float64, n int) []summary {
	byRank := make([][]float64, n)
	for _, m := range ms {
		if m.Workload != wid || m.Label != label || m.Rate != rate || m.Status != "ok" {
			continue
		}
		for i := 0; i < n && i < len(m.Threads); i++ {
			byRank[i] = append(byRank[i], m.Threads[i].Share)
		}
	}
	out := make([]summary, n)
	for i := range byRank {
		out[i] = summarize(byRank[i])
	}
	return out
}

// balanceConns returns the median over rounds, rank by rank, of the
// connections each loop held halfway through the run (N == 0 when no
// round could read them).
func balanceConns(ms []measurement, wid, label string, rate float64, loops int, reusePort bool) []summary {
	byRank := make([][]float64, loops)
	for _, m := range ms {
		if m.Workload != wid || m.Label != label || m.Rate != rate || m.Status != "ok" || len(m.EpollSets) == 0 {
			continue
		}
		for i, c := range loopConnections(m.EpollSets, loops, reusePort) {
			byRank[i] = append(byRank[i], float64(c))
		}
	}
	out := make([]summary, loops)
	for i := range byRank {
		out[i] = summarize(byRank[i])
	}
	return out
}

// variantLoops returns a variant's event loops and whether it uses
// SO_REUSEPORT (a balancing policy implies it does not).
func variantLoops(res *results, ss []setting) (int, bool) {
	loops, err := strconv.Atoi(settingOf(ss, "event_loops"))
	if err != nil || loops <= 0 {
		loops = res.Options.Workers
	}
	rp := settingOf(ss, "reuse_port") != "false" && settingOf(ss, "load_balancing") == ""
	return loops, rp
}

// joinSummaries formats medians as "a / b / c".
func joinSummaries(ss []summary, f func(float64) string) string {
	var cells []string
	for _, s := range ss {
		cells = append(cells, f(s.Median))
	}
	return strings.Join(cells, " / ")
}

// loopBalance is a variant's per-loop figures from gale's own counters,
// median per rank over rounds (ranks by requests, busiest loop first).
type loopBalance struct {
	Requests, Shares, Accepted []summary
}

// balanceLoops returns the median over rounds, rank by rank, of each
// loop's requests, share of requests and accepted connections during the
// run (Requests[0].N == 0 when no round has gale's counters). A loop that
// took no connection is not in gale's metrics and counts zero.
func balanceLoops(ms []measurement, wid, label string, rate float64, loops int) loopBalance {
	var req, share, acc [][]float64
	for _, m := range ms {
		if m.Workload != wid || m.Label != label || m.Rate != rate || m.Status != "ok" || len(m.Loops) == 0 {
			continue
		}
		n := max(loops, len(m.Loops))
		for len(req) < n {
			req, share, acc = append(req, nil), append(share, nil), append(acc, nil)
		}
		for i := 0; i < n; i++ {
			var l loopRun
			if i < len(m.Loops) {
				l = m.Loops[i]
			}
			req[i] = append(req[i], float64(l.Requests))
			share[i] = append(share[i], l.Share)
			acc[i] = append(acc[i], float64(l.Accepted))
		}
	}
	var out loopBalance
	for i := range max(loops, len(req)) {
		var r, s, a []float64
		if i < len(req) {
			r, s, a = req[i], share[i], acc[i]
		}
		out.Requests = append(out.Requests, summarize(r))
		out.Shares = append(out.Shares, summarize(s))
		out.Accepted = append(out.Accepted, summarize(a))
	}
	return out
}

// renderBalance writes how evenly each multi-loop variant's work spread
// over its loops: the requests and connections each loop took during the
// run (gale's own per-loop counters), the connections each held halfway
// through (from the epoll instances' watch lists) and, with
// lock_os_thread, each loop thread's share of the CPU time.
func renderBalance(b *strings.Builder, res *results, labs []string, wid string) {
	rate := scalingRate(res)
	var rows []string
	for _, l := range labs {
		ss := variantSettings(res, l)
		loops, rp := variantLoops(res, ss)
		if loops < 2 {
			continue
		}
		who := "kernel (SO_REUSEPORT)"
		if !rp {
			who = settingOf(ss, "load_balancing")
			if who == "" {
				who = "round-robin"
			}
		}
		reqs, shareCol, acc := "—", "—", "—"
		if lb := balanceLoops(res.Measurements, wid, l, rate, loops); lb.Requests[0].N > 0 {
			reqs, acc = joinSummaries(lb.Requests, fmtInt), joinSummaries(lb.Accepted, fmtInt)
			shareCol = joinSummaries(lb.Shares, func(v float64) string { return fmtPct(100 * v) })
		}
		conns := "—"
		if c := balanceConns(res.Measurements, wid, l, rate, loops, rp); c[0].N > 0 {
			conns = joinSummaries(c, fmtInt)
		}
		shares := "— (needs lock_os_thread: true)"
		if reqs == "—" && conns == "—" && settingOf(ss, "lock_os_thread") != "true" {
			continue // a run recorded before loops were counted
		}
		if settingOf(ss, "lock_os_thread") == "true" {
			shares = joinSummaries(balanceShares(res.Measurements, wid, l, rate, loops+1), func(v float64) string { return fmtPct(100 * v) })
		}
		rows = append(rows, fmt.Sprintf("| %s | %d | %s | %s | %s | %s | %s | %s |", l, loops, who, reqs, shareCol, acc, conns, shares))
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("### Per-loop balance\n\n")
	if rate > 0 {
		fmt.Fprintf(b, "At %s req/s offered. ", fmtInt(rate))
	}
	b.WriteString("Medians per rank over rounds, busiest loop first. " +
		"**Requests, share and connections accepted per loop** are gale's own per-loop counters (`gale_requests_total` and `gale_connections_accepted_total` by `loop`, from its metrics listener), scraped right before and right after each measured run: the differences are the run's alone, the checks and the warm-up left out; loops are ranked by requests, and the accepted connections are those of the same loops (— in runs recorded before the bench read them). " +
		"**Held at mid-run**: every gnet event loop has an epoll instance of its own, and `/proc/PID/fdinfo` lists the sockets each one watches; halfway through each run the bench counts the established TCP connections of each (the accepting reactor, which holds only the listener when reuse_port is off, is left out), ranked on their own. " +
		"**CPU per loop**: with `lock_os_thread: true` every loop runs on an OS thread of its own, so each thread's on-CPU time (`/proc/PID/task/TID/schedstat`) is its loop's work; shares are of gale's whole CPU time, busiest first, and the share after the loops' is the busiest other thread of the Go runtime. " +
		"Even loops show equal numbers; a kernel hash that put more connections on one loop shows one larger.\n\n")
	b.WriteString("| variant | loops | who spreads connections | requests per loop | share of requests | connections accepted per loop | connections held at mid-run | share of CPU per thread |\n|---|---:|---|---|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	b.WriteString("\n")
}

// renderPlacementCaveat says what a sweep on this placement can and
// cannot show.
func renderPlacementCaveat(b *strings.Builder, res *results) {
	cpus, _ := parseCPUList(res.Options.ServerCPUs)
	if len(cpus) != 1 {
		return
	}
	fmt.Fprintf(b, "**What one server CPU can show.** gale ran pinned to CPU %s alone. More event loops than CPUs cannot add throughput there: two loops take turns on one core, so event_loops = 2 measures the cost of switching between them, not parallelism; for the same reason how a balancing policy spreads connections cannot change the total work, only the bookkeeping, and lock_os_thread only changes which thread the scheduler wakes. "+
		"What it can show: per-request cost (buffers, edge triggering, TCP_NODELAY, the balancing policy's own overhead), latency at a fixed load, and how evenly work is split. Scaling needs -server-cpus with as many CPUs as loops and a load generator on others.\n\n", res.Options.ServerCPUs)
}

// sweepSummary returns the warnings that open a sweep's report and the
// sentences of its summary. A difference inside the noise floor is never
// stated as a finding.
func sweepSummary(res *results) (warns, lines []string) {
	if res.Sweep == nil || len(res.Workloads) == 0 {
		return nil, nil
	}
	wid := sweptWorkload(res).ID
	labs := labels(res)
	place := fmt.Sprintf("On this machine (%s, gale on CPU %s, load on CPU %s)", res.Machine.CPUModel, res.Options.ServerCPUs, res.Options.ClientCPUs)
	if len(res.Options.Rates) == 0 {
		return closedLoopSummary(res, wid, labs, place)
	}
	return openLoopSummary(res, wid, labs, place)
}

// closedLoopSummary is sweepSummary for a closed-loop sweep of workload
// wid: each variant's req/s and CPU per request against the baseline's,
// beyond the noise floor the baseline's A/A copy shows.
func closedLoopSummary(res *results, wid string, labs []string, place string) (warns, lines []string) {
	ms := res.Measurements
	bands := map[string]float64{metricRPS.Name: judgeVariant(ms, wid, aaLabel, 0, metricRPS).Band, metricCPU.Name: judgeVariant(ms, wid, aaLabel, 0, metricCPU).Band}
	warns = noiseWarnings(res.Options.Rounds, bands)
	var found []string
	noise := 0
	for _, l := range labs {
		if l == baselineLabel || l == aaLabel {
			continue
		}
		jr, jc := judgeVariant(ms, wid, l, 0, metricRPS), judgeVariant(ms, wid, l, 0, metricCPU)
		var parts []string
		if jr.Verdict == verdictBetter || jr.Verdict == verdictWorse {
			parts = append(parts, fmt.Sprintf("%.2f× the baseline's req/s (%s)", jr.Ratios.Median, jr.Verdict))
		}
		if jc.Verdict == verdictBetter || jc.Verdict == verdictWorse {
			parts = append(parts, fmt.Sprintf("%.2f× its CPU per request (%s)", jc.Ratios.Median, jc.Verdict))
		}
		if len(parts) > 0 {
			found = append(found, fmt.Sprintf("`%s` %s", l, strings.Join(parts, ", ")))
		} else if jr.Verdict == verdictNoise || jc.Verdict == verdictNoise {
			noise++
		}
	}
	lines = append(lines, fmt.Sprintf("%s the noise floor of this run is %s in req/s and %s in CPU per request (the baseline against itself, %d round(s)).",
		place, bandPct(bands[metricRPS.Name]), bandPct(bands[metricCPU.Name]), res.Options.Rounds))
	switch {
	case len(warns) > 0 && res.Options.Rounds < minVerdictRound:
		lines = append(lines, "No variant can be judged.")
	case len(found) == 0:
		lines = append(lines, fmt.Sprintf("No variant differs from the baseline beyond it (%d within noise).", noise))
	default:
		lines = append(lines, "Beyond it: "+strings.Join(found, "; ")+".")
		if noise > 0 {
			lines = append(lines, fmt.Sprintf("%d other variant(s) within noise.", noise))
		}
	}
	return warns, lines
}

// openLoopSummary is sweepSummary for an open-loop sweep of workload wid:
// the rates each variant sustained, and at the highest rate offered the
// CPU per request and the best p99 against the baseline's.
func openLoopSummary(res *results, wid string, labs []string, place string) (warns, lines []string) {
	ms := res.Measurements
	top := res.Options.Rates[len(res.Options.Rates)-1]
	bands := map[string]float64{metricP99.Name: judgeVariant(ms, wid, aaLabel, top, metricP99).Band, metricCPU.Name: judgeVariant(ms, wid, aaLabel, top, metricCPU).Band}
	warns = noiseWarnings(res.Options.Rounds, bands)
	if rate := clientSaturatedFrom(res, wid, labs); rate > 0 {
		warns = append(warns, fmt.Sprintf("from %s req/s on, the client CPUs were %.0f%% busy or more in some round (the generator, interrupts and other processes together): latency there is partly the client side's, not gale's", fmtInt(rate), clientSaturated))
	}
	lines = append(lines, sustainedSummary(res, wid, labs, place)...)
	lines = append(lines, topRateCPULines(ms, wid, labs, top)...)
	lines = append(lines, bestP99Lines(ms, wid, labs, top)...)
	return warns, lines
}

// topRateCPULines states which variants' CPU per request at rate top
// differs from the baseline's beyond the noise floor, or that none does.
func topRateCPULines(ms []measurement, wid string, labs []string, top float64) (lines []string) {
	var cpuFound []string
	cpuBand := math.NaN()
	for _, l := range labs {
		if l == baselineLabel || l == aaLabel {
			continue
		}
		j := judgeVariant(ms, wid, l, top, metricCPU)
		cpuBand = j.Band
		if j.Verdict == verdictBetter || j.Verdict == verdictWorse {
			cpuFound = append(cpuFound, fmt.Sprintf("`%s` %.2f× (%s)", l, j.Ratios.Median, j.Verdict))
		}
	}
	if len(cpuFound) > 0 {
		lines = append(lines, fmt.Sprintf("CPU per request at %s req/s, against the baseline's, beyond its noise floor (%s): %s.", fmtInt(top), bandPct(cpuBand), strings.Join(cpuFound, ", ")))
	} else if !math.IsNaN(cpuBand) {
		lines = append(lines, fmt.Sprintf("No variant's CPU per request at %s req/s differs from the baseline's beyond the noise floor (%s).", fmtInt(top), bandPct(cpuBand)))
	}
	return lines
}

// bestP99Lines states which series has the lowest median p99 at rate top
// and whether it beats the baseline's beyond the noise floor.
func bestP99Lines(ms []measurement, wid string, labs []string, top float64) (lines []string) {
	bestLabel, bestP99 := "", math.Inf(1)
	for _, l := range labs {
		if l == aaLabel {
			continue
		}
		if s := aggregateAt(ms, wid, l, top); s.OK > 0 && s.P99.Median < bestP99 {
			bestLabel, bestP99 = l, s.P99.Median
		}
	}
	if bestLabel != "" {
		j := judgeVariant(ms, wid, bestLabel, top, metricP99)
		switch {
		case bestLabel == baselineLabel:
			lines = append(lines, fmt.Sprintf("At %s req/s the baseline has the lowest median p99, %s (noise floor %s).", fmtInt(top), fmtMs(bestP99), bandPct(j.Band)))
		case j.Verdict == verdictBetter:
			lines = append(lines, fmt.Sprintf("Best p99 at %s req/s: `%s`, %s, %.2f× the baseline's, beyond the noise floor (%s).", fmtInt(top), bestLabel, fmtMs(bestP99), j.Ratios.Median, bandPct(j.Band)))
		default:
			lines = append(lines, fmt.Sprintf("At %s req/s no variant's p99 differs from the baseline's beyond the noise floor (%s); the lowest median, `%s`'s, is %s: %s.", fmtInt(top), bandPct(j.Band), bestLabel, fmtMs(bestP99), j.Verdict))
		}
	}
	return lines
}

// sustainedWords describes a sustained rate.
func sustainedWords(rate float64, all bool) string {
	switch {
	case rate == 0:
		return "none of the steps"
	case all:
		return "every step up to " + fmtInt(rate) + " req/s"
	}
	return fmtInt(rate) + " req/s"
}

// nextStep returns the offered rate after rate (the lowest for 0).
func nextStep(rates []float64, rate float64) float64 {
	for _, r := range rates {
		if r > rate {
			return r
		}
	}
	return 0
}

// sustainedSummary states each variant's sustained rate and which
// differences from the baseline's are beyond noise: the baseline's A/A
// copy must have held the same rate, and at the first step where one of
// the two held and the other did not, the variant's p99 verdict must
// agree (better for a higher sustained rate, worse for a lower one).
func sustainedSummary(res *results, wid string, labs []string, place string) []string {
	baseRate, baseAll := sustainedRate(res, wid, baselineLabel)
	aaRate, aaAll := sustainedRate(res, wid, aaLabel)
	var held []string
	for _, l := range labs {
		rate, all := sustainedRate(res, wid, l)
		held = append(held, fmt.Sprintf("`%s` %s", l, sustainedWords(rate, all)))
	}
	lines := []string{fmt.Sprintf("%s, the highest offered rate held with p99 at most %s: %s.", place, fmtMs(res.Options.P99Target), strings.Join(held, ", "))}
	if baseRate != aaRate || baseAll != aaAll {
		return append(lines, "The baseline and its A/A copy, the same configuration, held different rates: on this run a sustained rate is within noise and ranks nothing.")
	}
	var found, quiet []string
	for _, l := range labs {
		if l == baselineLabel || l == aaLabel {
			continue
		}
		rate, _ := sustainedRate(res, wid, l)
		if rate == baseRate {
			continue
		}
		step, want := nextStep(res.Options.Rates, baseRate), verdictBetter
		if rate < baseRate {
			step, want = nextStep(res.Options.Rates, rate), verdictWorse
		}
		if j := judgeVariant(res.Measurements, wid, l, step, metricP99); j.Verdict == want {
			found = append(found, fmt.Sprintf("`%s` (its p99 at %s req/s %.2f× the baseline's, %s)", l, fmtInt(step), j.Ratios.Median, want))
		} else {
			quiet = append(quiet, "`"+l+"`")
		}
	}
	if len(found) > 0 {
		lines = append(lines, "Beyond the noise floor: "+strings.Join(found, "; ")+".")
	}
	if len(quiet) > 0 {
		lines = append(lines, fmt.Sprintf("The other differences from the baseline's sustained rate (%s) are within noise.", strings.Join(quiet, ", ")))
	}
	return lines
}

// clientSaturatedFrom returns the lowest offered rate at which the client
// CPUs were clientSaturated percent busy or more in some round (0: none).
func clientSaturatedFrom(res *results, wid string, labs []string) float64 {
	for _, rate := range res.Options.Rates {
		for _, l := range labs {
			if s := aggregateAt(res.Measurements, wid, l, rate); s.Client.N > 0 && s.Client.Max >= clientSaturated {
				return rate
			}
		}
	}
	return 0
}
