package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

const lockFile = "/tmp/gale-bench.lock"

type sweepConfig struct {
	port, rounds, seconds, conns int
	sizes                        []int
	modes                        []mode
}

// runSweep measures every size and mode in interleaved rounds (each round
// and size starts the modes at a different place in the rotation) and
// prints each run and then the summary table.
func runSweep(cfg sweepConfig) error {
	if err := preflight(); err != nil {
		return err
	}
	if err := os.WriteFile(lockFile, nil, 0o644); err != nil {
		return err
	}
	defer os.Remove(lockFile)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; os.Remove(lockFile); os.Exit(130) }()

	waitForQuiet()
	la, _ := loadavg()
	fmt.Printf("loadavg at start: %s\n", la)
	if err := checkAll(cfg); err != nil {
		return err
	}
	var samples []sample
	n := len(cfg.modes)
	for r := 0; r < cfg.rounds; r++ {
		for si, size := range cfg.sizes {
			for k := 0; k < n; k++ {
				m := cfg.modes[(k+r+si)%n].name
				s, err := measure(cfg, r, size, m)
				if err != nil {
					return err
				}
				fmt.Printf("round %d  %-5s %-14s %7.2f µs/req  %8.0f req/s  busy %3.0f%%  valid %v\n",
					r+1, sizeLabel(size), m, s.usPerReq, s.reqPerSec, 100*s.busy, s.valid)
				samples = append(samples, s)
			}
		}
	}
	fmt.Println()
	fmt.Print(summaryTable(cfg, samples))
	la, _ = loadavg()
	fmt.Printf("\nloadavg at end: %s\n", la)
	return nil
}

func preflight() error {
	for _, bin := range []string{"wrk", "taskset"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s not found", bin)
		}
	}
	if runtime.NumCPU() < 2 {
		return fmt.Errorf("need 2 CPUs (server on 0, wrk on 1), have %d", runtime.NumCPU())
	}
	return nil
}

// waitForQuiet waits up to 5 minutes, polling every 30 s, for the 1-minute
// load average to fall to 1.5 or below.
func waitForQuiet() {
	for deadline := time.Now().Add(5 * time.Minute); ; {
		la, one := loadavg()
		if one <= 1.5 || time.Now().After(deadline) {
			return
		}
		fmt.Printf("load %s: waiting\n", la)
		time.Sleep(30 * time.Second)
	}
}

// checkAll verifies every mode's responses byte for byte at the largest
// size, where sends stop on EAGAIN and resume on EPOLLOUT.
func checkAll(cfg sweepConfig) error {
	size := 0
	for _, s := range cfg.sizes {
		size = max(size, s)
	}
	for _, m := range cfg.modes {
		cmd, err := startServer(cfg.port, size, m.name)
		if err != nil {
			return err
		}
		err = checkResponses(cfg.port, size)
		stopServer(cmd)
		if err != nil {
			return fmt.Errorf("check %s/%s: %w", m.name, sizeLabel(size), err)
		}
	}
	fmt.Printf("check: every mode's responses at %s are byte-exact\n", sizeLabel(size))
	return nil
}
