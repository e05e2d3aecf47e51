package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"gale/codec"
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
	req, remote, err := routeRequest(ra)
	if err != nil {
		fmt.Fprintf(stderr, "gale route: %v\n", err)
		return 2
	}
	cfg, err := config.Load(ra.file)
	if err != nil {
		fmt.Fprintln(stdout, err)
		return 1
	}
	standIn := func(*handlers.Route) (handlers.Handler, error) {
		return handlers.HandlerFunc(func(c *handlers.Ctx) { c.Error(502) }), nil
	}
	rt, err := handlers.Build(cfg, handlers.WithProxy(standIn), handlers.WithFastCGI(standIn))
	if err != nil {
		fmt.Fprintln(stdout, err)
		return 1
	}
	defer rt.Close()
	for _, line := range cfg.ListenerClientAuth() {
		fmt.Fprintln(stdout, line)
	}
	c := &handlers.Ctx{Req: req, Remote: remote, Scratch: make([]byte, 0, 4096)}
	for _, line := range rt.Explain(c) {
		fmt.Fprintln(stdout, line)
	}
	return 0
}

// routeRequest builds the request as the server's parser would have it.
func routeRequest(ra routeArgs) (*codec.Request, netip.AddrPort, error) {
	from := ra.from
	if from == "" {
		from = "127.0.0.1"
	}
	remote, err := netip.ParseAddrPort(from)
	if err != nil {
		a, err2 := netip.ParseAddr(from)
		if err2 != nil {
			return nil, remote, fmt.Errorf("--from %q: expected an address such as 127.0.0.2 or [::1]:5000", from)
		}
		remote = netip.AddrPortFrom(a, 0)
	}
	target, host := ra.target, ""
	if rest, ok := strings.CutPrefix(target, "http://"); ok {
		host, target, _ = strings.Cut(rest, "/")
		target = "/" + target
	} else if rest, ok := strings.CutPrefix(target, "https://"); ok {
		host, target, _ = strings.Cut(rest, "/")
		target = "/" + target
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", ra.method, target)
	hasHost := false
	for _, h := range ra.headers {
		name, _, ok := strings.Cut(h, ":")
		if !ok {
			return nil, remote, fmt.Errorf("-H %q: expected 'Name: value'", h)
		}
		hasHost = hasHost || strings.EqualFold(strings.TrimSpace(name), "host")
		b.WriteString(h + "\r\n")
	}
	if !hasHost {
		if host == "" {
			host = "localhost"
		}
		b.WriteString("Host: " + host + "\r\n")
	}
	b.WriteString("\r\n")
	req := &codec.Request{}
	if _, err := codec.Parse([]byte(b.String()), req, nil); err != nil {
		return nil, remote, fmt.Errorf("the server would refuse this request: %v", err)
	}
	return req, remote, nil
}
