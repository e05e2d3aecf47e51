package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"gale/config"
	"gale/handlers"
)

const routeUsage = "usage: gale route -c FILE METHOD URL [-H 'Name: value']... [--from ADDR]\n" +
	"  URL is a path (/a?b=1) or an absolute URL (http://example.com/a); ADDR is the client address (default 127.0.0.1)\n"

// routeArgs is what `gale route` was asked.
type routeArgs struct {
	file, method, target, from string
	headers                    []string
}

// parseRouteArgs reads the flags and the two operands in any order (flag
// stops at the first operand, and a request is naturally written
// "GET /path -H ...").
func parseRouteArgs(args []string) (routeArgs, error) {
	var ra routeArgs
	var ops []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, inline := strings.Cut(a, "=")
		if isHelp(a) {
			return ra, flag.ErrHelp
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			ops = append(ops, a)
			continue
		}
		if !inline {
			if i+1 >= len(args) {
				return ra, fmt.Errorf("flag %s needs a value", a)
			}
			i++
			val = args[i]
		}
		switch strings.TrimLeft(name, "-") {
		case "c":
			ra.file = val
		case "H":
			ra.headers = append(ra.headers, val)
		case "from":
			ra.from = val
		default:
			return ra, fmt.Errorf("unknown flag %s", name)
		}
	}
	if ra.file == "" || len(ops) != 2 {
		return ra, errors.New("need -c FILE, a METHOD and a URL")
	}
	ra.method, ra.target = ops[0], ops[1]
	return ra, nil
}

// cmdRoute explains which route a request would take, without starting a
// server: the config is loaded and its routes built as serve would (the
// proxy and FastCGI handlers are stand-ins that forward nothing).
func cmdRoute(args []string, stdout, stderr io.Writer) int {
	ra, err := parseRouteArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, routeUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "gale route: %v\n%s", err, routeUsage)
		return 2
	}
	req, remote, err := handlers.ExplainRequest(handlers.ExplainQuery{Method: ra.method, Target: ra.target, Headers: ra.headers, From: ra.from})
	if err != nil {
		fmt.Fprintf(stderr, "gale route: %v\n", err)
		return 2
	}
	cfg, err := config.Load(ra.file)
	if err != nil {
		fmt.Fprintln(stdout, err)
		return 1
	}
	lines, err := handlers.ExplainConfig(cfg, req, remote)
	if err != nil {
		fmt.Fprintln(stdout, err)
		return 1
	}
	for _, line := range cfg.ListenerClientAuth() {
		fmt.Fprintln(stdout, line)
	}
	for _, line := range lines {
		fmt.Fprintln(stdout, line)
	}
	return 0
}
