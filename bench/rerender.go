package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// runReport renders the Markdown and the chart again from a results.json,
// so that a committed run picks up what the report has learned to show
// since (it measures nothing). Usage: report FILE.json; it writes FILE.md
// and FILE.svg next to it (with FILE-latency.svg and FILE-scaling.svg
// for a sweep that has those views).
func runReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.Duration("p99-target", 0, "judge an open-loop sweep's sustained rates against this p99 instead of the run's own -p99-target")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 || !strings.HasSuffix(fs.Arg(0), ".json") {
		fmt.Fprintln(stderr, "usage: go run ./bench report [-p99-target D] RESULTS.json   (writes RESULTS.md and RESULTS.svg next to it)")
		return 2
	}
	in := fs.Arg(0)
	b, err := os.ReadFile(in)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		fmt.Fprintf(stderr, "bench: %s: %v\n", in, err)
		return 1
	}
	if *target > 0 {
		res.Options.P99Target = float64(target.Microseconds())
	}
	base := strings.TrimSuffix(in, ".json")
	if err := os.WriteFile(base+".md", []byte(renderMarkdown(&res)), 0o644); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	for suffix, svg := range chartFiles(&res) {
		if err := os.WriteFile(base+suffix+".svg", []byte(svg), 0o644); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		fmt.Fprintf(stdout, "wrote %s%s.svg\n", base, suffix)
	}
	fmt.Fprintf(stdout, "wrote %s.md\n", base)
	return 0
}
