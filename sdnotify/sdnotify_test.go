package sdnotify

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// listen opens a unixgram socket at name (a path, or "@name" for the
// abstract namespace) and points $NOTIFY_SOCKET at it.
func listen(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	t.Setenv(EnvSocket, name)
	return c
}

// receive returns the next datagram, failing after a deadline that is only
// a failsafe.
func receive(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no datagram: %v", err)
	}
	return string(buf[:n])
}

func TestStatesOverPathAndAbstractSockets(t *testing.T) {
	for _, name := range []string{
		filepath.Join(t.TempDir(), "notify"),
		"@gale-sdnotify-test-" + strconv.Itoa(unix.Getpid()),
	} {
		t.Run(name, func(t *testing.T) {
			c := listen(t, name)
			if err := Ready(); err != nil {
				t.Fatal(err)
			}
			if got := receive(t, c); got != "READY=1" {
				t.Fatalf("got %q, want READY=1", got)
			}
			var before unix.Timespec
			_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &before)
			if err := Reloading(); err != nil {
				t.Fatal(err)
			}
			got := receive(t, c)
			first, usec, ok := strings.Cut(got, "\nMONOTONIC_USEC=")
			if !ok || first != "RELOADING=1" {
				t.Fatalf("got %q, want RELOADING=1 and MONOTONIC_USEC", got)
			}
			n, err := strconv.ParseInt(usec, 10, 64)
			var after unix.Timespec
			_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &after)
			lo, hi := before.Sec*1e6+before.Nsec/1e3, after.Sec*1e6+after.Nsec/1e3
			if err != nil || n < lo || n > hi {
				t.Fatalf("MONOTONIC_USEC=%s, want CLOCK_MONOTONIC µs within %d..%d", usec, lo, hi)
			}
			if err := Stopping(); err != nil {
				t.Fatal(err)
			}
			if got := receive(t, c); got != "STOPPING=1" {
				t.Fatalf("got %q, want STOPPING=1", got)
			}
		})
	}
}

func TestUnsetIsANoOp(t *testing.T) {
	t.Setenv(EnvSocket, "")
	if err := Ready(); err != nil {
		t.Fatalf("Ready without %s: %v", EnvSocket, err)
	}
}

func TestBadSocketNames(t *testing.T) {
	for _, name := range []string{"relative/notify", "vsock:2:1234", filepath.Join(t.TempDir(), "absent")} {
		t.Setenv(EnvSocket, name)
		if err := Ready(); err == nil {
			t.Errorf("%s=%q: no error", EnvSocket, name)
		}
	}
}
