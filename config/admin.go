package config

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// minTokenLen is the shortest admin token accepted: a bearer token
// is a password a program sends, so a short one is a mistake.
const minTokenLen = 16

// maxTokenFileBytes bounds what is read of the token file.
const maxTokenFileBytes = 4096

// maxSocketPath is the longest unix socket path the kernel takes
// (sun_path holds 108 bytes with the terminating NUL).
const maxSocketPath = 107

// admin decodes the admin API section: where it listens and, on TCP, the
// token every request must carry (on a unix socket too when one is
// given). A TCP address without a token is refused: anyone who can
// connect could replace the config.
func (d *decoder) admin(n *yaml.Node, path string, a *Admin) {
	s := d.section(n, path, adminKeys.names()...)
	if s == nil {
		return
	}
	lp := join(path, "listen")
	v := s.get("listen")
	if v == nil {
		if s.missing("listen") {
			d.errorf(s.node, lp, `missing required key; e.g. listen: unix:/run/gale/admin.sock`)
		}
		return
	}
	addr, ok := d.str(v, lp)
	if !ok {
		return
	}
	a.Listen, a.Pos = addr, Pos{deref(v).Line, deref(v).Column}
	if sock, isUnix := strings.CutPrefix(addr, "unix:"); isUnix {
		d.adminSocket(deref(v), lp, sock, a)
	} else if msg := checkAdminTCP(addr); msg != "" {
		d.errorf(deref(v), lp, "%s", msg)
	} else {
		a.Network, a.Address = "tcp", addr
	}
	mode := "0600"
	if mv := deref(s.get("socket_mode")); mv != nil && mv.Kind == yaml.ScalarNode && mv.ShortTag() == "!!int" {
		d.errorf(mv, join(path, "socket_mode"), `expected "0600" or "0660" in quotes, got %s: YAML reads an unquoted 0660 as a number`, mv.Value)
	} else {
		d.setEnum(s, "socket_mode", &mode, adminKeys.options("socket_mode")...)
	}
	m, _ := strconv.ParseUint(mode, 8, 32) // an option of the table
	a.Mode = uint32(m)
	if tv := s.get("token_file"); tv != nil {
		d.adminToken(tv, join(path, "token_file"), a)
	}
	if a.Network == "tcp" && s.get("token_file") == nil {
		d.errorf(deref(v), lp, "%s is a TCP address: give token_file (a bearer token every request must carry), or listen on a unix socket such as unix:/run/gale/admin.sock", quote(addr))
	}
}

// adminSocket checks a unix socket path: absolute once resolved, short
// enough for the kernel, in a directory that exists.
func (d *decoder) adminSocket(n *yaml.Node, path, sock string, a *Admin) {
	if sock == "" {
		d.errorf(n, path, `expected "unix:/path/to/admin.sock", got %s`, quote(a.Listen))
		return
	}
	abs := d.resolve(sock)
	switch fi, err := os.Stat(filepath.Dir(abs)); {
	case len(abs) > maxSocketPath:
		d.errorf(n, path, "the socket path %s is %d bytes long; the kernel takes at most %d", quote(abs), len(abs), maxSocketPath)
	case err != nil || !fi.IsDir():
		d.errorf(n, path, "the directory of %s does not exist (%s)", quote(sock), quote(filepath.Dir(abs)))
	default:
		a.Network, a.Address = "unix", abs
	}
}

// checkAdminTCP checks a TCP admin address: "host:port" with an IP
// address or localhost (a name could resolve anywhere).
func checkAdminTCP(addr string) string {
	if msg := checkAddress(addr); msg != "" {
		return strings.Replace(msg, "expected", `expected "unix:/path/to/admin.sock" or`, 1)
	}
	host, _, _ := net.SplitHostPort(addr)
	if host == "localhost" {
		return ""
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return fmt.Sprintf("expected an IP address such as 127.0.0.1:2019, got %s: a host name could resolve to a public address", quote(addr))
	}
	return ""
}

// adminToken reads the token file.
func (d *decoder) adminToken(v *yaml.Node, path string, a *Admin) {
	f, ok := d.str(v, path)
	if !ok {
		return
	}
	abs := d.resolve(f)
	tok, msg := readToken(abs, f)
	if msg != "" {
		d.errorf(deref(v), path, "%s", msg)
		return
	}
	a.TokenFile, a.Token = abs, tok
}

// readToken returns the trimmed content of the token file at abs (given
// as written), or why it cannot serve as a token.
func readToken(abs, given string) (string, string) {
	fh, err := os.Open(abs)
	if err != nil {
		return "", fmt.Sprintf("cannot read %s%s: %v", quote(given), resolvedTo(abs, given), unwrapPathError(err))
	}
	defer fh.Close()
	buf := make([]byte, maxTokenFileBytes+1)
	n, _ := fh.Read(buf)
	if n > maxTokenFileBytes {
		return "", fmt.Sprintf("%s is larger than %d bytes; it should hold one token", quote(given), maxTokenFileBytes)
	}
	tok := strings.TrimSpace(string(buf[:n]))
	switch {
	case len(tok) < minTokenLen:
		return "", fmt.Sprintf("the token in %s is %d characters long; use at least %d (e.g. openssl rand -hex 32 > %s)", quote(given), len(tok), minTokenLen, given)
	case strings.ContainsAny(tok, " \t\r\n"):
		return "", fmt.Sprintf("%s holds white space inside its token; it should hold one token on one line", quote(given))
	}
	return tok, ""
}

// unwrapPathError drops the path an *os.PathError repeats.
func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// checkAdminAddress refuses an admin TCP address that is also a listen
// or metrics address.
func (d *decoder) checkAdminAddress(c *Config) {
	a := c.Admin
	if a.Network != "tcp" || strings.HasSuffix(a.Address, ":0") {
		return
	}
	n := &yaml.Node{Line: a.Pos.Line, Column: a.Pos.Col}
	for _, l := range c.Listen {
		if l.Address == a.Address {
			d.errorf(n, "admin.listen", "address %s is also listed under listen (line %d, column %d): give the admin API an address of its own, e.g. 127.0.0.1:2019",
				quote(l.Address), l.Pos.Line, l.Pos.Col)
		}
	}
	if c.Metrics.Listen == a.Address {
		d.errorf(n, "admin.listen", "address %s is metrics.listen too: give the admin API an address of its own", quote(a.Address))
	}
}

// pidFile decodes pid_file: a file path whose directory exists.
func (d *decoder) pidFile(v *yaml.Node, path string, c *Config) {
	f, ok := d.str(v, path)
	if !ok || f == "" {
		return
	}
	abs := d.resolve(f)
	if msg := checkLogPath(abs, f); msg != "" {
		d.errorf(deref(v), path, "%s", msg)
		return
	}
	c.PIDFile = abs
}
