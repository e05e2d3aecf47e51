// Command h2reset measures a server under HTTP/2 Rapid Reset spread over
// many h2c connections (CVE-2023-44487's practical form): connections
// from one loopback address each send pairs of HEADERS and RST_STREAM for
// a proxied path, and are replaced as they end, at most -parallel open at
// once, for -seconds and at most -conns in all. Meanwhile a normal h2c
// client from another loopback address asks for the same route one
// request at a time. The upstream is this program's own counting server,
// so that gale and nginx are measured against the same one.
//
// It reports the upstream requests and connections, the normal client's
// successes and latency, and (with -pid) the peak of the server's open
// descriptors, counted in /proc/PID/fd.
//
//	go run ./bench/h2reset -upstream 127.0.0.1:18590          # the upstream alone, until interrupted
//	go run ./bench/h2reset -target 127.0.0.1:18591 -upstream 127.0.0.1:18590 -pid $(pidof gale) -seconds 8
//	go run ./bench/h2reset -target 127.0.0.1:18592 -pid $(pgrep -d, nginx) -split   # nginx, RST_STREAM in a second write
//
// Only 127.x addresses are accepted.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"
)

func main() {
	var (
		target   = flag.String("target", "", "the server under test (h2c with prior knowledge), host:port on 127.x; empty: run the upstream only")
		upstream = flag.String("upstream", "127.0.0.1:18590", "where the counting upstream listens (127.x)")
		path     = flag.String("path", "/up/flood", "the proxied path the flood asks for")
		normal   = flag.String("normal", "/up/normal", "the path the normal client asks for")
		from     = flag.String("from", "127.0.0.2", "the flood's source address (127.x)")
		parallel = flag.Int("parallel", 50, "flood connections open at once")
		conns    = flag.Int("conns", 20000, "flood connections in all, at most")
		pairs    = flag.Int("pairs", 90, "HEADERS+RST_STREAM pairs per flood connection")
		split    = flag.Bool("split", false, "send each connection's RST_STREAM frames in a second write, after the HEADERS")
		seconds  = flag.Float64("seconds", 8, "how long the flood lasts")
		pids     = flag.String("pid", "", "the server's processes (comma-separated: nginx's workers and master), whose descriptors are counted together; empty = not counted")
	)
	flag.Parse()
	for _, a := range []string{*target, *upstream, *from + ":0"} {
		if a != "" && !loopback(a) {
			fmt.Fprintf(os.Stderr, "h2reset: %s is not a 127.x address\n", a)
			os.Exit(2)
		}
	}
	up, err := startUpstream(*upstream)
	if err != nil {
		fmt.Fprintln(os.Stderr, "h2reset:", err)
		os.Exit(1)
	}
	if *target == "" {
		fmt.Printf("upstream on %s; interrupt to stop\n", *upstream)
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		<-sig
		return
	}
	r := run(runConfig{
		target: *target, path: *path, normal: *normal, from: net.ParseIP(*from),
		parallel: *parallel, conns: *conns, pairs: *pairs, split: *split,
		dur: time.Duration(*seconds * float64(time.Second)), pids: parsePids(*pids),
	}, up)
	r.print(os.Stdout)
}

// parsePids reads a comma-separated list of process ids.
func parsePids(s string) []int {
	var ps []int
	for _, f := range strings.Split(s, ",") {
		if p, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && p > 0 {
			ps = append(ps, p)
		}
	}
	return ps
}

// loopback reports whether host:port names a 127.x address.
func loopback(hostport string) bool {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.To4() != nil && ip.To4()[0] == 127
}
