package app

import (
	"os"
	"runtime"
)

// spareProc makes sure the Go runtime has one more P than there are event
// loops, unless GOMAXPROCS is set in the environment.
//
// Each loop spends its idle time blocked in epoll_wait and much of its
// busy time in socket system calls. It is a trade-off between two costs
// of the Go scheduler around gnet's poll loop:
//
//   - Without a spare P, the runtime's monitor thread finds no idle P and
//     takes a loop's P away whenever a system call spans two of its ticks,
//     so it stays at its 20 µs period (perf on one pinned core: its
//     wake-ups were several percent of the server's CPU).
//   - With a spare P, gnet's runtime.Gosched after every empty poll wakes
//     a spinning thread that finds nothing and parks again (perf under
//     connection churn: up to a fifth of the CPU in that path).
//
// On one pinned core the two measured the same within noise (respond and
// a 128-byte file, 3 interleaved runs each). The spare P is kept because
// it also runs the file cache's workers and off-loop transfers without
// taking a loop's P. Set GOMAXPROCS to override it.
func spareProc(loops int) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	if runtime.GOMAXPROCS(0) <= loops {
		runtime.GOMAXPROCS(loops + 1)
	}
}
