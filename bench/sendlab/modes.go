package main

import (
	"fmt"
	"strings"
)

// mode is one way of sending a response. send continues c's response from
// c.sent and returns done once all of it is in the socket; on EAGAIN it
// returns done=false and no error, and is called again on EPOLLOUT.
type mode struct {
	name string
	send func(s *server, c *conn) (done bool, err error)
}

var modes = []mode{
	{"writev", sendWritev},
	{"more-sendfile", sendMoreSendfile},
	{"cork-sendfile", sendCorkSendfile},
	{"more-splice", sendMoreSplice},
	{"two-writes", sendTwoWrites},
}

func modeNames() []string {
	var out []string
	for _, m := range modes {
		out = append(out, m.name)
	}
	return out
}

func lookupMode(name string) (mode, error) {
	for _, m := range modes {
		if m.name == name {
			return m, nil
		}
	}
	return mode{}, fmt.Errorf("unknown mode %q (have %s)", name, strings.Join(modeNames(), ", "))
}

func parseModes(s string) ([]mode, error) {
	var out []mode
	for _, f := range strings.Split(s, ",") {
		m, err := lookupMode(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
