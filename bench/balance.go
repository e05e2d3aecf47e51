package main

import (
	"cmp"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// threadCPU is one server thread's on-CPU time during a run.
type threadCPU struct {
	TID        int     `json:"tid"`
	Name       string  `json:"name"`  // comm
	CPUSeconds float64 `json:"cpu_s"` // schedstat run time during the run
	Share      float64 `json:"share"` // of the whole tree's run time during the run
}

// threadStart is a thread's name and cumulative run time, ns.
type threadStart struct {
	name string
	ns   uint64
}

// threadTimes reads every thread of pids: name and schedstat run time.
func threadTimes(pids []int) map[int]threadStart {
	out := map[int]threadStart{}
	for _, pid := range pids {
		dir := filepath.Join(procRoot, strconv.Itoa(pid), "task")
		eachProcFile(dir, "schedstat", func(tid int, b []byte) {
			ns, _, err := parseSchedstat(b)
			if err != nil {
				return
			}
			comm, _ := os.ReadFile(filepath.Join(dir, strconv.Itoa(tid), "comm"))
			out[tid] = threadStart{name: strings.TrimSpace(string(comm)), ns: ns}
		})
	}
	return out
}

// busiestThreads returns the n threads that ran longest between two
// readings, with their share of all threads' run time in between. A thread
// born during the run counts from zero; one that died is left out.
func busiestThreads(before, after map[int]threadStart, n int) []threadCPU {
	var out []threadCPU
	var total float64
	for tid, a := range after {
		d := float64(a.ns)
		if b, ok := before[tid]; ok && a.ns >= b.ns {
			d = float64(a.ns - b.ns)
		}
		total += d
		out = append(out, threadCPU{TID: tid, Name: a.name, CPUSeconds: d / 1e9})
	}
	out = topN(out, n, func(t threadCPU) float64 { return t.CPUSeconds }, func(a, b threadCPU) int { return cmp.Compare(a.TID, b.TID) })
	for i := range out {
		if total > 0 {
			out[i].Share = out[i].CPUSeconds * 1e9 / total
		}
	}
	return out
}
