package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gale/config"
)

// The pid file: serve writes it, stop and reload signal the process it
// names when there is no admin API to ask.

// writePIDFile writes the process ID to cfg's pid_file (if any); the
// returned function removes it, unless another process wrote its own
// since.
func writePIDFile(cfg *config.Config) (func(), error) {
	path := cfg.PIDFile
	if path == "" {
		return func() {}, nil
	}
	pid := strconv.Itoa(os.Getpid())
	if err := os.WriteFile(path, []byte(pid+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("pid_file: %w", err)
	}
	return func() {
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == pid {
			_ = os.Remove(path)
		}
	}, nil
}

// stopPID sends SIGTERM to the pid in cfg's pid_file and waits for the
// process to exit, for at most d.
func stopPID(cfg *config.Config, d time.Duration, stdout, stderr io.Writer) int {
	pid, ok := signalPID(cfg, syscall.SIGTERM, "stop", stderr)
	if !ok {
		return 1
	}
	return waitGone(pid, d, stdout, stderr)
}

// signalPID sends sig to the pid in cfg's pid_file, and says on stderr,
// as gale cmd, why it could not.
func signalPID(cfg *config.Config, sig syscall.Signal, cmd string, stderr io.Writer) (pid int, ok bool) {
	pid, err := readPID(cfg)
	if err == nil {
		err = syscall.Kill(pid, sig)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gale %s: %v\n", cmd, err)
		return 0, false
	}
	return pid, true
}

// waitGone waits until process pid has exited, for at most d.
func waitGone(pid int, d time.Duration, stdout, stderr io.Writer) int {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	end := time.Now().Add(d)
	for running(pid) {
		if time.Now().After(end) {
			fmt.Fprintf(stderr, "gale stop: process %d still runs after %s\n", pid, d)
			return 1
		}
		<-tick.C
	}
	fmt.Fprintf(stdout, "stopped (pid %d)\n", pid)
	return 0
}

// running reports whether process pid runs: it exists and is not a
// zombie (exited, not yet reaped by its parent).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no procfs: the signal test is all there is
	}
	// "PID (COMM) STATE ...": COMM may hold spaces and parentheses.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}

// hupPID sends SIGHUP to the pid in cfg's pid_file (reload without an
// admin API).
func hupPID(cfg *config.Config, stdout, stderr io.Writer) int {
	pid, ok := signalPID(cfg, syscall.SIGHUP, "reload", stderr)
	if !ok {
		return 1
	}
	fmt.Fprintf(stdout, "sent SIGHUP to pid %d (its log says whether the config was taken)\n", pid)
	return 0
}

// readPID reads cfg's pid_file.
func readPID(cfg *config.Config) (int, error) {
	if cfg.PIDFile == "" {
		return 0, errors.New("the config has neither admin.listen nor pid_file: there is no way to reach the server")
	}
	b, err := os.ReadFile(cfg.PIDFile)
	if err != nil {
		return 0, fmt.Errorf("pid_file: %w (is gale running?)", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid_file %s: expected a process ID, got %q", cfg.PIDFile, strings.TrimSpace(string(b)))
	}
	return pid, nil
}
