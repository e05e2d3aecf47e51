package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"gale/internal/poll"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    procStat
		wantErr bool
	}{
		{
			name: "plain",
			in:   "19338 (cat) R 19332 19332 3434 0 -1 4194304 102 0 0 0 7 3 0 0 20 0 1 0 70960 3133440 413 18446744073709551615 0\n",
			want: procStat{PID: 19338, Comm: "cat", State: 'R', PPID: 19332, PGRP: 19332, Utime: 7, Stime: 3},
		},
		{
			name: "comm with spaces and parentheses",
			in:   "42 (nginx: worker (x) ) S 41 41 41 0 -1 4194560 5 0 0 0 1234 567 0 0 20 0 1 0 1 1 1 1",
			want: procStat{PID: 42, Comm: "nginx: worker (x) ", State: 'S', PPID: 41, PGRP: 41, Utime: 1234, Stime: 567},
		},
		{name: "truncated", in: "42 (x) S 1 1 1 0", wantErr: true},
		{name: "no comm", in: "42 x S 1 1 1 0 -1 0 0 0 0 0 1 2", wantErr: true},
		{name: "bad pid", in: "x (a) S 1 1 1 0 -1 0 0 0 0 0 1 2", wantErr: true},
		{name: "bad utime", in: "1 (a) S 1 1 1 0 -1 0 0 0 0 0 z 2", wantErr: true},
		{name: "empty", in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.in))
			if tt.wantErr {
				if !errors.Is(err, errStatFormat) {
					t.Fatalf("err = %v, want errStatFormat", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    memStatus
		wantErr bool
	}{
		{"both", "Name:\tnginx\nVmPeak:\t 9999 kB\nVmHWM:\t    1920 kB\nVmRSS:\t    1800 kB\nThreads:\t1\n", memStatus{VmHWM: 1920, VmRSS: 1800}, false},
		{"kernel thread", "Name:\tkthreadd\nState:\tS\n", memStatus{}, false},
		{"bad unit", "VmHWM:\t 1 MB\n", memStatus{}, true},
		{"bad number", "VmRSS:\t x kB\n", memStatus{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatus([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"0", []int{0}, false},
		{"1-3", []int{1, 2, 3}, false},
		{"3,0-1,1", []int{0, 1, 3}, false},
		{" 2 , 4 ", []int{2, 4}, false},
		{"", nil, true},
		{"a", nil, true},
		{"3-1", nil, true},
		{"-1", nil, true},
		{"0-99999", nil, true},
	}
	for _, tt := range tests {
		got, err := parseCPUList(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseCPUList(%q) err = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseCPUList(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseCPUTimesAndShares(t *testing.T) {
	before := "cpu  31368 0 9215 99300 312 0 921 45 0 0\ncpu0 100 0 50 800 10 0 20 5 0 0\ncpu1 200 0 100 600 0 0 0 0 0 0\nintr 1 2 3\n"
	after := "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 400 0 100 1000 10 5 40 10 0 0\ncpu1 300 0 100 1500 0 0 0 0 0 0\n"
	b, err := parseCPUTimes([]byte(before))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b[0], (cpuTimes{Task: 150, IRQ: 20, Steal: 5, Total: 985}); got != want {
		t.Fatalf("cpu0 = %+v, want %+v", got, want)
	}
	if _, ok := b[-1]; ok || len(b) != 2 {
		t.Fatalf("parsed %d CPUs (%v), want cpu0 and cpu1 only", len(b), b)
	}
	a, err := parseCPUTimes([]byte(after))
	if err != nil {
		t.Fatal(err)
	}
	// cpu0: task +350, irq +25, steal +5, idle +200: total +580; own 300 ticks.
	got := shareOf(b[0], a[0], 300)
	want := cpuShares{Busy: 380.0 / 580, Others: 50.0 / 580, IRQ: 25.0 / 580, Steal: 5.0 / 580}
	if !near(got.Busy, want.Busy) || !near(got.Others, want.Others) || !near(got.IRQ, want.IRQ) || !near(got.Steal, want.Steal) {
		t.Fatalf("shares %+v, want %+v", got, want)
	}
	// Own time above the processes' time (tick rounding) never gives a negative share.
	if got := shareOf(b[0], a[0], 1000); got.Others != 0 {
		t.Fatalf("others = %v, want 0", got.Others)
	}
	if got := shareOf(a[0], a[0], 0); got != (cpuShares{}) {
		t.Fatalf("no time passed: %+v", got)
	}
	if _, err := parseCPUTimes([]byte("cpu0 1 2 x 4 5 6 7 8 9 10\n")); err == nil {
		t.Fatal("malformed line accepted")
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// fakeProc writes a minimal /proc tree: pid -> ppid with the given ticks.
func fakeProc(t *testing.T, procs map[int][3]int) string {
	t.Helper()
	root := t.TempDir()
	for pid, p := range procs {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		stat := strconv.Itoa(pid) + " (p x) S " + strconv.Itoa(p[0]) + " 1 1 0 -1 0 0 0 0 0 " + strconv.Itoa(p[1]) + " " + strconv.Itoa(p[2]) + " 0 0 20 0 1 0\n"
		status := "Name:\tp\nVmHWM:\t" + strconv.Itoa(p[1]*10) + " kB\nVmRSS:\t" + strconv.Itoa(p[2]*10) + " kB\n"
		os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644)
		os.WriteFile(filepath.Join(dir, "status"), []byte(status), 0o644)
		for tid := pid * 100; tid < pid*100+2; tid++ { // two threads each
			td := filepath.Join(dir, "task", strconv.Itoa(tid))
			os.MkdirAll(td, 0o755)
			os.WriteFile(filepath.Join(td, "schedstat"), []byte(strconv.Itoa(p[1]*1000000)+" 55 7\n"), 0o644)
		}
	}
	os.WriteFile(filepath.Join(root, "loadavg"), []byte("0.50 0.25 0.10 1/99 1234\n"), 0o644)
	os.WriteFile(filepath.Join(root, "cpuinfo"), []byte("processor\t: 0\ncpu MHz\t\t: 2299.998\n\nprocessor\t: 1\ncpu MHz\t\t: 1200.5\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "self"), 0o755)
	return root
}

func TestDescendantsAndSampleTree(t *testing.T) {
	// 10 is the master; 11 and 12 its workers; 13 a child of 12; 20 unrelated.
	root := fakeProc(t, map[int][3]int{
		10: {1, 5, 1}, 11: {10, 100, 20}, 12: {10, 200, 30}, 13: {12, 1, 1}, 20: {1, 999, 999},
	})
	old := procRoot
	procRoot = root
	defer func() { procRoot = old }()
	if got, want := descendants(10), []int{10, 11, 12, 13}; !reflect.DeepEqual(got, want) {
		t.Fatalf("descendants = %v, want %v", got, want)
	}
	s, err := sampleTree(10)
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUTicks != 6+120+230+2 || s.HWMKiB != 3060 || s.RSSKiB != 520 || len(s.PIDs) != 4 ||
		s.Threads != 8 || s.CPUNanos != 2*(5+100+200+1)*1000000 || s.SwitchIns != 8*7 {
		t.Fatalf("sample = %+v", s)
	}
	if got := sumRSS([]int{11, 12, 99}); got != 500 {
		t.Fatalf("sumRSS = %d, want 500", got)
	}
	if _, err := sampleTree(99); err == nil {
		t.Fatal("missing root: want error")
	}
	if got := loadAvg(); got != "0.50 0.25 0.10" {
		t.Fatalf("loadAvg = %q", got)
	}
	if got := cpuMHz([]int{1, 0, 5}); !reflect.DeepEqual(got, []float64{1200.5, 2299.998, 0}) {
		t.Fatalf("cpuMHz = %v", got)
	}
}

func TestParseSchedstat(t *testing.T) {
	if v, runs, err := parseSchedstat([]byte("1344061 361130 10\n")); err != nil || v != 1344061 || runs != 10 {
		t.Fatalf("got %d, %d, %v", v, runs, err)
	}
	for _, bad := range []string{"", "1 2", "x 2 3", "1 2 x", "1 2 3 4"} {
		if _, _, err := parseSchedstat([]byte(bad)); err == nil {
			t.Errorf("parseSchedstat(%q) accepted", bad)
		}
	}
}

func TestSampleTreeSelf(t *testing.T) {
	s, err := sampleTree(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.HWMKiB <= 0 || s.RSSKiB <= 0 || len(s.PIDs) == 0 || s.PIDs[0] != os.Getpid() || s.Threads == 0 || s.CPUNanos == 0 {
		t.Fatalf("sample of self = %+v", s)
	}
}

// TestProcStopKillsGroup starts a shell with a background child, like an
// nginx master with a worker, and checks that stop ends both.
func TestProcStopKillsGroup(t *testing.T) {
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("taskset not installed")
	}
	log := filepath.Join(t.TempDir(), "log")
	p, err := startProc([]string{"sh", "-c", "sleep 30 & echo child $!; wait"}, nil, "0", log)
	if err != nil {
		t.Fatal(err)
	}
	var child int
	eventually(t, 5*time.Second, "the child's pid in the log", func() bool {
		b, _ := os.ReadFile(log)
		if f := strings.Fields(string(b)); len(f) == 2 {
			child, _ = strconv.Atoi(f[1])
		}
		return child != 0
	})
	if got := descendants(p.pid()); len(got) < 2 {
		t.Fatalf("descendants = %v, want the shell and its child", got)
	}
	start := time.Now()
	p.stop(2 * time.Second)
	if !p.exited() {
		t.Fatal("leader still running")
	}
	eventually(t, 10*time.Second, "the child to end", func() bool {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(child), "stat"))
		if err != nil {
			return true // gone
		}
		st, err := parseStat(b)
		return err == nil && (st.State == 'Z' || st.PGRP != p.pid()) // a zombie init reaps shortly, or a reused pid
	})
	// The child sleeps 30 s: ending well before proves it was killed.
	if time.Since(start) > 15*time.Second {
		t.Fatalf("stop took %v", time.Since(start))
	}
}

// eventually polls cond (poll.Must) for up to d: cond reads a file or
// /proc, which announce nothing.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.Must(t, d, what, cond)
}
