// Command bench compares gale with nginx, Caddy and lighttpd on one
// machine, and sweeps gale's reactor settings.
//
//	go run ./bench -h          # the comparison and its flags
//	go run ./bench sweep -h    # the reactor-tuning lab
//	go run ./bench report R.json  # render R.md and R.svg again from a run
//	go run ./bench bulk           # a 256 MiB download with curl, HTTP/1.1 against HTTP/2
//	go run ./bench soak -duration 1h  # hours of mixed load with flat memory
//
// Each server runs pinned to the server CPUs with the same number of
// workers, wrk runs pinned to the client CPUs, rounds are interleaved with
// a rotating order, and every response is checked before and after each
// measurement. Results (median, min, max) are printed as Markdown and
// written with every raw measurement to results.json and chart.svg. The
// method and its caveats are in README.md next to this file.
package main

import (
	"io"
	"os"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == openLoopCmd {
		os.Exit(openLoopMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == upstreamCmd {
		os.Exit(upstreamMain(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to the sweep or the comparison and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "sweep" {
		return runSweep(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == soakCmd {
		return runSoak(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "bulk" {
		return runBulk(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "report" {
		return runReport(args[1:], stdout, stderr)
	}
	return runCompare(args, stdout, stderr)
}
