package admin_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gale/admin"
	"gale/config"
)

func newLocalListener() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// A stale socket file is replaced, a live one refused, a file that is not
// a socket refused; the socket is 0600 whatever the umask, and the umask
// is given back.
func TestListenUnix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "admin.sock")
	a := config.Admin{Network: "unix", Address: path}

	old := syscall.Umask(0)
	defer syscall.Umask(old)
	ln, err := admin.Listen(a)
	if err != nil {
		t.Fatal(err)
	}
	if mask := syscall.Umask(0); mask != 0 {
		t.Fatalf("umask %o after Listen, want 0 back", mask)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v (%v), want 0600", fi.Mode(), err)
	}
	if _, err := admin.Listen(a); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Listen on a live socket: %v", err)
	}
	ln.Close()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("socket left after Close: %v", err)
	}

	// A socket file nothing listens on (a gale killed with SIGKILL).
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	ln, err = admin.Listen(a)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	ln.Close()

	// socket_mode "0660": the group may connect too.
	ln, err = admin.Listen(config.Admin{Network: "unix", Address: path, Mode: 0o660})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Perm() != 0o660 {
		t.Fatalf("socket mode %v (%v), want 0660", fi.Mode(), err)
	}
	ln.Close()

	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Listen(a); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a regular file: %v", err)
	}
}
