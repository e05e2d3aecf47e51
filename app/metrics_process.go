package app

import (
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	gm "gale/metrics"
)

// Process and Go runtime metrics, under the names Prometheus's own client
// libraries use (process_*, go_*), so that existing dashboards read them.
// They come from /proc/self and runtime/metrics, which, unlike
// runtime.ReadMemStats, does not stop the world.

// runtimeSamples are the runtime/metrics a scrape reads.
var runtimeSamples = []struct {
	key, name, help string
	typ             gm.Type
}{
	{"/sched/goroutines:goroutines", "go_goroutines", "Goroutines that currently exist.", gm.Gauge},
	{"/memory/classes/heap/objects:bytes", "go_memstats_heap_alloc_bytes", "Bytes of allocated heap objects.", gm.Gauge},
	{"/memory/classes/total:bytes", "go_memstats_sys_bytes", "Bytes of memory obtained from the OS.", gm.Gauge},
	{"/gc/cycles/total:gc-cycles", "go_gc_cycles_total", "Completed GC cycles.", gm.Counter},
}

// writeProcessMetrics writes the process's and the runtime's state.
func writeProcessMetrics(w *gm.Writer, started time.Time) {
	if cpu, rss, ok := procStat(); ok {
		w.Family("process_cpu_seconds_total", gm.Counter, "User and system CPU time spent, in seconds.")
		w.Float("process_cpu_seconds_total", cpu)
		w.Family("process_resident_memory_bytes", gm.Gauge, "Resident memory size in bytes.")
		w.Int("process_resident_memory_bytes", rss)
	}
	if n, ok := openFDs(); ok {
		w.Family("process_open_fds", gm.Gauge, "Open file descriptors.")
		w.Int("process_open_fds", n)
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil {
		w.Family("process_max_fds", gm.Gauge, "The limit on open file descriptors.")
		w.Uint("process_max_fds", rl.Cur)
	}
	w.Family("process_start_time_seconds", gm.Gauge, "When the server was made, in unix seconds.")
	w.Float("process_start_time_seconds", float64(started.UnixNano())/1e9)
	samples := make([]metrics.Sample, len(runtimeSamples))
	for i := range runtimeSamples {
		samples[i].Name = runtimeSamples[i].key
	}
	metrics.Read(samples)
	for i, r := range runtimeSamples {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			continue
		}
		w.Family(r.name, r.typ, r.help)
		w.Uint(r.name, samples[i].Value.Uint64())
	}
}

// procStat reads CPU time and resident memory from /proc/self/stat.
func procStat() (cpuSeconds float64, rss int64, ok bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, false
	}
	// Fields after the command, which is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime, stime are fields 14, 15; rss is 24.
	if len(f) < 22 {
		return 0, 0, false
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	pages, err3 := strconv.ParseInt(f[21], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	const ticks = 100 // USER_HZ on Linux
	return float64(ut+st) / ticks, pages * int64(os.Getpagesize()), true
}

// openFDs counts the process's open descriptors.
func openFDs() (int64, bool) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, false
	}
	return int64(len(names) - 1), true // less the directory being read
}
