// Package sdnotify tells the service manager about the service's state,
// as sd_notify(3) does: one datagram of newline-separated VAR=VALUE
// assignments sent to the unix datagram socket named by $NOTIFY_SOCKET.
// systemd sets that variable for services of Type=notify and
// Type=notify-reload; without it every call does nothing.
package sdnotify

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// EnvSocket is the environment variable naming the socket.
const EnvSocket = "NOTIFY_SOCKET"

// The states gale reports (sd_notify(3), "Well-known assignments").
const (
	ready    = "READY=1"
	stopping = "STOPPING=1"
)

// Ready reports that start-up is complete (the listeners are open), or that
// a reload announced with Reloading has finished.
func Ready() error { return Send(ready) }

// Reloading reports that the service is reloading its configuration. The
// message carries MONOTONIC_USEC, the CLOCK_MONOTONIC time in
// microseconds, which Type=notify-reload requires to tell this reload from
// an earlier one. Ready must follow when the reload is over.
func Reloading() error {
	return Send("RELOADING=1\nMONOTONIC_USEC=" + strconv.FormatInt(monotonicUsec(), 10))
}

// Stopping reports that the service is beginning its shutdown.
func Stopping() error { return Send(stopping) }

// Send sends state, one or more newline-separated assignments, to
// $NOTIFY_SOCKET. It returns nil without sending when the variable is
// unset or empty. The name is a socket path ("/run/systemd/notify") or an
// abstract socket name written with a leading "@".
func Send(state string) error {
	name := os.Getenv(EnvSocket)
	if name == "" {
		return nil
	}
	if !strings.HasPrefix(name, "/") && !strings.HasPrefix(name, "@") {
		return errors.New("sdnotify: " + EnvSocket + " is neither a socket path nor an abstract socket name: " + strconv.Quote(name))
	}
	// The Go runtime turns a leading "@" into the abstract namespace's
	// leading NUL byte (unix(7)).
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(state))
	return err
}

// monotonicUsec returns CLOCK_MONOTONIC in microseconds, the clock
// MONOTONIC_USEC is read against.
func monotonicUsec() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Sec*1_000_000 + ts.Nsec/1_000
}
