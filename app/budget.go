package app

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/panjf2000/gnet/v2"

	"gale/codec"
	"gale/config"
	"gale/fds"
)

// The descriptor budget (package fds). gnet v2.9.7 ends the engine, and
// so gale, the first time accept(2) fails: acceptor_unix.go turns any
// error but EAGAIN, EINTR, ECONNRESET and ECONNABORTED (EMFILE and
// ENFILE included) into ErrAcceptSocket, netpoll.Polling returns it, and
// the loop's exit calls engine.shutdown. gale cannot catch that error, so
// it keeps accept from meeting it: every descriptor it holds for longer
// than one callback is acquired from the budget first, and the budget is
// the process limit minus a headroom for what an accept can take before
// OnOpen sees it and for what is not counted one by one.

const (
	// fixedHeadroom covers the standard streams, the Go runtime's poller
	// (its epoll descriptor and wake-up pipe), the access log (and the
	// new file while SIGUSR1 reopens it), and the configuration and
	// certificate files read during a reload.
	fixedHeadroom = 16
	// loopHeadroom covers, per event loop, its epoll descriptor and
	// eventfd, and what one callback opens and closes (or counts) before
	// it returns: a file a handler opens, and the second duplicate that
	// net.FileConn makes while it wraps one.
	loopHeadroom = 6
	// workerHeadroom covers, per file cache worker (at most 4), the file
	// it loads or compresses and a sidecar.
	workerHeadroom = 2 * 4
	// acceptBurst is how many connections one loop accepts from one
	// listener before OnOpen runs, with SO_REUSEPORT: eventloop.accept
	// takes one per readiness event and opens it at once.
	acceptBurst = 1
)

// loopCount is how many event loops the engine runs.
func loopCount(sc config.Server) int {
	if sc.EventLoops > 0 {
		return sc.EventLoops
	}
	return runtime.NumCPU()
}

// headroom is how many descriptors of the process limit are kept out of
// the budget, and a warning when the limit cannot cover them all.
//
// With reuse_port each loop holds its own copy of every listener and
// accepts one connection per readiness event, so each loop needs a
// listener and acceptBurst per address. Without it one reactor accepts
// for all loops and eventloop.accept0 keeps accepting until the backlog
// is empty before any OnOpen runs (the connections are queued to the
// loops), so a burst can take a whole backlog per listener
// (net.core.somaxconn, which gnet passes to listen(2)). That cannot be
// bounded from outside gnet; when the limit is too low to reserve it, the
// reserve is left out and the warning says so.
func headroom(fdLimit int64, sc config.Server, listeners int) (int64, string) {
	loops := int64(loopCount(sc))
	ln := int64(listeners)
	h := int64(fixedHeadroom + workerHeadroom)
	h += loops * loopHeadroom
	if sc.ReusePort {
		return h + loops*ln*(1+acceptBurst), ""
	}
	h += 2 + ln // the accepting reactor's poller, and the listeners
	burst := ln * somaxconn()
	if h+burst >= fdLimit/2 {
		return h, fmt.Sprintf("with reuse_port false, gnet accepts up to the listen backlog (%d per listener) before gale can refuse a connection; the descriptor limit %d cannot reserve that, so a burst of connections may still end the server: raise the limit or set reuse_port: true", burst/max(ln, 1), fdLimit)
	}
	return h + burst, ""
}

// somaxconn reads the kernel's cap on listen backlogs, as gnet does
// (pkg/socket/sock_linux.go), with the same fallback and uint16 cap.
func somaxconn() int64 {
	b, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		return 4096
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 {
		return 4096
	}
	return min(n, 1<<16-1)
}

// newBudget sizes the budget for cfg under the process limit fdLimit.
func newBudget(fdLimit int64, cfg *config.Config) (*fds.Budget, string, error) {
	h, warn := headroom(fdLimit, cfg.Server, len(cfg.Listen))
	limit := fdLimit - h
	if limit < 4 {
		return nil, "", fmt.Errorf("server: the descriptor limit %d leaves no budget after a headroom of %d; raise it (ulimit -n) or use fewer event loops", fdLimit, h)
	}
	return fds.New(limit, int64(cfg.Server.Limits.Connections)), warn, nil
}

// admit takes a client connection's place and descriptor in the budget,
// and reports why it could not ("" when both were available).
func (s *Server) admit() string {
	if !s.sh.Budget.Join() {
		return "limits.connections reached"
	}
	if !s.sh.Budget.Acquire(1) {
		s.sh.Budget.Leave()
		return "descriptor limit reached"
	}
	return ""
}

// refuse closes a client connection the server will not serve (from
// OnOpen): while stopping at once, else after a fixed 503 (RFC 9110
// section 15.6.4) on plain-text listeners (a TLS client would read it as
// garbage). gnet writes the bytes before it closes, so the loop's buffer
// can be reused.
func (s *Server) refuse(c gnet.Conn, l *loop, reason string) ([]byte, gnet.Action) {
	l.Stats.Rejected.Add(1)
	if s.sh.Draining.Load() {
		return nil, gnet.Close
	}
	s.noteRefusal(reason)
	if s.anyTLS {
		if li := s.listenerOf(c); li != nil && li.tls != nil {
			return nil, gnet.Close
		}
	}
	l.refused = codec.AppendErrorResponse(l.refused[:0], 503, false, true, s.sh.Set.Load().ServerHeader)
	return l.refused, gnet.Close
}

// leave gives back what a client connection took in admit, when gnet
// closed it: its descriptor, and its place unless a tunnel took the
// place over (the tunnel leaves when it ends).
func (s *Server) leave(cs *conn) {
	s.sh.Budget.Release(1)
	if !cs.Detached {
		s.sh.Budget.Leave()
	}
}
