package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// sample is one measured run: one size, one mode, one round.
type sample struct {
	round, size int
	mode        string
	usPerReq    float64
	reqPerSec   float64
	busy        float64 // server CPU seconds per wall second
	valid       bool
}

// startServer runs this binary as the server, pinned to CPU 0, and waits
// until it accepts connections. taskset execs it, so the PID is the server's.
func startServer(port, size int, m string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("taskset", "-c", "0", exe, "-mode", m, "-size", strconv.Itoa(size), "-port", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if nc, err := net.Dial("tcp", addr); err == nil {
			nc.Close()
			return cmd, nil
		}
	}
	stopServer(cmd)
	return nil, fmt.Errorf("server %s/%s did not listen on %s", m, sizeLabel(size), addr)
}

func stopServer(cmd *exec.Cmd) {
	cmd.Process.Kill()
	cmd.Wait()
}

// measure runs one size and mode: 1 s of wrk to warm up, then seconds of
// wrk with the server's CPU time read before and after.
func measure(cfg sweepConfig, round, size int, m string) (sample, error) {
	s := sample{round: round, size: size, mode: m}
	cmd, err := startServer(cfg.port, size, m)
	if err != nil {
		return s, err
	}
	defer stopServer(cmd)
	if _, _, err := runWrk(cfg.port, cfg.conns, 1); err != nil {
		return s, err
	}
	pid := cmd.Process.Pid
	cpu0, err := procCPU(pid)
	if err != nil {
		return s, err
	}
	t0 := time.Now()
	w, _, err := runWrk(cfg.port, cfg.conns, cfg.seconds)
	if err != nil {
		return s, err
	}
	wall := time.Since(t0).Seconds()
	cpu1, err := procCPU(pid)
	if err != nil {
		return s, err
	}
	s.valid = w.errors == 0 && w.requests > 0
	if w.requests > 0 {
		s.usPerReq = (cpu1 - cpu0) * 1e6 / float64(w.requests)
		s.reqPerSec = float64(w.requests) / float64(cfg.seconds)
	}
	s.busy = (cpu1 - cpu0) / wall
	return s, nil
}
