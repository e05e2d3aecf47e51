package main

import (
	"fmt"
	"path/filepath"
)

// serverBinary is the program a server's name stands for.
func serverBinary(name string) string {
	if name == "varnish" {
		return "varnishd"
	}
	return name
}

// prepareVarnish starts varnishd as its users run it: in the foreground
// (-F), the upstream as its backend (-b) with the built-in VCL, bodies in
// memory (-s malloc,256m), and its working directory (-n) under the run
// directory, so it never touches a system instance. Varnish is a cache
// in front of a backend only, without TLS: it takes the HTTP/1.1 pcache
// workloads, and every other one is not supported.
func (s *serverSpec) prepareVarnish(e serverEnv) (launch, error) {
	if !e.Cache || e.Proto != "" {
		return launch{}, fmt.Errorf("%w: the bench runs Varnish only as the HTTP/1.1 cache in front of the upstream (pcache-*)", errUnsupported)
	}
	argv := []string{s.Bin, "-F", "-a", fmt.Sprintf("127.0.0.1:%d", e.Port), "-b", e.Upstream,
		"-s", "malloc,256m", "-n", filepath.Join(e.Dir, "varnish")}
	return launch{Argv: argv}, nil
}
