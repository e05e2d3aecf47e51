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

// socketMode is the admin socket's permission bits: its owner only.
const socketMode = 0o600

// umaskMu serialises the umask changes of Listen (the umask is the
// process's).
var umaskMu sync.Mutex

// Listen binds the admin listener of a: a TCP address, or a unix socket
// created with mode 0600 (never wider, not even for a moment: it is bound
// under a umask that allows no more). A socket file left by a gale that
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
		return listenUnix(a.Address)
	}
	return nil, errors.New("admin: no admin.listen in the config")
}

func listenUnix(path string) (net.Listener, error) {
	if err := removeStale(path); err != nil {
		return nil, err
	}
	umaskMu.Lock()
	old := syscall.Umask(0o777 &^ socketMode)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	umaskMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("admin.listen: %w", err)
	}
	if err := os.Chmod(path, socketMode); err != nil {
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
