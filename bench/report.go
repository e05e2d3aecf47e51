package main

import (
	"fmt"
	"math"
	"strings"
)

// seriesStats aggregates the measurements of one label on one workload.
type seriesStats struct {
	Label    string
	Server   string
	Total    int     // measurements made
	OK       int     // of which succeeded
	Status   string  // "ok" when any succeeded, else the first failure's status
	Reason   string  // first failure's reason
	RPS      summary // requests/s
	CPU      summary // server CPU µs per request
	P50      summary // µs
	P99      summary // µs
	P999     summary // µs (open loop only)
	RSS      summary // peak RSS, MiB
	SockErrs int64   // summed over successful measurements
	Non2xx   int64
	IdleMin  int     // fewest idle connections still open after a run (-1: not an idle workload)
	UpReuse  summary // upstream requests per upstream connection
	Others   summary // foreign load on the server CPUs, percent
	Busy     summary // the server's own CPU time over the run, percent of its CPUs
	Switches summary // the server's threads switched onto a CPU, per request
	Client   summary // the client CPUs' busy share (load generator, others, interrupts), percent
	byRound  map[int]measurement
}

// aggregate summarises the measurements of label on workload.
func aggregate(ms []measurement, workload, label string) seriesStats {
	return aggregateAt(ms, workload, label, -1)
}

// aggregateAt summarises the measurements of label on workload at one
// offered rate (0: closed loop; -1: any).
func aggregateAt(ms []measurement, workload, label string, rate float64) seriesStats {
	s := seriesStats{Label: label, IdleMin: -1, byRound: map[int]measurement{}}
	var rps, cpu, p50, p99, p999, rss, reuse, others, busy, switches, client []float64
	for _, m := range ms {
		if m.Workload != workload || m.Label != label || (rate >= 0 && m.Rate != rate) {
			continue
		}
		s.Server = m.Server
		s.Total++
		if m.Status != "ok" {
			if s.Reason == "" {
				s.Status, s.Reason = m.Status, m.Reason
			}
			continue
		}
		s.OK++
		s.byRound[m.Round] = m
		rps = append(rps, m.Wrk.ReqPerSec)
		cpu = append(cpu, m.CPUUsPerReq)
		p50 = append(p50, pct(m.Wrk, "50"))
		p99 = append(p99, pct(m.Wrk, "99"))
		p999 = append(p999, pct(m.Wrk, "99.9"))
		rss = append(rss, float64(m.PeakRSSKiB)/1024)
		others = append(others, 100*m.ServerCPUs.Others)
		client = append(client, 100*m.ClientCPUs.Busy)
		if m.ServerBusy > 0 {
			busy = append(busy, 100*m.ServerBusy)
		} // runs recorded before server_busy existed show a dash
		if m.SwitchIns > 0 && m.Wrk.Requests > 0 {
			switches = append(switches, float64(m.SwitchIns)/float64(m.Wrk.Requests))
		} // and so do those before server_switch_ins
		s.SockErrs += m.Wrk.SocketErrors()
		s.Non2xx += m.Wrk.Non2xx
		if m.IdleOpened > 0 || m.IdleFailed > 0 {
			if s.IdleMin < 0 || m.IdleAliveAfter < s.IdleMin {
				s.IdleMin = m.IdleAliveAfter
			}
		}
		if m.Upstream != nil && m.Upstream.Conns > 0 {
			reuse = append(reuse, float64(m.Upstream.Requests)/float64(m.Upstream.Conns))
		}
	}
	if s.OK > 0 {
		s.Status, s.Reason = "ok", ""
	}
	s.RPS, s.CPU, s.P50, s.P99, s.RSS, s.UpReuse = summarize(rps), summarize(cpu), summarize(p50), summarize(p99), summarize(rss), summarize(reuse)
	s.Others, s.Busy, s.Switches, s.P999 = summarize(others), summarize(busy), summarize(switches), summarize(p999)
	s.Client = summarize(client)
	return s
}

// pct returns a latency percentile in µs, NaN when wrk did not report it.
func pct(r *wrkResult, p string) float64 {
	if v, ok := r.LatencyUs[p]; ok {
		return v
	}
	return math.NaN()
}

// headToHead compares a with b over the rounds both succeeded in.
type headToHead struct {
	RPSRatio  float64 // median(a req/s) / median(b req/s)
	CPURatio  float64 // median(a CPU/req) / median(b CPU/req)
	Rounds    int     // rounds where both succeeded
	FasterIn  int     // rounds where a served more req/s
	CheaperIn int     // rounds where a used less CPU per request
	// CPUPerRound summarises a's CPU/req over b's within each round both
	// ran: a round measures every server on a workload one after the
	// other, so these ratios drift less than the medians of either series.
	CPUPerRound summary
	Comparable  bool
}

func compare(a, b seriesStats) headToHead {
	h := headToHead{RPSRatio: ratio(a.RPS.Median, b.RPS.Median), CPURatio: ratio(a.CPU.Median, b.CPU.Median)}
	h.Comparable = a.OK > 0 && b.OK > 0
	var perRound []float64
	for round, ma := range a.byRound {
		mb, ok := b.byRound[round]
		if !ok {
			continue
		}
		h.Rounds++
		perRound = append(perRound, ratio(ma.CPUUsPerReq, mb.CPUUsPerReq))
		if ma.Wrk.ReqPerSec > mb.Wrk.ReqPerSec {
			h.FasterIn++
		}
		if ma.CPUUsPerReq < mb.CPUUsPerReq {
			h.CheaperIn++
		}
	}
	h.CPUPerRound = summarize(perRound)
	return h
}

// Formatting helpers. NaN prints as an em dash.

func fmtInt(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func fmtF(v float64, prec int) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.*f", prec, v)
}

func fmtPct(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.0f%%", v)
}

func fmtMs(us float64) string {
	if math.IsNaN(us) {
		return "—"
	}
	return fmt.Sprintf("%.2f ms", us/1000)
}

func fmtRange(s summary, f func(float64) string) string {
	if s.N == 0 {
		return "—"
	}
	if s.N == 1 {
		return f(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.Median), f(s.Min), f(s.Max))
}

func fmtRatio(r float64, wins, rounds int) string {
	if math.IsNaN(r) {
		return "—"
	}
	return fmt.Sprintf("%.2f× (%d/%d)", r, wins, rounds)
}

func cpuPrec(v float64) string { return fmtF(v, 2) }

// labels returns the series labels in the order they first appear.
func labels(res *results) []string {
	var out []string
	seen := map[string]bool{}
	if res.Sweep != nil {
		for _, v := range res.Sweep.Variants {
			if !seen[v.Label] {
				seen[v.Label] = true
				out = append(out, v.Label)
			}
		}
		return out
	}
	for _, s := range res.Servers {
		if !seen[s.Name] {
			seen[s.Name] = true
			out = append(out, s.Name)
		}
	}
	for _, m := range res.Measurements {
		if !seen[m.Label] {
			seen[m.Label] = true
			out = append(out, m.Label)
		}
	}
	return out
}

// renderMarkdown renders the report of a run.
func renderMarkdown(res *results) string {
	var b strings.Builder
	o := res.Options
	title := "gale benchmark"
	if res.Kind == "sweep" {
		title = "gale reactor sweep"
	}
	var summaryLines []string
	if res.Kind == "sweep" {
		var warns []string
		warns, summaryLines = sweepSummary(res)
		for _, w := range warns {
			fmt.Fprintf(&b, "**Warning: %s.**\n\n", mdEscape(w))
		}
	}
	fmt.Fprintf(&b, "# %s, %s\n\n", title, res.Started.Format("2006-01-02 15:04 MST"))
	if len(summaryLines) > 0 {
		b.WriteString("**Summary.** ")
		b.WriteString(strings.Join(summaryLines, " "))
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "Machine: %s, %d CPUs online, Linux %s, %s; load average at start %s.\n", res.Machine.CPUModel, res.Machine.OnlineCPUs,
		res.Machine.Kernel, res.Machine.GoVersion, res.Machine.LoadAvg)
	fmt.Fprintf(&b, "Server pinned to CPUs %s with %d worker(s); wrk (%s) pinned to CPUs %s: -t%d -c%d, %d s measured after %d s warm-up, %d round(s), interleaved, order rotated each round.\n",
		o.ServerCPUs, o.Workers, res.WrkVersion, o.ClientCPUs, o.Threads, o.Connections, o.Seconds, o.Warmup, o.Rounds)
	if len(o.Rates) > 0 {
		fmt.Fprintf(&b, "**Open loop**: the HTTP/1.1 runs use the harness's open-loop generator (`bench %s`, pinned to the same CPUs, %d keep-alive connections) instead of wrk: requests are sent at a fixed rate whatever the server does, and latency is measured from each request's intended send time, so a stall is charged to every request it delayed (coordinated omission corrected). req/s is the rate achieved, p50/p99/p99.9 those corrected latencies; the offered rate(s): %s req/s.\n",
			openLoopCmd, o.Connections, fmtRates(o.Rates))
	}
	if hasH2(res) {
		warm := "no warm-up"
		if o.Warmup > 0 {
			warm = fmt.Sprintf("a warm-up of -n %d", max(o.H2Requests*int64(o.Warmup)/int64(max(o.Seconds, 1)), int64(o.H2Clients)))
		}
		fmt.Fprintf(&b, "HTTP/2 workloads (h2-*, h2c-*) are driven by %s instead, pinned to the same CPUs: -t%d -c%d -m%d -n %d per measured run after %s, offering only h2 in ALPN and only TLS_AES_128_GCM_SHA256 in TLS 1.3, "+
			"against one %s certificate generated for the run and served by every server. Their req/s and duration are h2load's (from the first connection to the last response), p50/p99 come from h2load's per-request log, and a run in which any request did not end in a 2xx is failed.\n",
			res.H2loadVer, o.Threads, o.H2Clients, o.H2Streams, o.H2Requests, warm, certType(res))
	}
	b.WriteString("Figures are the median over rounds with (min–max). CPU µs/req is the server's utime+stime (every process and thread, read at ns resolution from schedstat) over the measured run divided by completed requests: " +
		"with a closed-loop load generator on a shared machine, req/s is capped by the client, so CPU per request is the figure that separates servers. " +
		"Server busy is that CPU time over the run's duration and the server CPUs: below about 95% the server waited for the client, and part of its CPU per request is the cost of going idle and waking up, which a saturated server does not pay. " +
		"Switch-ins/req counts how often the server's threads were put on a CPU (schedstat), per request: each is a wake-up after sleeping or a return after preemption, and each costs a few µs of the CPU per request. " +
		"p50/p99 are medians of each run's wrk percentiles. Peak RSS is VmHWM summed over the server's processes, or the highest VmRSS sum sampled every 100 ms if larger. Errors are wrk socket errors / non-2xx-or-3xx responses. " +
		"\"Others on server CPUs\" is the median share of the server CPUs' time spent by other processes during the run (/proc/stat): high values mean the run competed with foreign load.\n\n")
	if worst, n := foreignLoad(res.Measurements); n > 0 {
		fmt.Fprintf(&b, "**Warning: in %d run(s) other processes used more than %.0f%% of the server CPUs (up to %.0f%%). "+
			"Those runs measured the machine's load more than the servers: req/s is not comparable, and CPU per request is inflated by cold caches. Rerun on a quiet machine.**\n\n",
			n, 100*foreignLoadLimit, 100*worst)
	}
	labs := labels(res)
	if res.Kind == "sweep" {
		renderSweepTables(&b, res, labs)
	} else {
		renderCompareTables(&b, res, labs)
	}
	renderConfig(&b, res)
	return b.String()
}

// renderCompareTables writes a table per workload with a row per server
// and, when gale is among the servers, the tables of gale's ratios to
// each peer.
func renderCompareTables(b *strings.Builder, res *results, labs []string) {
	hasGale := false
	for _, l := range labs {
		hasGale = hasGale || l == "gale"
	}
	var ratios []ratioRow
	for _, wid := range res.Workloads {
		ratios = append(ratios, writeWorkloadTable(b, res, wid, labs, hasGale))
	}
	if !hasGale {
		return
	}
	var peers []string
	for _, l := range labs {
		if l != "gale" {
			peers = append(peers, l)
		}
	}
	if len(peers) == 0 {
		return
	}
	writeRatioTable(b, ratios, peers)
	writeRoundRatioTable(b, ratios, peers)
}

// ratioRow is gale against each peer on one workload.
type ratioRow struct {
	workload string
	cells    map[string]headToHead // by peer
}

// writeWorkloadTable writes the table of workload wid, a row per server
// of labs that has measurements, with gale's ratios to it when hasGale,
// and returns those ratios.
func writeWorkloadTable(b *strings.Builder, res *results, wid string, labs []string, hasGale bool) ratioRow {
	w, _ := findWorkload(wid)
	fmt.Fprintf(b, "## %s: %s (GET %s)\n\n", w.ID, w.Desc, w.Path)
	b.WriteString("| server" + rowColumns)
	if hasGale {
		b.WriteString(" gale ÷ server req/s | gale ÷ server CPU/req |")
	}
	b.WriteString("\n|---" + rowAlign)
	if hasGale {
		b.WriteString("---:|---:|")
	}
	b.WriteString("\n")
	stats := map[string]seriesStats{}
	for _, l := range labs {
		stats[l] = aggregate(res.Measurements, wid, l)
	}
	rr := ratioRow{workload: wid, cells: map[string]headToHead{}}
	for _, l := range labs {
		s := stats[l]
		if s.Total == 0 {
			continue
		}
		writeRow(b, l, s)
		if hasGale {
			if l == "gale" {
				b.WriteString(" — | — |")
			} else {
				h := compare(stats["gale"], s)
				rr.cells[l] = h
				if h.Comparable {
					fmt.Fprintf(b, " %s | %s |", fmtRatio(h.RPSRatio, h.FasterIn, h.Rounds), fmtRatio(h.CPURatio, h.CheaperIn, h.Rounds))
				} else {
					b.WriteString(" — | — |")
				}
			}
		}
		b.WriteString("\n")
	}
	writeSeriesNotes(b, labs, stats)
	b.WriteString("\n")
	return rr
}

// writeRatioTable writes gale's ratios of medians to each peer, a row per
// workload.
func writeRatioTable(b *strings.Builder, ratios []ratioRow, peers []string) {
	b.WriteString("## gale relative to each peer\n\n")
	b.WriteString("Ratio of medians, gale ÷ peer, with (rounds in which gale was ahead / rounds both ran). req/s above 1 and CPU/req below 1 favour gale. " +
		"Counts of rounds are observations, not confidence intervals: a small lead with overlapping ranges is not a ranking.\n\n")
	writePeerTable(b, ratios, peers, 2, func(p string) string {
		return " vs " + p + " req/s | vs " + p + " CPU/req |"
	}, func(h headToHead) (string, bool) {
		if !h.Comparable {
			return "", false
		}
		return " " + fmtRatio(h.RPSRatio, h.FasterIn, h.Rounds) + " | " + fmtRatio(h.CPURatio, h.CheaperIn, h.Rounds) + " |", true
	})
}

// writeRoundRatioTable writes gale's CPU per request over each peer's
// within each round, a row per workload.
func writeRoundRatioTable(b *strings.Builder, ratios []ratioRow, peers []string) {
	b.WriteString("CPU per request, gale ÷ peer within each round (a round measures every server on a workload one after the other, so slow drifts of the machine cancel): median (min–max) over rounds.\n\n")
	writePeerTable(b, ratios, peers, 1, func(p string) string {
		return " vs " + p + " |"
	}, func(h headToHead) (string, bool) {
		if !h.Comparable || h.CPUPerRound.N == 0 {
			return "", false
		}
		return fmt.Sprintf(" %s× (%s–%s) |", fmtF(h.CPUPerRound.Median, 2), fmtF(h.CPUPerRound.Min, 2), fmtF(h.CPUPerRound.Max, 2)), true
	})
}

// writePeerTable writes a table of gale against each peer, a row per
// workload: cols columns per peer, headed by head(peer) and filled by
// cell(gale against the peer), or dashes where the peer did not run the
// workload or cell has nothing comparable.
func writePeerTable(b *strings.Builder, ratios []ratioRow, peers []string, cols int,
	head func(peer string) string, cell func(h headToHead) (string, bool)) {
	b.WriteString("| workload |")
	for _, p := range peers {
		b.WriteString(head(p))
	}
	b.WriteString("\n|---|")
	for range peers {
		b.WriteString(strings.Repeat("---:|", cols))
	}
	b.WriteString("\n")
	for _, rr := range ratios {
		fmt.Fprintf(b, "| %s |", rr.workload)
		for _, p := range peers {
			h, ok := rr.cells[p]
			var text string
			if ok {
				text, ok = cell(h)
			}
			if !ok {
				text = strings.Repeat(" — |", cols)
			}
			b.WriteString(text)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// rowColumns and rowAlign are the header and alignment cells of the
// columns writeRow writes after the label.
const (
	rowColumns = " | req/s | CPU µs/req | server busy | switch-ins/req | p50 | p99 | peak RSS MiB | errors | others on server CPUs | n |"
	rowAlign   = "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)

// writeRow writes the common columns of one series (without the newline).
func writeRow(b *strings.Builder, label string, s seriesStats) {
	if s.OK == 0 {
		what := "not supported"
		if s.Status == "failed" {
			what = "failed"
		}
		fmt.Fprintf(b, "| %s | %s: %s | — | — | — | — | — | — | — | — | 0/%d |", label, what, mdEscape(shorten(s.Reason, 160)), s.Total)
		return
	}
	fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %d / %d | %s%% | %d/%d |", label,
		fmtRange(s.RPS, fmtInt), fmtRange(s.CPU, cpuPrec), fmtPct(s.Busy.Median), fmtF(s.Switches.Median, 3), fmtMs(s.P50.Median), fmtMs(s.P99.Median),
		fmtF(s.RSS.Median, 1), s.SockErrs, s.Non2xx, fmtF(s.Others.Median, 0), s.OK, s.Total)
}

// writeSeriesNotes adds lines about idle connections, upstream reuse and
// partial failures under a workload's table.
func writeSeriesNotes(b *strings.Builder, labs []string, stats map[string]seriesStats) {
	var notes []string
	for _, l := range labs {
		s := stats[l]
		if s.IdleMin >= 0 {
			notes = append(notes, fmt.Sprintf("%s: at least %d idle connections still open after each run", l, s.IdleMin))
		}
		if s.UpReuse.N > 0 {
			notes = append(notes, fmt.Sprintf("%s: %s upstream requests per upstream connection", l, fmtF(s.UpReuse.Median, 1)))
		}
		if s.OK > 0 && s.OK < s.Total {
			notes = append(notes, fmt.Sprintf("%s: %d of %d runs %s: %s", l, s.Total-s.OK, s.Total, s.Status, shorten(s.Reason, 200)))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			fmt.Fprintf(b, "- %s\n", mdEscape(n))
		}
	}
}

func renderSweepTables(b *strings.Builder, res *results, labs []string) {
	w := sweptWorkload(res)
	if w.Custom {
		fmt.Fprintf(b, "## %s: %s\n\nYour config `%s`, requests: %s.\n\n", w.ID, w.Desc, res.Options.UserConfig, mdEscape(formatPaths(w.Mix)))
	} else {
		fmt.Fprintf(b, "## %s: %s (GET %s)\n\n", w.ID, w.Desc, w.Path)
	}
	if len(res.Options.Rates) > 0 {
		renderOpenLoopSweep(b, res, labs, w.ID)
	} else {
		renderClosedLoopSweep(b, res, labs, w.ID)
	}
	renderScaling(b, res, labs, w.ID)
	renderBalance(b, res, labs, w.ID)
	renderPlacementCaveat(b, res)
}

func renderConfig(b *strings.Builder, res *results) {
	b.WriteString("## Servers, versions and configuration\n\n")
	for _, s := range res.Servers {
		fmt.Fprintf(b, "- **%s** `%s` (%s, sha256 %s)\n", s.Name, s.Version, s.Bin, shorten(s.SHA256, 16))
		for _, n := range res.Fairness[s.Name] {
			fmt.Fprintf(b, "  - %s\n", n)
		}
	}
	fmt.Fprintf(b, "- **wrk** `%s` (%s)\n", res.WrkVersion, res.WrkBin)
	if len(res.Upstream) > 0 {
		b.WriteString("- **proxy upstream**: the harness's own minimal HTTP/1.1 server (`bench _upstream`, keep-alive, bodies from memory), pinned to the client CPUs, the same for every server\n")
		if tlsUpstreamWanted(res.Workloads) {
			b.WriteString("  - proxy-tls-*: the same server behind crypto/tls on a listener of its own (TLS 1.3 only, the bench certificate, session tickets on), counting full and resumed handshakes\n")
		}
	}
	if res.GitCommit != "" {
		fmt.Fprintf(b, "- gale source: %s\n", res.GitCommit)
	}
	if hasH2(res) {
		fmt.Fprintf(b, "- **h2load** `%s` (%s)\n", res.H2loadVer, res.H2loadBin)
		b.WriteString("- all servers: 127.0.0.1 only, a fresh process and port per measurement, configs and logs under runs/ in the output directory; TLS (1.3 only, the one bench certificate) on the h2-* workloads alone\n")
	} else {
		b.WriteString("- all servers: 127.0.0.1 only, no TLS from clients, a fresh process and port per measurement, configs and logs under runs/ in the output directory\n")
	}
	if len(res.Notes) > 0 {
		b.WriteString("\nNotes:\n\n")
		for _, n := range res.Notes {
			fmt.Fprintf(b, "- %s\n", mdEscape(n))
		}
	}
	if hasH2(res) {
		b.WriteString("\nNot shown by these numbers: remote networks, TLS handshakes at scale (a run makes one per h2load connection), cold caches, large working sets, many-core scaling, open-loop tail latency. See bench/README.md.\n")
	} else {
		b.WriteString("\nNot shown by these numbers: remote networks, TLS, HTTP/2, cold caches, large working sets, many-core scaling, open-loop tail latency. See bench/README.md.\n")
	}
}

// hasH2 reports whether the run has an HTTP/2 workload.
func hasH2(res *results) bool {
	for _, id := range res.Workloads {
		if w, ok := findWorkload(id); ok && w.h2() {
			return true
		}
	}
	return false
}

// certType names the key of the run's certificate.
func certType(res *results) string {
	if res.Cert == nil {
		return "(no)"
	}
	return res.Cert.KeyType
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func mdEscape(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}

// foreignLoadLimit is the share of the server CPUs taken by other
// processes above which a run is flagged in the report.
const foreignLoadLimit = 0.25

// foreignLoad returns the highest foreign share of the server CPUs over
// successful runs and how many runs exceeded foreignLoadLimit.
func foreignLoad(ms []measurement) (worst float64, over int) {
	for _, m := range ms {
		if m.Status != "ok" {
			continue
		}
		worst = max(worst, m.ServerCPUs.Others)
		if m.ServerCPUs.Others > foreignLoadLimit {
			over++
		}
	}
	return worst, over
}
