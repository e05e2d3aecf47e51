package main

import (
	"io"
	"net"
	"net/http"
	"sync/atomic"
)

// counter is the upstream: it answers every request "up" and counts the
// requests and connections that reached it.
type counter struct {
	reqs, conns atomic.Int64
}

// startUpstream serves the counting upstream (HTTP/1.1) on addr.
func startUpstream(addr string) (*counter, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &counter{}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			c.reqs.Add(1)
			_, _ = io.WriteString(w, "up\n")
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				c.conns.Add(1)
			}
		},
	}
	go func() { _ = srv.Serve(ln) }()
	return c, nil
}
