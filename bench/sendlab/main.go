// Command sendlab measures the server CPU cost of sending one cached HTTP/1.1
// response (a ~200-byte head and a body of a fixed size) with different
// system-call strategies: one writev from memory, the head with MSG_MORE or
// under TCP_CORK followed by sendfile from a sealed memfd, the head with
// MSG_MORE followed by splice through a long-lived per-connection pipe, and
// two plain writes.
//
// The server is a minimal single-threaded epoll keep-alive responder built on
// golang.org/x/sys/unix. The sweep runs it pinned to CPU 0 for every size and
// mode, drives it with wrk pinned to CPU 1, and reports the server's CPU time
// (utime+stime from /proc/PID/stat) per request, with each mode's ratio to
// writev in the same round.
//
//	go run ./bench/sendlab -sweep                                 # 3 interleaved rounds, all sizes and modes
//	go run ./bench/sendlab -sweep -rounds 1 -sizes 64k,1m -seconds 2
//	go run ./bench/sendlab -mode more-splice -size 256k -port 18480  # the server alone
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	var (
		modeName = flag.String("mode", "writev", "send strategy: "+strings.Join(modeNames(), ", "))
		size     = flag.String("size", "64k", "body size (bytes, or with a k or m suffix)")
		port     = flag.Int("port", 18480, "port on 127.0.0.1")
		sweep    = flag.Bool("sweep", false, "run the interleaved sweep over sizes and modes")
		sizes    = flag.String("sizes", "16k,64k,128k,256k,1m", "sweep: body sizes")
		modes    = flag.String("modes", strings.Join(modeNames(), ","), "sweep: modes")
		rounds   = flag.Int("rounds", 3, "sweep: rounds")
		seconds  = flag.Int("seconds", 3, "sweep: measured seconds per run (after a 1 s warm-up)")
		conns    = flag.Int("c", 64, "sweep: wrk connections")
	)
	flag.Parse()
	if *sweep {
		cfg := sweepConfig{port: *port, rounds: *rounds, seconds: *seconds, conns: *conns}
		var err error
		if cfg.sizes, err = parseSizes(*sizes); err == nil {
			cfg.modes, err = parseModes(*modes)
		}
		if err == nil {
			err = runSweep(cfg)
		}
		exitOn(err)
		return
	}
	n, err := parseSize(*size)
	if err == nil {
		var m mode
		if m, err = lookupMode(*modeName); err == nil {
			err = serve(*port, m, n)
		}
	}
	exitOn(err)
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "sendlab:", err)
		os.Exit(1)
	}
}
