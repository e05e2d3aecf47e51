package app

import (
	"os"
	"runtime"
)

// spareProc makes sure the Go runtime has one more P than there are event
// loops, unless GOMAXPROCS is set in the environment.
//
// Each loop spends its idle time blocked in epoll_wait and much of its
// busy time in socket system calls. When every P belongs to a loop (one
// loop per CPU, or a process pinned to fewer CPUs than loops), the
// runtime's monitor thread finds no idle P and takes a loop's P away
// whenever a system call spans two of its ticks, so it never backs off
// from its 20 µs period: measured on one pinned core serving a 128-byte
// file, sysmon's wake-ups alone were about 10% of the server's CPU and
// the CPU per request 20-30% higher than with a spare P. The spare P
// also runs the file cache's workers and off-loop transfers without
// taking a loop's.
func spareProc(loops int) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	if runtime.GOMAXPROCS(0) <= loops {
		runtime.GOMAXPROCS(loops + 1)
	}
}
