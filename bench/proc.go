package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sentinel errors of the /proc readers.
var (
	errStatFormat   = errors.New("bench: malformed /proc/PID/stat")
	errStatusFormat = errors.New("bench: malformed /proc/PID/status")
	errCPUList      = errors.New("bench: malformed CPU list")
)

// procStat is the part of /proc/PID/stat the harness uses. Times are in
// clock ticks (USER_HZ) and cover every thread of the process.
type procStat struct {
	PID   int
	Comm  string
	State byte
	PPID  int
	PGRP  int
	Utime uint64 // field 14
	Stime uint64 // field 15
}

// parseStat parses the content of /proc/PID/stat. The command name is
// enclosed in parentheses and may itself contain spaces and parentheses,
// so the fields are counted from the last ')'.
func parseStat(b []byte) (procStat, error) {
	var s procStat
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 1 || closing < open {
		return s, errStatFormat
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return s, fmt.Errorf("%w: pid: %v", errStatFormat, err)
	}
	s.PID = pid
	s.Comm = string(b[open+1 : closing])
	rest := strings.Fields(string(b[closing+1:]))
	// rest[0] is field 3 (state); field n is rest[n-3].
	if len(rest) < 13 || len(rest[0]) != 1 {
		return s, fmt.Errorf("%w: %d fields after comm", errStatFormat, len(rest))
	}
	s.State = rest[0][0]
	if s.PPID, err = strconv.Atoi(rest[1]); err != nil {
		return s, fmt.Errorf("%w: ppid: %v", errStatFormat, err)
	}
	if s.PGRP, err = strconv.Atoi(rest[2]); err != nil {
		return s, fmt.Errorf("%w: pgrp: %v", errStatFormat, err)
	}
	if s.Utime, err = strconv.ParseUint(rest[11], 10, 64); err != nil {
		return s, fmt.Errorf("%w: utime: %v", errStatFormat, err)
	}
	if s.Stime, err = strconv.ParseUint(rest[12], 10, 64); err != nil {
		return s, fmt.Errorf("%w: stime: %v", errStatFormat, err)
	}
	return s, nil
}

// memStatus holds the memory lines of /proc/PID/status, in KiB.
type memStatus struct {
	VmHWM int64 // peak resident set size
	VmRSS int64 // current resident set size
}

// parseStatus reads VmHWM and VmRSS from the content of /proc/PID/status.
// Kernel threads and zombies have neither line; both are then 0.
func parseStatus(b []byte) (memStatus, error) {
	var m memStatus
	for _, line := range strings.Split(string(b), "\n") {
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &m.VmHWM
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &m.VmRSS
		default:
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" {
			return m, fmt.Errorf("%w: %q", errStatusFormat, line)
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return m, fmt.Errorf("%w: %q", errStatusFormat, line)
		}
		*dst = v
	}
	return m, nil
}

// procRoot is the proc file system; tests point it elsewhere.
var procRoot = "/proc"

// eachProcFile calls f with the number and the contents of file in each
// numbered entry of dir (processes in /proc, threads in /proc/PID/task),
// passing over those that vanish while being read.
func eachProcFile(dir, file string, f func(id int, b []byte)) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), file))
		if err != nil {
			continue
		}
		f(id, b)
	}
}

// descendants returns root and every process whose parent chain leads to
// root, sorted. Processes that vanish while being read are left out.
func descendants(root int) []int {
	children := map[int][]int{}
	eachProcFile(procRoot, "stat", func(pid int, b []byte) {
		if st, err := parseStat(b); err == nil {
			children[st.PPID] = append(children[st.PPID], pid)
		}
	})
	out := []int{root}
	for i := 0; i < len(out) && i < 10000; i++ {
		out = append(out, children[out[i]]...)
	}
	sort.Ints(out)
	return out
}

// treeSample is one reading of a process tree.
type treeSample struct {
	PIDs      []int
	Threads   int    // tasks whose schedstat was read
	CPUTicks  uint64 // utime+stime summed over the tree, in clock ticks
	CPUNanos  uint64 // on-CPU time of every live thread (schedstat), ns; 0 if unavailable
	SwitchIns uint64 // times a live thread was switched onto a CPU (schedstat)
	HWMKiB    int64  // VmHWM summed over the tree
	RSSKiB    int64  // VmRSS summed over the tree
}

// parseSchedstat parses /proc/PID/task/TID/schedstat: the nanoseconds the
// task has run on a CPU (the kernel's sum_exec_runtime, from which
// utime+stime are derived) and the number of times it was switched onto
// one (every wake-up after sleeping counts, and so does every return after
// being preempted).
func parseSchedstat(b []byte) (ns, switchIns uint64, err error) {
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return 0, 0, fmt.Errorf("bench: malformed schedstat %q", b)
	}
	if ns, err = strconv.ParseUint(f[0], 10, 64); err != nil {
		return 0, 0, err
	}
	switchIns, err = strconv.ParseUint(f[2], 10, 64)
	return ns, switchIns, err
}

// threadSched sums the schedstat run time and switch-ins of every thread
// of pid.
func threadSched(pid int) (ns, switchIns uint64, threads int) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, 0
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue
		}
		if v, r, err := parseSchedstat(b); err == nil {
			ns += v
			switchIns += r
			threads++
		}
	}
	return ns, switchIns, threads
}

// sampleTree reads the stat and status files of root's process tree.
func sampleTree(root int) (treeSample, error) {
	var t treeSample
	for _, pid := range descendants(root) {
		dir := filepath.Join(procRoot, strconv.Itoa(pid))
		b, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			if pid == root {
				return t, err
			}
			continue
		}
		st, err := parseStat(b)
		if err != nil {
			return t, err
		}
		b, err = os.ReadFile(filepath.Join(dir, "status"))
		if err != nil {
			continue
		}
		m, err := parseStatus(b)
		if err != nil {
			return t, err
		}
		t.PIDs = append(t.PIDs, pid)
		t.CPUTicks += st.Utime + st.Stime
		ns, sw, n := threadSched(pid)
		t.CPUNanos += ns
		t.SwitchIns += sw
		t.Threads += n
		t.HWMKiB += m.VmHWM
		t.RSSKiB += m.VmRSS
	}
	return t, nil
}

// sumRSS sums VmRSS over pids (those that have exited count 0). Cheaper
// than sampleTree: it reads one file per process and does not walk /proc.
func sumRSS(pids []int) int64 {
	var total int64
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "status"))
		if err != nil {
			continue
		}
		if m, err := parseStatus(b); err == nil {
			total += m.VmRSS
		}
	}
	return total
}

// clockTicks returns USER_HZ, the unit of the times in /proc/PID/stat.
func clockTicks() int {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && n > 0 {
			return n
		}
	}
	return 100
}

// parseCPUList parses a list such as "0", "1-3" or "0,2-3" into sorted,
// distinct CPU numbers.
func parseCPUList(s string) ([]int, error) {
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("%w: %q", errCPUList, s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 4096 {
				return nil, fmt.Errorf("%w: %q", errCPUList, s)
			}
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	out := make([]int, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Ints(out)
	return out, nil
}

// cpuMHz reads the current clock of the given CPUs from /proc/cpuinfo
// (0 where it is not reported).
func cpuMHz(cpus []int) []float64 {
	b, err := os.ReadFile(filepath.Join(procRoot, "cpuinfo"))
	out := make([]float64, len(cpus))
	if err != nil {
		return out
	}
	byCPU := map[int]float64{}
	cur := -1
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			cur, _ = strconv.Atoi(v)
		case "cpu MHz":
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				byCPU[cur] = f
			}
		}
	}
	for i, c := range cpus {
		out[i] = byCPU[c]
	}
	return out
}

// loadAvg returns the first three fields of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile(filepath.Join(procRoot, "loadavg"))
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// proc is a process the harness started, in a process group of its own.
// Its methods are safe for use by one goroutine at a time.
type proc struct {
	cmd  *exec.Cmd
	argv []string
	done chan struct{} // closed when the process has been reaped
	err  error         // exit status, valid after done is closed
	log  string        // path of the file holding its stdout and stderr
}

// startProc starts argv pinned to cpus (via taskset, which execs the
// program so the PID is the program's own) in a new process group, with
// stdout and stderr written to logPath. env is added to the environment.
func startProc(argv []string, env []string, cpus string, logPath string) (*proc, error) {
	full := append([]string{"taskset", "-c", cpus}, argv...)
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, argv: full, done: make(chan struct{}), log: logPath}
	registerProc(p)
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// pid returns the process ID (also its process group ID).
func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// logTail returns the last n bytes of the process's output, on one line.
func (p *proc) logTail(n int) string {
	b, _ := os.ReadFile(p.log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	s := strings.TrimSpace(string(b))
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " | ")), " ")
}

// stop sends SIGTERM to the process group the harness created, waits up to
// grace, then sends SIGKILL to the group. It only ever signals that group.
func (p *proc) stop(grace time.Duration) {
	defer unregisterProc(p)
	pgid := p.pid()
	if !p.exited() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
		}
	}
	// Children (nginx workers) may outlive the leader briefly. Once the
	// leader is reaped its PID could be reused by an unrelated process that
	// leads a group of the same number: signal the group only while that
	// PID is free or still ours.
	if !p.exited() || !pidExists(pgid) {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	select {
	case <-p.done:
	case <-time.After(grace):
	}
}

// pidExists reports whether a process with this PID exists.
func pidExists(pid int) bool {
	_, err := os.Stat(filepath.Join(procRoot, strconv.Itoa(pid)))
	return err == nil
}

// cpuTimes are the jiffies of one or more CPUs from /proc/stat.
type cpuTimes struct {
	Task  uint64 // user+nice+system: time charged to processes
	IRQ   uint64 // irq+softirq: interrupts and network-stack work charged to no process
	Steal uint64 // taken by the hypervisor
	Total uint64 // all of the above plus idle and iowait
}

// parseCPUTimes parses the per-CPU lines ("cpuN ...") of /proc/stat.
func parseCPUTimes(b []byte) (map[int]cpuTimes, error) {
	out := map[int]cpuTimes{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil {
			continue
		}
		var v [8]uint64 // user nice system idle iowait irq softirq steal
		for i := range v {
			if v[i], err = strconv.ParseUint(f[i+1], 10, 64); err != nil {
				return nil, fmt.Errorf("bench: malformed /proc/stat line %q", line)
			}
		}
		t := cpuTimes{Task: v[0] + v[1] + v[2], IRQ: v[5] + v[6], Steal: v[7]}
		t.Total = t.Task + t.IRQ + t.Steal + v[3] + v[4]
		out[n] = t
	}
	return out, nil
}

// readCPUTimes returns the summed times of cpus.
func readCPUTimes(cpus []int) cpuTimes {
	var t cpuTimes
	b, err := os.ReadFile(filepath.Join(procRoot, "stat"))
	if err != nil {
		return t
	}
	all, err := parseCPUTimes(b)
	if err != nil {
		return t
	}
	for _, c := range cpus {
		a := all[c]
		t.Task += a.Task
		t.IRQ += a.IRQ
		t.Steal += a.Steal
		t.Total += a.Total
	}
	return t
}

// cpuShares are fractions (0..1) of a set of CPUs' time over an interval.
type cpuShares struct {
	Busy   float64 `json:"busy"`   // not idle: processes, interrupts and steal
	Others float64 `json:"others"` // processes other than the measured one(s)
	IRQ    float64 `json:"irq"`    // interrupts and softirqs (the loopback network stack, mostly)
	Steal  float64 `json:"steal"`  // taken by the hypervisor
}

// shareOf returns the shares between two readings; own is the measured
// processes' time on these CPUs, in the same clock ticks. Shares are 0
// when no time passed.
func shareOf(before, after cpuTimes, own float64) cpuShares {
	if after.Total <= before.Total {
		return cpuShares{}
	}
	total := float64(after.Total - before.Total)
	task := float64(after.Task - before.Task)
	irq := float64(after.IRQ - before.IRQ)
	steal := float64(after.Steal - before.Steal)
	return cpuShares{Busy: (task + irq + steal) / total, Others: max(task-own, 0) / total, IRQ: irq / total, Steal: steal / total}
}
