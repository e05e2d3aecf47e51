package admin

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sync"
	"syscall"

	"gale/config"
)

// umaskMu serialises the umask changes of Listen (the umask is the
// process's).
var umaskMu sync.Mutex

// Listen binds the admin listener of a: a TCP address, or a unix socket
// created with mode a.Mode (0600 unless socket_mode says otherwise; never
// wider, not even for a moment: it is bound under a umask that allows no
// more). A socket file left by a gale that
// is gone is replaced; one that still answers is an error.
func Listen(a config.Admin) (net.Listener, error) {
	switch a.Network {
	case "tcp":
		ln, err := net.Listen("tcp", a.Address)
		if err != nil {
			return nil, fmt.Errorf("admin.listen: %w", err)
		}
		return ln, nil
	case "unix":
		mode := os.FileMode(a.Mode)
		if mode == 0 {
			mode = 0o600
		}
		return listenUnix(a.Address, mode)
	}
	return nil, errors.New("admin: no admin.listen in the config")
}

func listenUnix(path string, mode os.FileMode) (net.Listener, error) {
	if err := removeStale(path); err != nil {
		return nil, err
	}
	umaskMu.Lock()
	old := syscall.Umask(int(0o777 &^ mode))
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	umaskMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("admin.listen: %w", err)
	}
	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("admin.listen: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	return ln, nil
}

// removeStale removes a socket file at path that nothing listens on.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("admin.listen: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("admin.listen: %s exists and is not a socket", path)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return fmt.Errorf("admin.listen: %s is in use (another gale running?)", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("admin.listen: removing the stale socket: %w", err)
	}
	return nil
}
